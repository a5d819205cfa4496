// The published OpenSpliceAI checkpoints (../shared/data/published-models, GPL-3.0), converted by
// scripts/convert_openspliceai.py and served by a real dnaserve-worker process over gRPC:
//   * parity: the per-base donor and acceptor scores equal the eager PyTorch reference
//     (scripts/openspliceai_reference.py, run the published way) on 12,345 bp of chr20 with an N
//     run, three flanked windows;
//   * biology: donor and acceptor calls at 0.5 on two chr20 genes (one per strand) fall on the
//     refGene junctions.
// Everything derived from the checkpoints (the package) and the downloaded chr20 FASTA are cached
// under <build>/openspliceai, never in the source tree. Skipped, with the reason, when the shared
// data or LibTorch for Python is absent.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;
using dnaserve::testing::BinaryDir;
using dnaserve::testing::SourceDir;
using testing::ReadFile;
using testing::WriteFile;

constexpr char kModelId[] = "splice-openspliceai-mane";
constexpr char kPython[] = "/usr/bin/python3";

std::string CheckpointDir() {
  return testing::SharedDataDir() + "/published-models/openspliceai-mane-10000nt";
}
std::string RefGene() { return testing::SharedDataDir() + "/annotation/hg19_refGene.txt.gz"; }
// GPL-derived and downloaded files live here, in the build tree only.
std::string CacheDir() { return BinaryDir() + "/openspliceai"; }
std::string ModelsDir() { return CacheDir() + "/models"; }
std::string Chr20Path() {
  std::string why;
  return testing::Chr20Fasta(&why).value_or("");
}
using testing::WorkerBinary;

// The converted package, rebuilt when the converter or the reference architecture changes.
constexpr char kConvertScript[] = R"sh(
want=$(cat "$CONVERTER" "$REFERENCE" | sha256sum | cut -d' ' -f1)
if [ ! -f "$PACKAGE/manifest.json" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  rm -f "$STAMP"
  /usr/bin/python3 "$CONVERTER" --checkpoints "$CHECKPOINTS" --out "$PACKAGE"
  echo "$want" > "$STAMP"
fi
)sh";

bool EnsurePackage(std::string* why) {
  const std::string log = CacheDir() + "/convert.log";
  if (testing::RunLockedScript(CacheDir(), kConvertScript,
                               {{"CONVERTER", SourceDir() + "/scripts/convert_openspliceai.py"},
                                {"REFERENCE", SourceDir() + "/scripts/openspliceai_reference.py"},
                                {"CHECKPOINTS", CheckpointDir()},
                                {"PACKAGE", ModelsDir() + "/" + kModelId},
                                {"STAMP", CacheDir() + "/package.sha256"}},
                               log)) {
    return true;
  }
  *why = "scripts/convert_openspliceai.py failed: " + ReadFile(log);
  return false;
}

#define OPENSPLICEAI_OR_SKIP()                                                                    \
  if (!fs::exists(CheckpointDir())) {                                                             \
    CATCH_WARN("skipped: the published OpenSpliceAI checkpoints are absent ("                     \
               << CheckpointDir() << "); they live in ../shared/data beside the repository");     \
    return;                                                                                       \
  }                                                                                               \
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {                   \
    CATCH_WARN("skipped: LibTorch for Python is missing (/usr/bin/python3 cannot import torch)"); \
    return;                                                                                       \
  }                                                                                               \
  do {                                                                                            \
    std::string why;                                                                              \
    CATCH_INFO("build the dnaserve-worker target first: " << WorkerBinary());                     \
    CATCH_REQUIRE(fs::exists(WorkerBinary()));                                                    \
    bool package = EnsurePackage(&why);                                                           \
    CATCH_INFO(why);                                                                              \
    CATCH_REQUIRE(package);                                                                       \
    bool chr20 = testing::Chr20Fasta(&why).has_value();                                           \
    CATCH_INFO(why);                                                                              \
    CATCH_REQUIRE(chr20);                                                                         \
  } while (false)

// One dnaserve-worker serving the converted package, on a free loopback port.
class SpliceWorker {
 public:
  bool Start() { return worker_.Start(Task::kSplice, ModelsDir(), {"--threads", "2"}); }

  // Predict with threshold `threshold`, both site types; returns the result or fails the test.
  std::optional<v1::PredictResult> Predict(const std::string& sequence, double threshold,
                                           grpc::Status* status) {
    v1::PredictRequest request;
    request.set_model(kModelId);
    request.set_sequence(sequence);
    request.set_sequence_name("chr20");
    auto* splice = request.mutable_splice();
    splice->set_threshold(threshold);
    splice->add_site_types(v1::SPLICE_SITE_TYPE_DONOR);
    splice->add_site_types(v1::SPLICE_SITE_TYPE_ACCEPTOR);
    splice->set_max_sites(20000);
    testing::PredictCall call = worker_.Predict(request);
    *status = call.status;
    return call.result;
  }

  std::string Log() const { return worker_.Log(); }

 private:
  testing::WorkerProcess worker_;
};

struct ReferenceScores {
  std::vector<double> acceptor;
  std::vector<double> donor;
};

// scripts/openspliceai_reference.py on `sequence`: the published way, eager PyTorch.
std::optional<ReferenceScores> RunReference(const std::string& sequence, const std::string& dir,
                                            double* seconds) {
  WriteFile(dir + "/reference.seq", sequence);
  const std::string command =
      std::string(kPython) + " " +
      testing::ShellQuote(SourceDir() + "/scripts/openspliceai_reference.py") + " --checkpoints " +
      testing::ShellQuote(CheckpointDir()) + " --sequence-file " +
      testing::ShellQuote(dir + "/reference.seq") + " --out " +
      testing::ShellQuote(dir + "/reference.tsv") + " --threads 2 >" +
      testing::ShellQuote(dir + "/reference.log") + " 2>&1";
  const auto started = std::chrono::steady_clock::now();
  if (std::system(command.c_str()) != 0) return std::nullopt;
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ReferenceScores scores;
  std::ifstream in(dir + "/reference.tsv");
  long long position = 0;
  double neither = 0, acceptor = 0, donor = 0;
  while (in >> position >> neither >> acceptor >> donor) {
    if (position != static_cast<long long>(scores.donor.size())) return std::nullopt;
    scores.acceptor.push_back(acceptor);
    scores.donor.push_back(donor);
  }
  if (scores.donor.size() != sequence.size()) return std::nullopt;
  return scores;
}

// tests/unit/worker/openspliceai_genes.py: chr20 regions and refGene junctions.
bool Helper(std::vector<std::string> args, const std::string& log) {
  args.insert(args.begin(), SourceDir() + "/tests/unit/worker/openspliceai_genes.py");
  return testing::RunPython(args, log);
}

CATCH_TEST_CASE("OpenSpliceAI over gRPC: per-base scores equal the eager reference",
                "[openspliceai][grpc]") {
  OPENSPLICEAI_OR_SKIP();
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-openspliceai-parity");
  // 12,345 bp of chr20 through MMP9 (real splice sites, so the scores are not all ~0), with a
  // 100 bp N run: three flanked windows, the last one padded.
  CATCH_REQUIRE(Helper({"region", "--fasta", Chr20Path(), "--start", "44634000", "--end",
                        "44646345", "--out", dir + "/region.seq"},
                       dir + "/helper.log"));
  std::string sequence = ReadFile(dir + "/region.seq");
  CATCH_REQUIRE(sequence.size() == 12345);
  sequence.replace(6000, 100, std::string(100, 'N'));

  double reference_seconds = 0;
  auto reference = RunReference(sequence, dir, &reference_seconds);
  CATCH_INFO(ReadFile(dir + "/reference.log"));
  CATCH_REQUIRE(reference.has_value());

  SpliceWorker worker;
  CATCH_REQUIRE(worker.Start());
  grpc::Status status;
  auto result = worker.Predict(sequence, 0.5, &status);
  CATCH_INFO(status.error_message() << "\n" << worker.Log());
  CATCH_REQUIRE(status.ok());
  CATCH_REQUIRE(result.has_value());
  CATCH_CHECK(result->model() == kModelId);
  CATCH_CHECK(result->windows_processed() == 3);
  const auto& splice = result->splice();
  CATCH_REQUIRE(splice.windows_size() == 3);
  CATCH_CHECK(splice.windows(2).start() == 10000);
  CATCH_CHECK(splice.windows(2).end() == 12345);
  CATCH_CHECK(splice.windows(2).padded_bp() == 2655);

  const auto donor = testing::PerBaseTrack(result->tracks().at("donor"), sequence.size());
  const auto acceptor = testing::PerBaseTrack(result->tracks().at("acceptor"), sequence.size());
  CATCH_REQUIRE(donor.size() == sequence.size());
  CATCH_REQUIRE(acceptor.size() == sequence.size());
  double max_diff = 0;
  double max_donor = 0, max_acceptor = 0;
  for (size_t i = 0; i < sequence.size(); ++i) {
    max_diff = std::max({max_diff, std::abs(donor[i] - reference->donor[i]),
                         std::abs(acceptor[i] - reference->acceptor[i])});
    max_donor = std::max(max_donor, reference->donor[i]);
    max_acceptor = std::max(max_acceptor, reference->acceptor[i]);
  }
  // The tracks carry 6 significant digits; the site scores carry the model's float exactly.
  double max_site_diff = 0;
  std::set<std::pair<int, int64_t>> served;
  for (const auto& site : splice.sites()) {
    const bool is_donor = site.type() == v1::SPLICE_SITE_TYPE_DONOR;
    CATCH_CHECK(site.end() == site.start() + 1);
    const auto& ref = is_donor ? reference->donor : reference->acceptor;
    max_site_diff = std::max(max_site_diff, std::abs(site.score() - ref[site.start()]));
    served.insert({is_donor ? 0 : 1, site.start()});
  }
  // The same calls as the reference at 0.5 (a score within 1e-4 of 0.5 may go either way).
  int disagreements = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(sequence.size()); ++i) {
    for (int type = 0; type < 2; ++type) {
      const double r = type == 0 ? reference->donor[i] : reference->acceptor[i];
      if (std::abs(r - 0.5) < 1e-4) continue;
      disagreements += (r >= 0.5) != (served.count({type, i}) > 0);
    }
  }
  const double per_window_ms = static_cast<double>(result->inference_time_ms()) / 3;
  CATCH_WARN("OpenSpliceAI parity on "
             << sequence.size() << " bp (3 windows): max |worker - "
             << "reference| = " << max_diff << " over every base (tracks), " << max_site_diff
             << " over " << splice.sites_size() << " sites; max reference donor " << max_donor
             << ", acceptor " << max_acceptor << "; worker " << per_window_ms
             << " ms per 15 kb window (5-model ensemble, 2 threads), load "
             << result->model_load_time_ms() << " ms; Python reference " << reference_seconds
             << " s in all");
  CATCH_CHECK(max_diff < 1e-4);
  CATCH_CHECK(max_site_diff < 1e-4);
  CATCH_CHECK(disagreements == 0);
  CATCH_CHECK(splice.sites_size() > 0);  // MMP9's junctions are in there
  CATCH_CHECK(max_donor > 0.9);
  testing::RemoveScratch(dir);
}

struct GeneCase {
  const char* transcript;
  const char* label;
};

CATCH_TEST_CASE("OpenSpliceAI over gRPC: calls on chr20 genes fall on refGene junctions",
                "[openspliceai][grpc]") {
  OPENSPLICEAI_OR_SKIP();
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-openspliceai-genes");
  SpliceWorker worker;
  CATCH_REQUIRE(worker.Start());
  // MMP9 (+, 13 exons) and CPXM1 (-, 14 exons, submitted reverse-complemented), 1 kb either side.
  const GeneCase genes[] = {{"NM_004994", "MMP9 (+)"}, {"NM_019609", "CPXM1 (-)"}};
  for (const GeneCase& gene : genes) {
    CATCH_INFO("transcript " << gene.transcript);
    const std::string prefix = dir + "/" + gene.transcript;
    CATCH_REQUIRE(Helper({"gene", "--fasta", Chr20Path(), "--refgene", RefGene(), "--transcript",
                          gene.transcript, "--pad", "1000", "--out-prefix", prefix},
                         prefix + ".log"));
    const std::string sequence = ReadFile(prefix + ".seq");
    CATCH_REQUIRE(sequence.size() > 5000);
    std::set<std::pair<std::string, int64_t>> target, annotated;
    const auto sites = testing::ReadAnnotatedSites(prefix + ".sites");
    CATCH_REQUIRE_FALSE(sites.empty());
    for (const auto& site : sites) {
      annotated.insert({site.type, site.index});
      if (site.role == "target") target.insert({site.type, site.index});
    }
    CATCH_REQUIRE(target.size() >= 20);

    grpc::Status status;
    auto result = worker.Predict(sequence, 0.5, &status);
    CATCH_INFO(status.error_message());
    CATCH_REQUIRE(status.ok());
    CATCH_REQUIRE(result.has_value());
    std::map<std::string, int> calls, on_annotated, found;
    for (const auto& site : result->splice().sites()) {
      const std::string type = site.type() == v1::SPLICE_SITE_TYPE_DONOR ? "donor" : "acceptor";
      CATCH_CHECK(site.end() == site.start() + 1);
      ++calls[type];
      if (annotated.count({type, site.start()})) ++on_annotated[type];
      if (target.count({type, site.start()})) ++found[type];
    }
    std::map<std::string, int> expected;
    for (const auto& [type, index] : target) ++expected[type];
    const int total_found = found["donor"] + found["acceptor"];
    const int total_calls = calls["donor"] + calls["acceptor"];
    const int total_on = on_annotated["donor"] + on_annotated["acceptor"];
    const double recall = static_cast<double>(total_found) / static_cast<double>(target.size());
    const double precision =
        total_calls ? static_cast<double>(total_on) / static_cast<double>(total_calls) : 0.0;
    CATCH_WARN("OpenSpliceAI on " << gene.label << " " << gene.transcript << ", " << sequence.size()
                                  << " bp, " << result->windows_processed()
                                  << " windows, threshold 0.5: donors " << found["donor"] << "/"
                                  << expected["donor"] << " annotated junctions found, acceptors "
                                  << found["acceptor"] << "/" << expected["acceptor"] << "; recall "
                                  << recall << "; " << total_on << "/" << total_calls
                                  << " calls on annotated sites, precision " << precision);
    CATCH_CHECK(recall >= 0.8);
    CATCH_CHECK(precision >= 0.8);
  }
  testing::RemoveScratch(dir);
}

}  // namespace
}  // namespace dnaserve::worker
