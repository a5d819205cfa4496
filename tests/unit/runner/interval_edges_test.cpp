// The prediction tasks by interval read real flanks (issue 25, interval_edges.h): the worker is
// sent the interval with the model's context window of reference on each side (N only past the
// contig's ends), and the answer is cut back to the interval. Run as a runner runs them
// (BuildIntervalJob on the queue's IntervalCommand) over a real bgzipped FASTA, against a fake
// worker whose scores depend on the bases around each position, so a score next to an edge that
// saw N instead of the reference differs. What is checked: the answer for an interval is, byte
// for byte, the answer for the interval widened by the context, cut to the inner part (JSON items
// and BED/GFF3 text, both strands); at a contig's end the worker gets no flank there (N remains);
// windows and transcripts that straddle an edge are clipped to it (JSON, BED12 blocks, GFF3
// records), their parts outside dropped.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "common/sequence.h"
#include "core/admission/interval_commands.h"
#include "core/dispatch/model_catalogue.h"
#include "core/validation/predict_request.h"
#include "runner/workflows/interval_edges.h"
#include "runner/workflows/interval_job.h"
#include "runner/workflows/variant_resources.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"
#include "tests/support/lcg_bases.h"

using namespace dnaserve;
using namespace dnaserve::runner;

namespace {

namespace pb = dnaserve::worker::v1;

constexpr int64_t kContigBp = 40000;
constexpr int64_t kContextBp = 300;  // every fake model's context window
constexpr int64_t kReach = 100;      // the fake scores look this far either side
constexpr int64_t kPromoterWindow = 170;
constexpr int64_t kTranscriptBp = 100;
// Transcripts are planted as a marker at their first base.
const std::string kGene = "GATTACAGATTACACCGGTTAACCGG";
constexpr int64_t kGeneInside = 20400;
constexpr int64_t kGeneOverStart = 19950;  // [19950, 20050) straddles an interval starting 20000
constexpr int64_t kGeneOverEnd = 20960;    // [20960, 21060) straddles one ending at 21000

using testing::LcgBases;

struct Genome {
  std::string bases;
  std::string fasta;
  std::string catalogue;
};

const Genome& TheGenome() {
  static const Genome genome = [] {
    Genome g;
    g.bases = LcgBases(kContigBp, 77);
    for (int64_t at : {kGeneInside, kGeneOverStart, kGeneOverEnd}) {
      g.bases.replace(static_cast<size_t>(at), kGene.size(), kGene);
    }
    const std::string dir = testing::MakeTempDir("dnaserve-interval-edges");
    g.fasta = dir + "/edges.fa.gz";
    REQUIRE(testing::WriteIndexedFasta(g.fasta, {{"20", g.bases}}, /*bgzip=*/true));
    g.catalogue = dir + "/edges.tss.tsv";
    std::ofstream(g.catalogue) << "##dnaserve-tss-catalogue=1\n"
                                  "##build=GRCh37\n"
                                  "##annotation_release=unit test\n"
                                  "##transcripts=interval edges test\n"
                                  "##position_base=1\n"
                                  "#contig\ttss\tstrand\tgene_symbol\tgene_id\ttranscript_id\n"
                                  "chr20\t20001\t+\tGENEP\tENSG00000000101\t.\n";
    return g;
  }();
  return genome;
}

std::unique_ptr<VariantResources> Resources() {
  auto catalogue = variant::TssCatalogue::Load(TheGenome().catalogue);
  REQUIRE(catalogue.ok());
  auto reference = variant::ReferenceGenome::Open(TheGenome().fasta);
  INFO(reference.status().ToString());
  REQUIRE(reference.ok());
  return std::make_unique<VariantResources>(
      nullptr, GenomeAssets{std::move(catalogue).value(), std::move(reference).value()},
      testing::MakeTempDir("dnaserve-interval-edges-work"), 1);
}

// A score that changes with every base within kReach of p (N past the sequence's ends).
double ScoreAt(const std::string& s, int64_t p) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = p - kReach; i <= p + kReach; ++i) {
    const char c = i < 0 || i >= static_cast<int64_t>(s.size()) ? 'N' : s[static_cast<size_t>(i)];
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  return static_cast<double>(h % 1000003) / 1000003.0;
}

// The fake workers: splice calls a donor at every "GT" (per-base, scored from its
// neighbourhood); promoter scores windows of kPromoterWindow bp from the sequence's start;
// annotation finds a transcript at each kGene marker.
class ContextWorker : public core::InferenceBackend {
 public:
  StatusOr<pb::PredictResult> Predict(Task task, const pb::PredictRequest& request,
                                      const core::CallContext&,
                                      const core::ProgressCallback&) override {
    std::lock_guard<std::mutex> lock(mu);
    sequences.push_back(request.sequence());
    const std::string& s = request.sequence();
    const std::string& name = request.sequence_name();
    const int64_t n = static_cast<int64_t>(s.size());
    pb::PredictResult result;
    result.set_model(request.model());
    if (task == Task::kSplice) {
      std::string bed, gff = "##gff-version 3\n##sequence-region " + name + " 1 " +
                             std::to_string(n) + "\n";
      std::string bedgraph = "track type=bedGraph name=donor\n";
      for (int64_t w = 0; w * 500 < n; ++w) {
        auto* window = result.mutable_splice()->add_windows();
        window->set_index(static_cast<int32_t>(w));
        window->set_start(w * 500);
        window->set_end(std::min(n, (w + 1) * 500));
      }
      for (int64_t p = 0; p + 1 < n; ++p) {
        if (s[p] != 'G' || s[p + 1] != 'T') continue;
        auto* site = result.mutable_splice()->add_sites();
        site->set_type(pb::SPLICE_SITE_TYPE_DONOR);
        site->set_start(p);
        site->set_end(p + 1);
        site->set_token_index(p % 500);
        site->set_window_index(static_cast<int32_t>(p / 500));
        site->set_score(ScoreAt(s, p));
        site->set_donor_score(ScoreAt(s, p));
        const std::string score = std::to_string(ScoreAt(s, p));
        bed += name + "\t" + std::to_string(p) + "\t" + std::to_string(p + 1) + "\tdonor\t" +
               score + "\t+\n";
        gff += name + "\tfake\tsplice_site\t" + std::to_string(p + 1) + "\t" +
               std::to_string(p + 1) + "\t" + score + "\t+\t.\tID=site" + std::to_string(p) +
               "\n";
        bedgraph += name + "\t" + std::to_string(p) + "\t" + std::to_string(p + 1) + "\t" +
                    score + "\n";
      }
      (*result.mutable_formats())["bed"] = bed;
      (*result.mutable_formats())["gff3"] = gff;
      (*result.mutable_tracks())["donor"] = bedgraph;
    } else if (task == Task::kPromoter) {
      std::string bedgraph = "track type=bedGraph name=promoter\n";
      for (int64_t start = 0, i = 0; start < n; start += kPromoterWindow, ++i) {
        auto* window = result.mutable_promoter()->add_windows();
        window->set_index(static_cast<int32_t>(i));
        window->set_start(start);
        window->set_end(std::min(n, start + kPromoterWindow));
        window->set_padded_bp(std::max<int64_t>(0, start + kPromoterWindow - n));
        window->set_score(ScoreAt(s, start + kPromoterWindow / 2));
        bedgraph += name + "\t" + std::to_string(window->start()) + "\t" +
                    std::to_string(window->end()) + "\t" + std::to_string(window->score()) + "\n";
      }
      (*result.mutable_formats())["bedgraph"] = bedgraph;
    } else if (task == Task::kAnnotation) {
      std::string bed, gff = "##gff-version 3\n##sequence-region " + name + " 1 " +
                             std::to_string(n) + "\n";
      int k = 0;
      for (size_t at = s.find(kGene); at != std::string::npos; at = s.find(kGene, at + 1)) {
        const int64_t a = static_cast<int64_t>(at);
        const std::string id = "t" + std::to_string(k++);
        pb::Transcript* t = result.mutable_annotation()->add_transcripts();
        t->set_id(id);
        t->set_strand("+");
        t->set_start(a);
        t->set_end(a + kTranscriptBp);
        t->set_tss_position(a);
        t->set_polya_position(a + kTranscriptBp - 1);
        t->set_transcript_type("mRNA");
        t->set_score(ScoreAt(s, a));
        for (int64_t e : {int64_t{0}, int64_t{60}}) {
          pb::Interval* exon = t->add_exons();
          exon->set_start(a + e);
          exon->set_end(a + e + 40);
        }
        pb::Interval* intron = t->add_introns();
        intron->set_start(a + 40);
        intron->set_end(a + 60);
        const std::string from = std::to_string(a + 1), to = std::to_string(a + kTranscriptBp);
        gff += name + "\tfake\tgene\t" + from + "\t" + to + "\t.\t+\t.\tID=gene_" + id + "\n";
        gff += name + "\tfake\tmRNA\t" + from + "\t" + to + "\t.\t+\t.\tID=" + id +
               ";Parent=gene_" + id + ";tss_position=" + std::to_string(a) + "\n";
        gff += name + "\tfake\texon\t" + from + "\t" + std::to_string(a + 40) +
               "\t.\t+\t.\tParent=" + id + "\n";
        gff += name + "\tfake\texon\t" + std::to_string(a + 61) + "\t" + to +
               "\t.\t+\t.\tParent=" + id + "\n";
        bed += name + "\t" + std::to_string(a) + "\t" + std::to_string(a + kTranscriptBp) + "\t" +
               id + "\t0\t+\t" + std::to_string(a) + "\t" + std::to_string(a) +
               "\t0\t2\t40,40,\t0,60,\n";
      }
      (*result.mutable_formats())["gff3"] = gff;
      (*result.mutable_formats())["bed"] = bed;
    } else {
      return Unavailable("no fake for this task");
    }
    return result;
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override { return Unavailable("n/a"); }

  std::mutex mu;
  std::vector<std::string> sequences;  // every request's sequence, in call order
};

// The runner's view of the fake models: each with a context window of kContextBp.
const core::ModelCatalogue& Catalogue() {
  static const core::ModelCatalogue* catalogue = [] {
    auto* c = new core::ModelCatalogue;
    for (auto [task, id] : {std::pair{Task::kSplice, "splice-fake"},
                            std::pair{Task::kPromoter, "promoter-fake"},
                            std::pair{Task::kAnnotation, "annotation-fake"}}) {
      pb::ModelInfo info;
      info.set_id(id);
      info.set_is_default(true);
      info.set_context_window_bp(kContextBp);
      c->SetModels(task, {info});
    }
    return c;
  }();
  return *catalogue;
}

std::string ModelOf(Task task) {
  if (task == Task::kSplice) return "splice-fake";
  if (task == Task::kPromoter) return "promoter-fake";
  return "annotation-fake";
}

struct Run {
  std::string body;
  std::vector<std::string> sequences;
};

// 1-based inclusive interval bounds, as a client sends them.
Run RunInterval(Task task, int64_t start, int64_t end, char strand,
                OutputFormat format = OutputFormat::kJson) {
  const std::string options = task == Task::kSplice ? R"({"threshold": 0.0})"
                              : task == Task::kPromoter ? R"({"threshold": 0.0})"
                                                         : "{}";
  const std::string body = R"({"interval":{"contig":"chr20","start":)" + std::to_string(start) +
                           R"(,"end":)" + std::to_string(end) + R"(,"strand":")" +
                           std::string(1, strand) + R"("},"options":)" + options + "}";
  auto input = core::ValidatePredictBody(task, body);
  INFO(input.status().ToString());
  REQUIRE(input.ok());
  core::AdmittedPredict admitted{std::move(input).value(), format};
  admitted.input.request.set_model(ModelOf(task));
  auto command = core::IntervalCommandFor(std::move(admitted));
  auto resources = Resources();
  ContextWorker worker;
  auto job = BuildIntervalJob(std::move(*command.mutable_interval()), &worker, resources.get(),
                              {nullptr, &Catalogue()});
  REQUIRE(job.ok());
  core::JobContext context;
  context.call = core::CallContext{"req-edges", "job-edges", nullptr};
  auto output = (*job)->Run(context);
  INFO(output.status().ToString());
  REQUIRE(output.ok());
  return Run{output->body, worker.sequences};
}

std::string Compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

rapidjson::Document Parse(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(body.c_str());
  REQUIRE(doc.IsObject());
  return doc;
}

// An item written compactly without its window bookkeeping (token_index, window_index: a
// token's place in its window, which are drawn over the widened sequence and so differ between
// two requests that widen differently; everything else must be the same bytes).
std::string Scored(const rapidjson::Value& item) {
  rapidjson::Document copy;
  copy.CopyFrom(item, copy.GetAllocator());
  copy.RemoveMember("token_index");
  copy.RemoveMember("window_index");
  return Compact(copy);
}

// The items of `array` lying inside the contig's [b, e).
std::vector<std::string> ItemsInside(const rapidjson::Value& array, int64_t b, int64_t e) {
  std::vector<std::string> out;
  for (const auto& item : array.GetArray()) {
    if (item["start"].GetInt64() >= b && item["end"].GetInt64() <= e) out.push_back(Scored(item));
  }
  return out;
}

std::vector<std::string> AllItems(const rapidjson::Value& array) {
  std::vector<std::string> out;
  for (const auto& item : array.GetArray()) out.push_back(Scored(item));
  return out;
}

// A GFF3 row without its ID attribute (a worker's record ids are numbered over what it was sent).
std::string WithoutId(const std::string& row) {
  const size_t id = row.find("\tID=");
  if (id == std::string::npos) return row;
  const size_t end = row.find(';', id);
  return row.substr(0, id + 1) + (end == std::string::npos ? "" : row.substr(end + 1));
}

// The data rows of a text track whose [start, end) (0-based columns 2, 3; GFF3: 1-based 4, 5)
// lie inside the contig's [b, e).
std::vector<std::string> RowsInside(const std::string& text, int64_t b, int64_t e, bool gff3) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("track", 0) == 0) continue;
    std::vector<std::string> f;
    std::istringstream cols(line);
    for (std::string col; std::getline(cols, col, '\t');) f.push_back(col);
    REQUIRE(f.size() >= 3);
    const int64_t start = gff3 ? std::stoll(f[3]) - 1 : std::stoll(f[1]);
    const int64_t end = gff3 ? std::stoll(f[4]) : std::stoll(f[2]);
    if (start >= b && end <= e) out.push_back(gff3 ? WithoutId(line) : line);
  }
  return out;
}

}  // namespace

TEST_CASE("interval edges: splice scores inside an interval are those of the widened interval "
          "cut to it byte for byte on both strands",
          "[interval][edges]") {
  // chr20:20,001-21,000 (0-based [20000, 21000)); widened by the context on each side.
  const int64_t b = 20000, e = 21000;
  for (char strand : {'+', '-'}) {
    INFO("strand " << strand);
    const Run narrow = RunInterval(Task::kSplice, b + 1, e, strand);
    const Run wide = RunInterval(Task::kSplice, b + 1 - kContextBp, e + kContextBp, strand);
    // The worker saw the reference around the interval, not N.
    REQUIRE(narrow.sequences.size() == 1);
    const std::string plus = TheGenome().bases.substr(b - kContextBp, e - b + 2 * kContextBp);
    CHECK(narrow.sequences[0] == (strand == '-' ? ReverseComplement(plus) : plus));
    const auto n = Parse(narrow.body);
    const auto w = Parse(wide.body);
    const std::vector<std::string> sites = AllItems(n["data"]["sites"]);
    CHECK(sites.size() > 20);  // the comparison compares something
    CHECK(sites == ItemsInside(w["data"]["sites"], b, e));
    // Sites right at both edges are reported (scored from the reference's flanks).
    int64_t first = e, last = b;
    for (const auto& site : n["data"]["sites"].GetArray()) {
      first = std::min(first, site["start"].GetInt64());
      last = std::max(last, site["end"].GetInt64());
    }
    CHECK(first - b < 100);
    CHECK(e - last < 100);
    CHECK(Compact(n["data"]["tracks"]).size() > 0);
    CHECK(RowsInside(n["data"]["tracks"]["donor"].GetString(), b, e, false) ==
          RowsInside(w["data"]["tracks"]["donor"].GetString(), b, e, false));
    CHECK(RowsInside(n["data"]["tracks"]["donor"].GetString(), b, e, false).size() ==
          sites.size());
    // Every window listed overlaps the interval and counts the sites it lists.
    for (const auto& window : n["data"]["window_details"].GetArray()) {
      CHECK(window["start"].GetInt64() >= b);
      CHECK(window["end"].GetInt64() <= e);
    }
    CHECK(n["meta"]["sequence_length"].GetInt64() == e - b);
    // The text formats: BED and GFF3 as the widened interval's cut to the interval.
    for (OutputFormat format : {OutputFormat::kBed, OutputFormat::kGff3}) {
      const bool gff3 = format == OutputFormat::kGff3;
      const Run text = RunInterval(Task::kSplice, b + 1, e, strand, format);
      const Run wide_text =
          RunInterval(Task::kSplice, b + 1 - kContextBp, e + kContextBp, strand, format);
      const std::vector<std::string> rows = RowsInside(text.body, 0, kContigBp, gff3);
      CHECK(rows.size() == sites.size());
      CHECK(rows == RowsInside(wide_text.body, b, e, gff3));
    }
  }
}

TEST_CASE("interval edges: at a contig's end the worker gets no flank there and N remains",
          "[interval][edges]") {
  const std::string& contig = TheGenome().bases;
  // The first 1,000 bases: the flank after only.
  const Run start = RunInterval(Task::kSplice, 1, 1000, '+');
  REQUIRE(start.sequences.size() == 1);
  CHECK(start.sequences[0] == contig.substr(0, 1000 + kContextBp));
  // The last 1,000 bases: the flank before only.
  const Run end = RunInterval(Task::kSplice, kContigBp - 999, kContigBp, '+');
  REQUIRE(end.sequences.size() == 1);
  CHECK(end.sequences[0] == contig.substr(kContigBp - 1000 - kContextBp));
  // A site next to the contig's first base was scored with N before it: the score of the
  // contig itself, N-padded.
  const auto doc = Parse(start.body);
  const auto& sites = doc["data"]["sites"];
  REQUIRE(sites.Size() > 0);
  const int64_t p = sites[0]["start"].GetInt64();
  REQUIRE(p < kReach);
  CHECK(sites[0]["score"].GetDouble() == ScoreAt(contig, p));
  CHECK(ScoreAt(contig, p) != ScoreAt("A" + contig, p + 1));  // the N changed the score
}

TEST_CASE("interval edges: windows and transcripts straddling an edge are clipped to the "
          "interval with their parts outside dropped",
          "[interval][edges]") {
  const int64_t b = 20000, e = 21000;
  // Promoter windows are drawn from the widened sequence's start: one straddles each edge.
  const auto promoter = Parse(RunInterval(Task::kPromoter, b + 1, e, '+').body);
  const auto& windows = promoter["data"]["window_details"];
  REQUIRE(windows.Size() > 2);
  CHECK(windows[0]["start"].GetInt64() == b);
  CHECK(windows[windows.Size() - 1]["end"].GetInt64() == e);
  for (const auto& window : windows.GetArray()) {
    CHECK(window["start"].GetInt64() >= b);
    CHECK(window["end"].GetInt64() <= e);
    CHECK(window["start"].GetInt64() < window["end"].GetInt64());
  }
  // Widened: [b - 300, e + 300) drawn every 170 bp from b - 300: windows start at b - 300 + 170k;
  // the first inside starts at b - 300 + 340 = b + 40, so [b - 130, b + 40) was clipped to
  // [b, b + 40).
  CHECK(windows[0]["end"].GetInt64() == b + 40);
  const Run bedgraph = RunInterval(Task::kPromoter, b + 1, e, '+', OutputFormat::kBedGraph);
  const std::vector<std::string> rows = RowsInside(bedgraph.body, 0, kContigBp, false);
  REQUIRE(rows.size() == windows.Size());
  CHECK(rows.front().rfind("chr20\t20000\t20040\t", 0) == 0);
  CHECK(RowsInside(bedgraph.body, b, e, false).size() == rows.size());

  // Annotation: the transcripts straddling an edge are clipped to it, parts outside dropped.
  const auto annotation = Parse(RunInterval(Task::kAnnotation, b + 1, e, '+').body);
  const auto& transcripts = annotation["data"]["transcripts"];
  REQUIRE(transcripts.Size() == 3);
  const auto& over_start = transcripts[0];
  CHECK(over_start["start"].GetInt64() == b);
  CHECK(over_start["end"].GetInt64() == kGeneOverStart + kTranscriptBp);
  CHECK(over_start["tss_position"].GetInt64() == kGeneOverStart);  // where the model put it
  REQUIRE(over_start["exons"].Size() == 1);                         // the first exon is outside
  CHECK(over_start["exons"][0]["start"].GetInt64() == kGeneOverStart + 60);
  REQUIRE(over_start["introns"].Size() == 1);
  CHECK(over_start["introns"][0]["start"].GetInt64() == b);
  const auto& inside = transcripts[1];
  CHECK(inside["start"].GetInt64() == kGeneInside);
  CHECK(inside["tss_position"].GetInt64() == kGeneInside);
  CHECK(inside["exons"][1]["end"].GetInt64() == kGeneInside + kTranscriptBp);
  const auto& over_end = transcripts[2];
  CHECK(over_end["start"].GetInt64() == kGeneOverEnd);
  CHECK(over_end["end"].GetInt64() == e);
  CHECK(over_end["exons"].Size() == 1);
  CHECK(over_end["introns"].Size() == 0);
  CHECK(over_end["polya_position"].GetInt64() == kGeneOverEnd + kTranscriptBp - 1);
  const std::string gff3 = RunInterval(Task::kAnnotation, b + 1, e, '+', OutputFormat::kGff3).body;
  INFO(gff3);
  // gene, mRNA and the exon inside of each straddling transcript; all four of the inside one.
  const std::vector<std::string> records = RowsInside(gff3, b, e, true);
  CHECK(records.size() == 10);
  CHECK(RowsInside(gff3, 0, kContigBp, true).size() == records.size());  // nothing outside
  CHECK(gff3.find("\tgene\t20001\t20050\t") != std::string::npos);
  CHECK(gff3.find("\texon\t20011\t20050\t") != std::string::npos);
  CHECK(gff3.find("\tmRNA\t20961\t21000\t") != std::string::npos);
  CHECK(gff3.find("tss_position=" + std::to_string(kGeneInside)) != std::string::npos);
  CHECK(gff3.find("##sequence-region chr20 20001 21000") != std::string::npos);
  const std::string bed = RunInterval(Task::kAnnotation, b + 1, e, '+', OutputFormat::kBed).body;
  const std::vector<std::string> bed_rows = RowsInside(bed, b, e, false);
  REQUIRE(bed_rows.size() == 3);
  CHECK(RowsInside(bed, 0, kContigBp, false).size() == 3);
  // BED12: the row spans its blocks inside (the first exon and the intron are cut away).
  CHECK(bed_rows[0] == "chr20\t20010\t20050\tt0\t0\t+\t20010\t20010\t0\t1\t40,\t0,");
  CHECK(bed_rows[1].rfind("chr20\t20400\t20500\t", 0) == 0);
  CHECK(bed_rows[2] == "chr20\t20960\t21000\tt2\t0\t+\t20960\t20960\t0\t1\t40,\t0,");
  // A wider interval holds the straddling transcripts whole.
  const auto wide = Parse(RunInterval(Task::kAnnotation, b - 99, e + 100, '+').body);
  REQUIRE(wide["data"]["transcripts"].Size() == 3);
  CHECK(wide["data"]["transcripts"][0]["start"].GetInt64() == kGeneOverStart);
  CHECK(wide["data"]["transcripts"][0]["exons"].Size() == 2);
}

TEST_CASE("interval edges: cutting text clips rows and records and keeps headers",
          "[interval][edges]") {
  const std::string gff = "##gff-version 3\n##sequence-region s 1 500\n"
                          "s\tx\tgene\t20\t90\t.\t+\t.\tID=g0\n"
                          "s\tx\tgene\t90\t150\t.\t+\t.\tID=g1\n"
                          "s\tx\tmRNA\t90\t150\t.\t+\t.\tID=m1;Parent=g1\n"
                          "s\tx\texon\t120\t150\t.\t+\t.\tParent=m1\n"
                          "s\tx\tgene\t200\t300\t.\t+\t.\tID=g2\n"
                          "s\tx\texon\t200\t300\t.\t+\t.\tParent=g2;tss_position=199\n";
  // [100, 400) of the sequence: g0 lies before it, g1 starts before it and is clipped.
  CHECK(CutGff3Text(gff, 100, 300) == "##gff-version 3\n##sequence-region s 1 300\n"
                                      "s\tx\tgene\t1\t50\t.\t+\t.\tID=g1\n"
                                      "s\tx\tmRNA\t1\t50\t.\t+\t.\tID=m1;Parent=g1\n"
                                      "s\tx\texon\t20\t50\t.\t+\t.\tParent=m1\n"
                                      "s\tx\tgene\t100\t200\t.\t+\t.\tID=g2\n"
                                      "s\tx\texon\t100\t200\t.\t+\t.\tParent=g2;tss_position=99\n");
  const std::string bed = "track name=x\ns\t50\t150\ta\t0\t+\t60\t140\ns\t150\t250\tb\t0\t+\n"
                          "s\t390\t420\tc\t0\t-\ns\t10\t90\td\n";
  CHECK(CutBedText(bed, 100, 300) ==
        "track name=x\ns\t0\t50\ta\t0\t+\t0\t40\ns\t50\t150\tb\t0\t+\ns\t290\t300\tc\t0\t-\n");
  // BED12: blocks clipped, those outside dropped, the row spans what is left; one with only an
  // intron inside is dropped.
  const std::string bed12 = "s\t40\t160\tt\t0\t+\t50\t150\t0\t3\t20,20,20,\t0,50,100,\n"
                            "s\t60\t440\tu\t0\t+\t60\t60\t0\t2\t20,20,\t0,360,\n";
  CHECK(CutBedText(bed12, 100, 300) == "s\t0\t60\tt\t0\t+\t0\t50\t0\t2\t10,20,\t0,40,\n");
}

TEST_CASE("interval edges: the flank read is the model's context window or a flanked model's "
          "flank and 0 for a model nobody lists",
          "[interval][edges]") {
  pb::ModelInfo windowed;
  windowed.set_id("promoter-w");
  windowed.set_context_window_bp(2000);
  pb::ModelInfo flanked;
  flanked.set_id("splice-f");
  flanked.set_context_window_bp(15000);
  flanked.set_flank_bp(1000);
  core::ModelCatalogue catalogue;
  catalogue.SetModels(Task::kPromoter, {windowed});
  catalogue.SetModels(Task::kSplice, {flanked});
  CHECK(ModelContextBp(Task::kPromoter, "promoter-w", &catalogue, nullptr) == 2000);
  CHECK(ModelContextBp(Task::kSplice, "splice-f", &catalogue, nullptr) == 1000);
  // Without a catalogue, the backend's listing; nothing lists it: no flank.
  class Listing : public ContextWorker {
   public:
    StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override {
      pb::ModelInfo info;
      info.set_id("chromatin-l");
      info.set_context_window_bp(1000);
      return std::vector<pb::ModelInfo>{info};
    }
  } listing;
  CHECK(ModelContextBp(Task::kChromatin, "chromatin-l", nullptr, &listing) == 1000);
  CHECK(ModelContextBp(Task::kChromatin, "chromatin-other", &catalogue, &listing) == 0);
  ContextWorker unlisted;
  CHECK(ModelContextBp(Task::kPromoter, "promoter-x", &catalogue, &unlisted) == 0);
}
