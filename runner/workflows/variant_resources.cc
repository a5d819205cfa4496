#include "runner/workflows/variant_resources.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "common/log.h"
#include "runner/config/runner_config.h"
#include "runner/s3/client_credentials.h"
#include "runner/variant/annotation_engine.h"

namespace dnaserve::runner {
namespace {

std::string DefaultWorkDir() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

Status Setting(const std::string& setting, const Status& status) {
  return Internal(setting + ": " + status.message());
}

}  // namespace

VariantSettings VariantSettingsFrom(const runner::RunnerConfig& config) {
  VariantSettings settings;
  if (!config.s3_endpoint.empty()) {
    s3::S3Config store;
    store.endpoint = config.s3_endpoint;
    store.region = config.s3_region;
    store.access_key_id = config.s3_access_key_id;
    store.secret_access_key = config.s3_secret_access_key;
    store.session_token = config.s3_session_token;
    store.path_style = config.s3_path_style;
    settings.store = std::move(store);
  }
  settings.client_credentials_file = config.s3_client_credentials_file;
  settings.grch37_catalogue = config.grch37_catalogue;
  settings.grch37_fasta = config.grch37_fasta;
  settings.work_dir = config.variant_work_dir;
  settings.score_concurrency = config.variant_score_concurrency;
  settings.vcf_limits = config.vcf_limits;
  return settings;
}

StatusOr<std::unique_ptr<VariantResources>> VariantResources::Load(
    const VariantSettings& settings) {
  std::unique_ptr<s3::S3Client> store;
  if (settings.store) {
    auto created = s3::S3Client::Create(*settings.store);
    if (!created.ok()) return Setting("DNASERVE_S3_*", created.status());
    store = std::move(created).value();
  }
  std::map<std::string, std::unique_ptr<s3::S3Client>> client_stores;
  if (!settings.client_credentials_file.empty()) {
    if (!settings.store) {
      return Internal(
          "DNASERVE_S3_CLIENT_CREDENTIALS_FILE is set but DNASERVE_S3_ENDPOINT is not: the "
          "per-client credentials are for the configured object store");
    }
    bool too_open = false;
    auto credentials = s3::LoadS3ClientCredentials(settings.client_credentials_file, &too_open);
    if (!credentials.ok()) {
      return Setting("DNASERVE_S3_CLIENT_CREDENTIALS_FILE", credentials.status());
    }
    if (too_open) {
      log::Warn("s3_client_credentials_file_readable",
                {{"path", settings.client_credentials_file},
                 {"advice", "it holds secrets: chmod 600 it (readable by the runner's user only)"}});
    }
    for (const auto& [client_id, c] : *credentials) {
      s3::S3Config config = *settings.store;  // same endpoint, region, addressing and timeouts
      config.access_key_id = c.access_key_id;
      config.secret_access_key = c.secret_access_key;
      config.session_token = c.session_token;
      auto created = s3::S3Client::Create(std::move(config));
      if (!created.ok()) {
        return Setting("DNASERVE_S3_CLIENT_CREDENTIALS_FILE (client \"" + client_id + "\")",
                       created.status());
      }
      client_stores.emplace(client_id, std::move(created).value());
    }
    log::Info("s3_client_credentials_loaded",
              {{"clients", static_cast<int64_t>(client_stores.size())}});
  }
  std::optional<GenomeAssets> grch37;
  if (!settings.grch37_catalogue.empty()) {
    auto catalogue = variant::TssCatalogue::Load(settings.grch37_catalogue);
    if (!catalogue.ok()) return Setting("DNASERVE_GRCH37_CATALOGUE", catalogue.status());
    if (catalogue->info().build != core::kGrch37) {
      return Internal("DNASERVE_GRCH37_CATALOGUE: the catalogue says ##build=" +
                      catalogue->info().build + ", not " + std::string(core::kGrch37));
    }
    auto reference = variant::ReferenceGenome::Open(settings.grch37_fasta);
    if (!reference.ok()) return Setting("DNASERVE_GRCH37_FASTA", reference.status());
    Status covered = variant::CheckReferenceCoversCatalogue(*catalogue, **reference);
    if (!covered.ok()) return Setting("DNASERVE_GRCH37_CATALOGUE/FASTA", covered);
    grch37 = GenomeAssets{std::move(catalogue).value(), std::move(reference).value()};
  }
  std::string work_dir = settings.work_dir.empty() ? DefaultWorkDir() : settings.work_dir;
  if (access(work_dir.c_str(), W_OK | X_OK) != 0) {
    return Internal("DNASERVE_VARIANT_WORK_DIR: " + work_dir + " is not a writable directory");
  }
  auto resources = std::make_unique<VariantResources>(
      std::move(store), std::move(grch37), std::move(work_dir), settings.score_concurrency,
      settings.max_object_bytes, settings.vcf_limits);
  for (auto& [client_id, client_store] : client_stores) {
    resources->SetClientStore(client_id, std::move(client_store));
  }
  return resources;
}

const s3::S3Client* VariantResources::StoreFor(const std::string& client_id) const {
  auto own = client_stores_.find(client_id);
  return own != client_stores_.end() ? own->second.get() : store_.get();
}

void VariantResources::SetClientStore(const std::string& client_id,
                                      std::unique_ptr<s3::S3Client> store) {
  client_stores_[client_id] = std::move(store);
}

VariantResources::VariantResources(std::unique_ptr<s3::S3Client> store,
                                   std::optional<GenomeAssets> grch37, std::string work_dir,
                                   int score_concurrency, int64_t max_object_bytes,
                                   variant::VcfLimits vcf_limits)
    : store_(std::move(store)),
      grch37_(std::move(grch37)),
      work_dir_(std::move(work_dir)),
      score_concurrency_(score_concurrency < 1 ? 1 : score_concurrency),
      max_object_bytes_(max_object_bytes),
      vcf_limits_(vcf_limits) {}

const GenomeAssets* VariantResources::Genome(std::string_view genome_build) const {
  if (genome_build == core::kGrch37 && grch37_) return &*grch37_;
  return nullptr;
}

StatusOr<TempDir> TempDir::Create(const std::string& parent, std::string_view prefix) {
  std::string pattern = parent + "/" + std::string(prefix) + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {  // mode 0700
    const int err = errno;
    log::Error("variant_temp_dir_failed", {{"parent", parent}, {"error", std::strerror(err)}});
    return Unavailable("the service has no room for the job's temporary files; retry later")
        .set_retry_after_seconds(30);
  }
  return TempDir(std::string(buf.data()));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace dnaserve::runner
