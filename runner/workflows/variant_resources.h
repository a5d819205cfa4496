// What the genomic-variant-interpretation workflow shares between all its jobs, loaded once at
// start-up from the operator's settings: the object store client, the GRCh37 start-site
// catalogue and its reference FASTA, and where jobs keep their temporary files. All of it is
// safe to share: the catalogue is immutable, the reference locks around faidx and the S3 client
// opens a libcurl handle per request.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "runner/config/runner_config.h"
#include "runner/genome/reference_genome.h"
#include "runner/genome/tss_catalogue.h"
#include "runner/s3/s3_client.h"
#include "core/validation/variant_request.h"

namespace dnaserve::runner {


struct VariantSettings {
  std::optional<s3::S3Config> store;  // nullopt: no object store, the workflow answers 503
  // DNASERVE_S3_CLIENT_CREDENTIALS_FILE: clients whose requests are signed with credentials of
  // their own (runner/s3/client_credentials.h); empty = every client uses `store`'s.
  std::string client_credentials_file;
  std::string grch37_catalogue;   // empty: no GRCh37 catalogue (then no FASTA either)
  std::string grch37_fasta;
  std::string work_dir;  // empty: $TMPDIR or /tmp
  int score_concurrency = 4;
  // The contract's 2 GiB; not an operator setting (tests lower it to exercise the check).
  int64_t max_object_bytes = core::kMaxVcfObjectBytes;
  variant::VcfLimits vcf_limits;  // DNASERVE_VCF_*: per-job bounds on what the file holds
};

// The settings as the gateway's configuration gives them.
VariantSettings VariantSettingsFrom(const runner::RunnerConfig& config);

struct GenomeAssets {
  variant::TssCatalogue catalogue;
  std::unique_ptr<variant::ReferenceGenome> reference;
};

class VariantResources {
 public:
  // Creates the S3 client (no request is made), loads and checks the catalogue against the
  // FASTA (every contig present, every start site inside it) and checks the work directory.
  // Any failure is internal_error naming the setting: the gateway must not start half-set-up.
  static StatusOr<std::unique_ptr<VariantResources>> Load(const VariantSettings& settings);
  // For tests: resources put together directly (any part may be missing).
  VariantResources(std::unique_ptr<s3::S3Client> store, std::optional<GenomeAssets> grch37,
                   std::string work_dir, int score_concurrency,
                   int64_t max_object_bytes = core::kMaxVcfObjectBytes,
                   variant::VcfLimits vcf_limits = {});

  // Null when no object store is configured.
  const s3::S3Client* store() const { return store_.get(); }
  // The client that signs `client_id`'s requests: its own credentials when the operator gave it
  // some, else the service's (store()). Null when no object store is configured.
  const s3::S3Client* StoreFor(const std::string& client_id) const;
  // Gives `client_id` a client of its own (start-up, before the resources are shared).
  void SetClientStore(const std::string& client_id, std::unique_ptr<s3::S3Client> store);
  size_t client_store_count() const { return client_stores_.size(); }
  // The catalogue and reference of `genome_build`, or nullptr when none is loaded.
  const GenomeAssets* Genome(std::string_view genome_build) const;
  const std::string& work_dir() const { return work_dir_; }
  int score_concurrency() const { return score_concurrency_; }
  int64_t max_object_bytes() const { return max_object_bytes_; }
  const variant::VcfLimits& vcf_limits() const { return vcf_limits_; }

 private:
  std::unique_ptr<s3::S3Client> store_;
  std::map<std::string, std::unique_ptr<s3::S3Client>> client_stores_;
  std::optional<GenomeAssets> grch37_;
  std::string work_dir_;
  int score_concurrency_;
  int64_t max_object_bytes_;
  variant::VcfLimits vcf_limits_;
};

// A private directory (mode 0700) under `parent`, removed with everything in it when the object
// goes away: on success, failure and cancellation alike.
class TempDir {
 public:
  static StatusOr<TempDir> Create(const std::string& parent, std::string_view prefix);
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace dnaserve::runner
