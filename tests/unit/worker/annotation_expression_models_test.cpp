// The trained annotation-human and expression-human packages (worker/packages, written by
// scripts/training/{annotation,expression}.py) in a real dnaserve-worker process over gRPC:
//   * both load and answer (no shared data needed);
//   * expression: two different descriptions of the same window give different predictions;
//   * annotation, on held-out chr20 regions (GRCh37 from Debian's vt-examples, refGene from
//     ../shared/data): the served transcripts recover annotated ones (overlap on their strand,
//     exact introns) at least as well as measured for the committed model, less a margin, and
//     equal those of the Python mirror of the decoder (scripts/training/annotation_decode.py),
//     which the model card's metrics are computed with.
// The region tests skip, with the reason, when ../shared/data or Python's torch is absent.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;
using dnaserve::testing::SourceDir;
using testing::RandomBases;
using testing::ReadFile;

constexpr char kAnnotationModel[] = "annotation-human";
constexpr char kExpressionModel[] = "expression-human";

std::string PackagesDir() { return SourceDir() + "/worker/packages"; }
std::string SharedData() { return SourceDir() + "/../shared/data"; }

// One dnaserve-worker serving worker/packages for `task`.
class PackagesWorker : public testing::WorkerProcess {
 public:
  bool Start(Task task) { return WorkerProcess::Start(task, PackagesDir()); }

  std::optional<v1::ModelInfo> Model(const std::string& id) {
    v1::ListModelsResponse response;
    if (!ListModels(&response).ok()) return std::nullopt;
    for (const auto& m : response.models()) {
      if (m.id() == id) return m;
    }
    return std::nullopt;
  }

  // Streams a prediction: the result, if one came, and the final status.
  std::optional<v1::PredictResult> Predict(const v1::PredictRequest& request,
                                           grpc::Status* status) {
    testing::PredictCall call = WorkerProcess::Predict(request);
    *status = call.status;
    return call.result;
  }
};

v1::PredictRequest ExpressionRequest(const std::string& window, const std::string& description) {
  v1::PredictRequest request;
  request.set_model(kExpressionModel);
  request.set_sequence(window);
  request.mutable_expression()->set_description(description);
  return request;
}

double ExpressionOf(PackagesWorker& worker, const std::string& window,
                    const std::string& description) {
  grpc::Status status;
  auto result = worker.Predict(ExpressionRequest(window, description), &status);
  CATCH_INFO(status.error_message() << "\n" << worker.Log());
  CATCH_REQUIRE(status.ok());
  CATCH_REQUIRE(result.has_value());
  return result->expression().expression_log_tpm();
}

CATCH_TEST_CASE("trained packages: annotation-human and expression-human load and answer",
                "[trained][grpc]") {
  CATCH_REQUIRE(fs::exists(PackagesDir() + "/" + kAnnotationModel + "/manifest.json"));
  CATCH_REQUIRE(fs::exists(PackagesDir() + "/" + kExpressionModel + "/manifest.json"));

  PackagesWorker annotation;
  CATCH_REQUIRE(annotation.Start(Task::kAnnotation));
  auto info = annotation.Model(kAnnotationModel);
  CATCH_REQUIRE(info.has_value());
  CATCH_CHECK(info->trained());
  CATCH_CHECK(info->context_window_bp() == 4096);
  v1::PredictRequest request;
  request.set_model(kAnnotationModel);
  request.set_sequence(RandomBases(10000, 11));
  request.mutable_annotation()->set_reverse_complement(true);
  grpc::Status status;
  auto result = annotation.Predict(request, &status);
  CATCH_INFO(status.error_message() << "\n" << annotation.Log());
  CATCH_REQUIRE(status.ok());
  CATCH_REQUIRE(result.has_value());
  CATCH_CHECK(result->cold_start());
  CATCH_CHECK(result->windows_processed() == 6);  // 3 windows of 4,096 bp, both passes
  CATCH_CHECK(result->formats().at("gff3").rfind("##gff-version 3", 0) == 0);

  PackagesWorker expression;
  CATCH_REQUIRE(expression.Start(Task::kExpression));
  auto expression_info = expression.Model(kExpressionModel);
  CATCH_REQUIRE(expression_info.has_value());
  CATCH_CHECK(expression_info->trained());
  CATCH_CHECK(expression_info->trained_window_bp() == 9198);
  const double value = ExpressionOf(expression, RandomBases(9198, 12), "Liver, liver");
  CATCH_CHECK(value >= 0.0);  // ln(TPM + 1)
  CATCH_CHECK(value < 15.0);
}

CATCH_TEST_CASE("trained packages: a different description changes the expression prediction",
                "[trained][grpc]") {
  PackagesWorker worker;
  CATCH_REQUIRE(worker.Start(Task::kExpression));
  const std::string window = RandomBases(9198, 13);
  const double liver = ExpressionOf(worker, window, "Liver, liver");
  const double liver_again = ExpressionOf(worker, window, "Liver, liver");
  const double stem_cells = ExpressionOf(worker, window, "H1 Cells, esc");
  const double brain = ExpressionOf(worker, window, "fetal brain tissue");
  CATCH_INFO("liver " << liver << ", H1 cells " << stem_cells << ", fetal brain " << brain);
  CATCH_CHECK(liver == liver_again);  // deterministic
  CATCH_CHECK(std::abs(liver - stem_cells) > 0.01);
  CATCH_CHECK(std::abs(liver - brain) > 0.01);
}

CATCH_TEST_CASE("trained packages: the matched context is reported and is the one predicted for",
                "[trained][grpc]") {
  PackagesWorker worker;
  CATCH_REQUIRE(worker.Start(Task::kExpression));
  const std::string window = RandomBases(9198, 14);
  auto match_of = [&](const std::string& description) {
    grpc::Status status;
    auto result = worker.Predict(ExpressionRequest(window, description), &status);
    CATCH_INFO(status.error_message() << "\n" << worker.Log());
    CATCH_REQUIRE(status.ok());
    CATCH_REQUIRE(result->expression().has_description_match());
    return result->expression();
  };
  const auto liver = match_of("liver");
  CATCH_CHECK(liver.description_match().matched());
  CATCH_REQUIRE(liver.description_match().contexts_size() == 3);
  CATCH_CHECK(liver.description_match().contexts(0).id() == "E066");
  CATCH_CHECK(liver.description_match().contexts(0).name() == "Liver");
  CATCH_CHECK(liver.description_match().contexts(0).similarity() == Approx(1.0));
  // The model resolves the description by the same rule: any wording that matches E066 best
  // gives the same prediction.
  const auto wording = match_of("RNA-seq of Liver");
  CATCH_CHECK(wording.description_match().contexts(0).id() == "E066");
  CATCH_CHECK(wording.expression_log_tpm() == Approx(liver.expression_log_tpm()).margin(1e-5));
  const auto lung = match_of("lung tissue");
  CATCH_CHECK(lung.description_match().contexts(0).id() == "E096");
  CATCH_CHECK(std::abs(lung.expression_log_tpm() - liver.expression_log_tpm()) > 1e-4);

  // Nothing shared: flagged, still answered (the mean over all contexts).
  const auto nonsense = match_of("qwzx kcdj vbnm");
  CATCH_CHECK_FALSE(nonsense.description_match().matched());
  CATCH_CHECK(nonsense.description_match().contexts(0).similarity() < 0.4);
  CATCH_CHECK(nonsense.expression_log_tpm() >= 0.0);
}

// ---------------------------------------------------------------- held-out chr20 regions

struct Structure {
  std::string name;  // refGene accession (reference only)
  char strand = '+';
  int64_t start = 0, end = 0;
  std::vector<std::pair<int64_t, int64_t>> exons;
  int cds_segments = 0;       // mirror only
  std::string type;           // mirror only
  std::vector<std::pair<int64_t, int64_t>> cds;  // mirror only
};

std::vector<int64_t> Numbers(const std::string& csv) {
  std::vector<int64_t> out;
  if (csv == ".") return out;  // an empty list
  std::stringstream in(csv);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoll(item));
  return out;
}

// Lines of PREFIX.reference.tsv (name strand start end starts ends) or PREFIX.mirror.tsv
// (strand start end starts ends cds_segments type cds_starts cds_ends, "." for no CDS); see
// `annotation.py region`.
std::vector<Structure> ReadStructures(const std::string& path, bool reference) {
  std::vector<Structure> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    std::string field;
    while (std::getline(fields, field, '\t')) f.push_back(field);
    if (f.size() != (reference ? 6u : 9u)) continue;
    Structure s;
    size_t k = 0;
    if (reference) s.name = f[k++];
    s.strand = f[k++][0];
    s.start = std::stoll(f[k++]);
    s.end = std::stoll(f[k++]);
    auto starts = Numbers(f[k++]);
    auto ends = Numbers(f[k++]);
    for (size_t i = 0; i < starts.size() && i < ends.size(); ++i) {
      s.exons.emplace_back(starts[i], ends[i]);
    }
    if (!reference) {
      s.cds_segments = std::stoi(f[k++]);
      s.type = f[k++];
      auto cds_starts = Numbers(f[k++]);
      auto cds_ends = Numbers(f[k++]);
      for (size_t i = 0; i < cds_starts.size() && i < cds_ends.size(); ++i) {
        s.cds.emplace_back(cds_starts[i], cds_ends[i]);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

Structure FromResult(const v1::Transcript& t) {
  Structure s;
  s.strand = t.strand().empty() ? '?' : t.strand()[0];
  s.start = t.start();
  s.end = t.end();
  for (const auto& e : t.exons()) s.exons.emplace_back(e.start(), e.end());
  s.cds_segments = t.cds_size();
  for (const auto& c : t.cds()) s.cds.emplace_back(c.start(), c.end());
  s.type = t.transcript_type();
  return s;
}

std::string Describe(const Structure& s) {
  std::ostringstream out;
  out << s.strand << " [" << s.start << ", " << s.end << ") " << s.exons.size() << " exons "
      << s.type;
  return out.str();
}

#define SHARED_DATA_OR_SKIP()                                                                    \
  if (!fs::exists(SharedData() + "/annotation/hg19_refGene.txt.gz")) {                           \
    CATCH_WARN("skipped: ../shared/data (hg19 refGene) is absent beside the repository");        \
    return;                                                                                      \
  }                                                                                              \
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {                  \
    CATCH_WARN("skipped: LibTorch for Python is missing (/usr/bin/python3 cannot import torch)"); \
    return;                                                                                      \
  }

// scripts/training/annotation.py region: the region's sequence, its refGene transcripts and the
// mirror's decoding of it (chr20 is fetched into the data cache once).
bool CutRegion(int64_t start, int64_t end, const std::string& prefix, std::string* log) {
  std::string output;
  const int rc = dnaserve::testing::RunCommand(
      {"/usr/bin/python3", "-m", "training.annotation", "region", "--start",
       std::to_string(start), "--end", std::to_string(end), "--package",
       PackagesDir() + "/" + kAnnotationModel, "--out-prefix", prefix},
      &output,
      {{"DNASERVE_DATA_CACHE", dnaserve::testing::DataCacheDir()},
       {"PYTHONPATH", SourceDir() + "/scripts"}});
  *log = output;
  return rc == 0;
}

bool Overlaps(const Structure& a, const Structure& b) {
  return a.strand == b.strand && a.start < b.end && b.start < a.end;
}

std::set<std::pair<int64_t, int64_t>> Introns(const Structure& s) {
  std::set<std::pair<int64_t, int64_t>> out;
  for (size_t i = 1; i < s.exons.size(); ++i) out.emplace(s.exons[i - 1].second, s.exons[i].first);
  return out;
}

// How well a served transcript set recovers one annotated transcript, in the model card's tiers
// (scripts/training/annotation_metrics.py): `overlap` on its strand; `shares_junction`: a
// prediction holds one of its introns exactly (single-exon: overlaps half of the longer).
struct Recovery {
  bool overlap = false;
  bool shares_junction = false;
};

Recovery Recover(const Structure& reference, const std::vector<Structure>& served) {
  Recovery out;
  const auto introns = Introns(reference);
  for (const Structure& s : served) {
    if (!Overlaps(s, reference)) continue;
    out.overlap = true;
    if (introns.empty()) {
      const int64_t shared = std::min(s.end, reference.end) - std::max(s.start, reference.start);
      const int64_t longer = std::max(s.end - s.start, reference.end - reference.start);
      out.shares_junction |= s.exons.size() == 1 && 2 * shared >= longer;
    } else {
      for (const auto& intron : Introns(s)) out.shares_junction |= introns.count(intron) > 0;
    }
  }
  return out;
}

// Held-out regions (inside chr20:53,025,520-63,025,520, which no model trained on): the three
// non-overlapping 300 kb blocks of the evaluation grid holding the most distinct refGene
// structures (51, 30, 29; genes on both strands), chosen by gene count, not by how the model
// does there. The committed annotation-human (exon-chain decoder, promoter TSS channels,
// alternative starts, the 28-epoch splice network) overlaps 100 of the 110 on their strand and
// finds an exact intron of 70 (MODEL_CARD.md has the region-wide figures: 280 of 337 and 213);
// an earlier package with the 16-epoch splice network, 98 and 63 (region-wide then 276 and 177);
// with its own TSS channels and no alternative starts before, 99 and 64 here; with
// the per-base decoder before that, 105 and 70; the package before its splice-site channels came
// from the splice network found 14). The thresholds are those less a
// margin: a model that finds nothing, calls genes on the wrong strand, or loses its splice
// sites fails them.
struct Region {
  int64_t start, end;
};
const Region kRegions[] = {
    {62325520, 62625520}, {56025520, 56325520}, {57225520, 57525520}};
constexpr double kMinOverlapShare = 0.8;  // of distinct annotated structures (measured 0.91)
constexpr int kMinSharesJunction = 50;    // structures with an exact intron found (measured 70)

// The GFF3 track's gene -> transcript -> exon hierarchy, checked as a reader of the track sees
// it: a gene line comes before its transcripts, spans exactly their union on their strand, and
// transcripts of different genes on one strand share no exonic base (isoforms whose exons
// overlap are one gene). Problems found, or empty; the gene and transcript counts.
std::string GeneHierarchyProblems(const std::string& gff, int* genes, int* transcripts) {
  struct Feature {
    char strand;
    int64_t start, end;
    std::string parent;
  };
  std::map<std::string, Feature> gene, transcript;
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> exons;  // by transcript
  std::ostringstream problems;
  std::istringstream lines(gff);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
    if (f.size() != 9) {
      problems << "not 9 columns: " << line << "\n";
      continue;
    }
    std::map<std::string, std::string> attributes;
    std::istringstream pairs(f[8]);
    for (std::string kv; std::getline(pairs, kv, ';');) {
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) attributes[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    const Feature feature{f[6][0], std::stoll(f[3]) - 1, std::stoll(f[4]), attributes["Parent"]};
    if (f[2] == "gene") {
      gene[attributes["ID"]] = feature;
    } else if (f[2] == "mRNA" || f[2] == "lnc_RNA") {
      if (!gene.count(feature.parent)) problems << attributes["ID"] << " before its gene\n";
      transcript[attributes["ID"]] = feature;
    } else if (f[2] == "exon") {
      exons[feature.parent].emplace_back(feature.start, feature.end);
    }
  }
  *genes = static_cast<int>(gene.size());
  *transcripts = static_cast<int>(transcript.size());
  std::map<std::string, std::pair<int64_t, int64_t>> union_of;
  for (const auto& [id, t] : transcript) {
    if (!gene.count(t.parent) || gene.at(t.parent).strand != t.strand) {
      problems << id << ": no gene " << t.parent << " on its strand\n";
      continue;
    }
    auto [it, fresh] = union_of.emplace(t.parent, std::make_pair(t.start, t.end));
    if (!fresh) {
      it->second = {std::min(it->second.first, t.start), std::max(it->second.second, t.end)};
    }
  }
  for (const auto& [id, g] : gene) {
    if (!union_of.count(id) || union_of.at(id) != std::make_pair(g.start, g.end)) {
      problems << id << " does not span exactly its transcripts\n";
    }
  }
  for (const auto& [a, ta] : transcript) {
    for (const auto& [b, tb] : transcript) {
      if (a >= b || ta.parent == tb.parent || ta.strand != tb.strand) continue;
      for (const auto& ea : exons[a]) {
        for (const auto& eb : exons[b]) {
          if (ea.first < eb.second && eb.first < ea.second) {
            problems << a << " (" << ta.parent << ") and " << b << " (" << tb.parent
                     << ") share exonic bases but are different genes\n";
          }
        }
      }
    }
  }
  return problems.str();
}

CATCH_TEST_CASE("trained packages: annotation-human recovers held-out chr20 transcripts",
                "[trained][grpc]") {
  SHARED_DATA_OR_SKIP();
  PackagesWorker worker;
  CATCH_REQUIRE(worker.Start(Task::kAnnotation));
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-annotation-region");
  int references = 0, overlapped = 0, shares_junction = 0;
  int total_genes = 0, total_transcripts = 0;  // in the GFF3 tracks
  std::ostringstream listing;
  for (const Region& region : kRegions) {
    CATCH_INFO("chr20:" << region.start << "-" << region.end);
    const std::string prefix = dir + "/region_" + std::to_string(region.start);
    std::string log;
    const bool cut = CutRegion(region.start, region.end, prefix, &log);
    CATCH_INFO(log);
    CATCH_REQUIRE(cut);
    const std::string sequence = ReadFile(prefix + ".seq");
    CATCH_REQUIRE(static_cast<int64_t>(sequence.size()) == region.end - region.start);
    const auto reference = ReadStructures(prefix + ".reference.tsv", true);
    const auto mirror = ReadStructures(prefix + ".mirror.tsv", false);
    CATCH_REQUIRE(!reference.empty());

    v1::PredictRequest request;
    request.set_model(kAnnotationModel);
    request.set_sequence(sequence);
    request.mutable_annotation()->set_reverse_complement(true);
    request.mutable_annotation()->set_seqid("chr20");
    grpc::Status status;
    auto result = worker.Predict(request, &status);
    CATCH_INFO(status.error_message() << "\n" << worker.Log());
    CATCH_REQUIRE(status.ok());
    CATCH_REQUIRE(result.has_value());
    std::vector<Structure> served;
    for (const auto& t : result->annotation().transcripts()) served.push_back(FromResult(t));
    int genes = 0, gff_transcripts = 0;
    CATCH_CHECK(GeneHierarchyProblems(result->formats().at("gff3"), &genes, &gff_transcripts) ==
                "");
    CATCH_CHECK(gff_transcripts == result->annotation().transcripts_size());
    total_genes += genes;
    total_transcripts += gff_transcripts;

    // Distinct annotated structures (isoforms with the same exons count once, as in the card).
    std::set<std::pair<char, std::vector<std::pair<int64_t, int64_t>>>> seen;
    std::set<char> strands;
    for (const Structure& r : reference) {
      if (!seen.emplace(r.strand, r.exons).second) continue;
      const Recovery found = Recover(r, served);
      listing << r.name << " " << Describe(r) << (found.overlap ? ": overlapped" : ": missed")
              << (found.shares_junction ? ", exact intron found" : "") << "\n";
      ++references;
      overlapped += found.overlap;
      shares_junction += found.shares_junction;
      strands.insert(r.strand);
    }
    CATCH_CHECK(strands.size() == 2);  // the regions were chosen with genes on both strands

    // The worker decodes as the Python mirror the metrics come from. Scores may differ in the
    // last float bits (other batch shapes), which could move a decision at a tie; none did.
    CATCH_REQUIRE(served.size() == mirror.size());
    for (size_t i = 0; i < served.size(); ++i) {
      CATCH_INFO(Describe(served[i]) << " vs mirror " << Describe(mirror[i]));
      CATCH_CHECK(served[i].strand == mirror[i].strand);
      CATCH_CHECK(served[i].exons == mirror[i].exons);
      CATCH_CHECK(served[i].cds_segments == mirror[i].cds_segments);
      CATCH_CHECK(served[i].cds == mirror[i].cds);  // the framed chain's ORF, base for base
      CATCH_CHECK(served[i].type == mirror[i].type);
    }
  }
  CATCH_INFO(listing.str());
  CATCH_INFO(overlapped << " of " << references << " annotated structures overlapped on their "
                        << "strand, " << shares_junction << " with an exact intron found");
  CATCH_CHECK(references > 0);
  // Alternative starts give some genes more than one transcript, grouped under one gene.
  CATCH_INFO(total_transcripts << " transcripts in " << total_genes << " genes");
  CATCH_CHECK(total_genes < total_transcripts);
  CATCH_CHECK(overlapped >= kMinOverlapShare * references);
  CATCH_CHECK(shares_junction >= kMinSharesJunction);
  testing::RemoveScratch(dir);
}

}  // namespace
}  // namespace dnaserve::worker
