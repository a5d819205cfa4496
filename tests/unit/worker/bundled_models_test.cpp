// The trained packages committed in worker/packages (scripts/train-models), served by real
// dnaserve-worker processes over gRPC:
//   * every package is valid, loads and answers, each task has one default, and descriptions are
//     honest about training;
//   * on held-out chr20 (the last 10 Mb, never trained on) the default promoter model fires at
//     annotated TSSs and the default splice model at annotated junctions.
// The biology cases need GRCh37 chr20 (Debian's vt-examples, fetched into the build tree) and
// refGene from ../shared/data; they skip, saying why, when those are absent.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/task.h"
#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/manifest/manifest.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;
using dnaserve::testing::SourceDir;
using testing::PredictCall;
using testing::ReadFile;
using testing::WorkerProcess;

std::string PackagesDir() { return SourceDir() + "/worker/packages"; }
std::string RefGene() { return testing::SharedDataDir() + "/annotation/hg19_refGene.txt.gz"; }

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

v1::PredictRequest Request(const std::string& model, const std::string& sequence, Task task,
                           double threshold) {
  v1::PredictRequest request;
  request.set_model(model);
  request.set_sequence(sequence);
  request.set_sequence_name("chr20");
  switch (task) {
    case Task::kPromoter:
      request.mutable_promoter()->set_threshold(threshold);
      break;
    case Task::kSplice: {
      auto* splice = request.mutable_splice();
      splice->set_threshold(threshold);
      splice->add_site_types(v1::SPLICE_SITE_TYPE_DONOR);
      splice->add_site_types(v1::SPLICE_SITE_TYPE_ACCEPTOR);
      splice->set_max_sites(20000);
      break;
    }
    case Task::kEnhancer:
      request.mutable_enhancer();
      break;
    case Task::kChromatin:
      request.mutable_chromatin()->set_threshold(threshold);
      break;
    default:
      break;
  }
  return request;
}

#define REFERENCE_DATA_OR_SKIP(chr20)                                                            \
  if (!fs::exists(RefGene())) {                                                                  \
    CATCH_WARN("skipped: " << RefGene() << " is absent (../shared/data beside the repository)"); \
    return;                                                                                      \
  }                                                                                              \
  if (!testing::PythonHasTorch()) {                                                              \
    CATCH_WARN("skipped: /usr/bin/python3 cannot import torch (python3-torch)");                 \
    return;                                                                                      \
  }                                                                                              \
  std::string chr20##_why;                                                                       \
  const auto chr20 = testing::Chr20Fasta(&chr20##_why);                                          \
  CATCH_INFO(chr20##_why);                                                                       \
  CATCH_REQUIRE(chr20.has_value());                                                              \
  CATCH_REQUIRE(fs::exists(testing::WorkerBinary()))

CATCH_TEST_CASE("bundled packages: valid, honest, and served by the real worker",
                "[bundled][grpc]") {
  CATCH_REQUIRE(fs::is_directory(PackagesDir()));
  CATCH_REQUIRE(fs::exists(testing::WorkerBinary()));
  int packages = 0;
  for (Task task : kAllTasks) {
    CATCH_INFO("task " << TaskName(task));
    const ManifestScan scan = ScanModelsDir(PackagesDir(), task);
    for (const auto& error : scan.errors) CATCH_FAIL_CHECK("rejected package: " << error);
    if (scan.models.empty()) continue;
    packages += static_cast<int>(scan.models.size());
    int defaults = 0;
    for (const ModelManifest& m : scan.models) {
      CATCH_INFO("package " << m.id);
      defaults += m.is_default ? 1 : 0;
      const std::string description = Lower(m.description);
      const std::string card = ReadFile(m.package_dir + "/" + m.model_card_file);
      // Untrained weights say so in the models list and the card; trained ones never claim to be
      // random, and their cards carry the held-out evaluation.
      if (m.trained) {
        CATCH_CHECK(description.find("untrained") == std::string::npos);
        CATCH_CHECK(description.find("random weights") == std::string::npos);
        CATCH_CHECK(Lower(card).find("held-out") != std::string::npos);
      } else {
        CATCH_CHECK(description.find("untrained") != std::string::npos);
        CATCH_CHECK(card.find("UNTRAINED") != std::string::npos);
      }
      CATCH_CHECK(m.id.rfind(std::string(TaskName(task)) + "-", 0) == 0);
    }
    CATCH_CHECK(defaults == 1);

    WorkerProcess worker;
    CATCH_REQUIRE(worker.Start(task, PackagesDir()));
    v1::ListModelsResponse list;
    CATCH_REQUIRE(worker.ListModels(&list).ok());
    std::set<std::string> listed, expected;
    for (const auto& info : list.models()) listed.insert(info.id());
    for (const auto& m : scan.models) expected.insert(m.id);
    CATCH_CHECK(listed == expected);
    for (const ModelManifest& m : scan.models) {
      CATCH_INFO("package " << m.id);
      const std::string sequence = testing::RandomBases(task == Task::kExpression ? 9198 : 3000, 5);
      v1::PredictRequest request = Request(m.id, sequence, task, 0.5);
      if (task == Task::kExpression) {
        request.mutable_expression()->set_description("liver");
      } else if (task == Task::kAnnotation) {
        request.mutable_annotation()->set_batch_size(8);
        request.mutable_annotation()->set_reverse_complement(true);
      }
      const PredictCall call = worker.Predict(request);
      CATCH_INFO(call.status.error_message() << "\n" << worker.Log());
      CATCH_CHECK(call.status.ok());
      CATCH_CHECK(call.result.has_value());
      if (task == Task::kChromatin && call.result) {
        // Unlearned DeepSEA features output exactly 0: even threshold 0 never reports them.
        std::set<std::string> reported;
        const PredictCall all = worker.Predict(Request(m.id, sequence, task, 0.0));
        CATCH_REQUIRE(all.status.ok());
        for (const auto& window : all.result->chromatin().windows()) {
          for (const auto& feature : window.features()) reported.insert(feature.name());
        }
        CATCH_CHECK(!reported.empty());
        CATCH_CHECK(reported.size() < 919);
        for (const auto& name : reported) {
          CATCH_CHECK(name.find("|DNase|") == std::string::npos);
          CATCH_CHECK(name.find("|H3K27ac|") == std::string::npos);
        }
      }
    }
  }
  CATCH_CHECK(packages >= 11);  // the committed roster (README.md, "Models")
}

struct TssCase {
  std::string gene;
  std::string strand;
  std::string sequence;
  std::vector<int64_t> same_strand;   // annotated TSSs on the submitted strand
  std::vector<int64_t> other_strand;  // annotated TSSs on the opposite strand
};

std::vector<int64_t> SplitInts(const std::string& text) {
  std::vector<int64_t> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(std::stoll(item));
  }
  return out;
}

std::vector<TssCase> ReadTssCases(const std::string& path) {
  std::vector<TssCase> cases;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::istringstream fields(line);
    std::string col;
    while (std::getline(fields, col, '\t')) cols.push_back(col);
    if (cols.size() < 3) continue;
    cols.resize(5);
    cases.push_back({cols[0], cols[1], cols[2], SplitInts(cols[3]), SplitInts(cols[4])});
  }
  return cases;
}

CATCH_TEST_CASE("promoter-human over gRPC fires at annotated TSSs of held-out chr20 genes",
                "[bundled][grpc][heldout]") {
  REFERENCE_DATA_OR_SKIP(chr20);
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-heldout-tss");
  constexpr int kFlank = 5000;
  CATCH_REQUIRE(testing::RunPython(
      {SourceDir() + "/tests/unit/worker/heldout_tss.py", "--fasta", *chr20, "--refgene", RefGene(),
       "--count", "16", "--flank", std::to_string(kFlank), "--out", dir + "/cases.tsv"},
      dir + "/cases.log"));
  const auto cases = ReadTssCases(dir + "/cases.tsv");
  CATCH_REQUIRE(cases.size() == 16);

  WorkerProcess worker;
  CATCH_REQUIRE(worker.Start(Task::kPromoter, PackagesDir()));
  int hits = 0, regions = 0, regions_at_tss = 0, ranked_first = 0;
  std::ostringstream report;
  for (const TssCase& c : cases) {
    const PredictCall call =
        worker.Predict(Request("promoter-human", c.sequence, Task::kPromoter, 0.5));
    CATCH_REQUIRE(call.status.ok());
    const auto& result = call.result->promoter();
    bool hit = false;
    for (const auto& region : result.regions()) {
      ++regions;
      hit = hit || (region.start() <= kFlank && kFlank < region.end());
      // A called region "is at a TSS" when an annotated TSS of either strand lies within it
      // (bidirectional promoters are real promoters on both strands).
      bool at_tss = false;
      for (const auto* list : {&c.same_strand, &c.other_strand}) {
        for (int64_t t : *list) at_tss = at_tss || (region.start() <= t && t < region.end());
      }
      regions_at_tss += at_tss ? 1 : 0;
    }
    hits += hit ? 1 : 0;
    // Ranking, whatever the threshold: the best window holding this TSS outscores every window
    // that holds no annotated TSS of either strand.
    double at_tss = 0, elsewhere = 0;
    for (const auto& window : result.windows()) {
      bool holds_any = false;
      for (const auto* list : {&c.same_strand, &c.other_strand}) {
        for (int64_t t : *list) holds_any = holds_any || (window.start() <= t && t < window.end());
      }
      if (window.start() <= kFlank && kFlank < window.end()) {
        at_tss = std::max(at_tss, window.score());
      } else if (!holds_any) {
        elsewhere = std::max(elsewhere, window.score());
      }
    }
    ranked_first += at_tss > elsewhere ? 1 : 0;
    report << " " << c.gene << "(" << c.strand << ")" << (hit ? "+" : "-")
           << (at_tss > elsewhere ? "" : "(outranked)");
  }
  const double recall = hits / static_cast<double>(cases.size());
  const double precision = regions ? regions_at_tss / static_cast<double>(regions) : 0.0;
  CATCH_WARN("promoter-human on " << cases.size() << " held-out TSSs (+-" << kFlank
                                  << " bp, sense strand, threshold 0.5): " << hits
                                  << " fired at the TSS; " << regions_at_tss << "/" << regions
                                  << " called regions hold an annotated TSS; in " << ranked_first
                                  << " the TSS window outscores every TSS-free window;"
                                  << report.str());
  // Measured: 8/16 fired at 0.5 (the threshold is calibrated for few false windows: held-out
  // TPR 0.44 at FPR 0.006 per window), 8/12 regions at a TSS, 10/16 TSS windows ranked first
  // (a model without promoter signal: about 2/16, one window in nine).
  CATCH_CHECK(recall >= 0.4);
  CATCH_CHECK(precision >= 0.6);
  CATCH_CHECK(ranked_first >= 9);
  testing::RemoveScratch(dir);
}

// AUROC of `scores` for the positions in `positives` against every other position (average
// ranks for ties).
double Auroc(const std::vector<double>& scores, const std::set<int64_t>& positives) {
  std::vector<size_t> order(scores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  double rank_sum = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) ++j;
    const double rank = (i + j + 1) / 2.0;  // 1-based average rank of the run
    for (size_t k = i; k < j; ++k) rank_sum += positives.count(order[k]) ? rank : 0.0;
    i = j;
  }
  const double p = static_cast<double>(positives.size());
  const double n = static_cast<double>(scores.size()) - p;
  return (rank_sum - p * (p + 1) / 2) / (p * n);
}

struct SpliceCase {
  const char* transcript;
  const char* label;
};

CATCH_TEST_CASE("splice-human over gRPC scores annotated junctions of held-out chr20 genes",
                "[bundled][grpc][heldout]") {
  REFERENCE_DATA_OR_SKIP(chr20);
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-heldout-splice");
  WorkerProcess worker;
  CATCH_REQUIRE(worker.Start(Task::kSplice, PackagesDir()));
  // Held-out genes (chr20 > 53,025,520): COL9A3 (+, 32 exons), NELFCD (+, 15), LAMA5 (-, 80;
  // submitted reverse-complemented), 1 kb either side.
  const SpliceCase genes[] = {
      {"NM_001853", "COL9A3 (+)"}, {"NM_198976", "NELFCD (+)"}, {"NM_005560", "LAMA5 (-)"}};
  std::ostringstream report;
  std::map<std::string, int> top_total, k_total;
  int calls_total = 0, on_annotated_total = 0;
  for (const SpliceCase& gene : genes) {
    CATCH_INFO("transcript " << gene.transcript);
    const std::string prefix = dir + "/" + gene.transcript;
    CATCH_REQUIRE(
        testing::RunPython({SourceDir() + "/tests/unit/worker/openspliceai_genes.py", "gene",
                            "--fasta", *chr20, "--refgene", RefGene(), "--transcript",
                            gene.transcript, "--pad", "1000", "--out-prefix", prefix},
                           prefix + ".log"));
    std::map<std::string, std::set<int64_t>> annotated;  // every refGene site on this strand
    const auto sites = testing::ReadAnnotatedSites(prefix + ".sites");
    CATCH_REQUIRE_FALSE(sites.empty());
    for (const auto& site : sites) annotated[site.type].insert(site.index);
    const std::string sequence = ReadFile(prefix + ".seq");
    const PredictCall call = worker.Predict(Request("splice-human", sequence, Task::kSplice, 0.5));
    CATCH_REQUIRE(call.status.ok());
    int calls = 0, on_annotated = 0;
    for (const auto& site : call.result->splice().sites()) {
      const std::string type = site.type() == v1::SPLICE_SITE_TYPE_DONOR ? "donor" : "acceptor";
      CATCH_CHECK(site.end() == site.start() + 1);  // per-base sites (flanked model)
      ++calls;
      on_annotated += annotated[type].count(site.start()) ? 1 : 0;
    }
    report << " " << gene.label << ":";
    for (const char* type : {"donor", "acceptor"}) {
      const auto track = testing::PerBaseTrack(call.result->tracks().at(type), sequence.size());
      CATCH_REQUIRE(track.size() == sequence.size());
      // Per-base ranking: annotated junction bases against every other base of the gene.
      const double auroc = Auroc(track, annotated[type]);
      // Top-k: of the k best-scoring bases (k = annotated sites), how many are annotated.
      std::vector<size_t> order(track.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      const size_t k = annotated[type].size();
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](size_t a, size_t b) { return track[a] > track[b]; });
      int top = 0;
      for (size_t i = 0; i < k; ++i) top += annotated[type].count(order[i]) ? 1 : 0;
      report << " " << type << " AUROC " << auroc << ", top-k " << top << "/" << k << ";";
      CATCH_CHECK(auroc >= 0.95);
      top_total[type] += top;
      k_total[type] += static_cast<int>(k);
    }
    report << " " << on_annotated << "/" << calls << " calls at 0.5 annotated;";
    calls_total += calls;
    on_annotated_total += on_annotated;
  }
  CATCH_WARN("splice-human on held-out genes:" << report.str());
  // Top-k over the three genes (measured 108/124 donors, 104/124 acceptors, the 16-epoch network
  // before it 110 and 101; random weights would place almost none of them in the top k), and the
  // calls at 0.5 (measured 166 of 176 on an annotated junction, before 188 of 203).
  CATCH_CHECK(top_total["donor"] >= 0.7 * k_total["donor"]);
  CATCH_CHECK(top_total["acceptor"] >= 0.6 * k_total["acceptor"]);
  CATCH_CHECK(calls_total >= 100);
  CATCH_CHECK(on_annotated_total >= 0.8 * calls_total);
  testing::RemoveScratch(dir);
}

}  // namespace
}  // namespace dnaserve::worker
