// Interval input end to end (issue 25, scope 2) over real HTTP: a gateway and a runner of the
// integration service (same redis-server, a database of their own, the service's workers) whose
// runner holds the GRCh37 chr20 reference (scripts/build-catalogue, Debian vt-examples). Every
// task and find-genes by interval, each answer's positions checked against the same task run
// on the bases cut from the reference here with the model's context on each side and cut back
// to the interval (shifted; reverse-complemented for '-'), the text
// tracks through `bedtools complement` with a chr20 genome file and `gt gff3validator`, the
// contig aliases, and hostile intervals. Every answer is checked against the served OpenAPI
// document (GatewayRequest). Skips with a message when the Debian packages cannot be had.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "common/sequence.h"
#include "runner/genome/reference_genome.h"
#include "tests/integration/reference_stack.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/test_files.h"
#include "tests/support/variant_data.h"

using namespace dnaserve::testing;

namespace {

struct IntervalService : ReferenceStack {
  int64_t chr20_length = 0;
  std::string genome_file;  // bedtools: "chr20\t<length>"

  HttpResult Predict(const std::string& task, const std::string& body,
                     const std::string& format = "") const {
    return Post("/v1/tasks/" + task + "/predict" + (format.empty() ? "" : "?format=" + format),
                body);
  }
};

std::unique_ptr<IntervalService> MakeIntervalService(std::string* reason) {
  auto s = std::make_unique<IntervalService>();
  if (!s->Open("dnaserve-interval-it", reason)) return nullptr;
  s->chr20_length = s->reference->ContigLength("20").value_or(0);
  s->genome_file = s->dir + "/chr20.genome";
  WriteFile(s->genome_file, "chr20\t" + std::to_string(s->chr20_length) + "\n");
  // Database 3, the service's workers: the integration service's runner holds no reference.
  if (!s->Start(3, false, "annotation", reason)) return nullptr;
  return s;
}

#define REQUIRE_INTERVAL_SERVICE(var) \
  REQUIRE_SHARED_FIXTURE(IntervalService, var, MakeIntervalService)

constexpr int64_t kStart = 5750001;  // chr20:5,750,001-5,760,000 (1-based inclusive)
constexpr int64_t kEnd = 5760000;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// The task's options making it report something on any model (thresholds at 0 or low).
std::string OptionsFor(const std::string& task) {
  if (task == "promoter") return R"({"threshold": 0.0})";
  if (task == "splice") return R"({"threshold": 0.01})";
  if (task == "chromatin") return R"({"threshold": 0.5})";
  if (task == "expression") return R"({"description": "adult liver"})";
  return "{}";
}

std::string IntervalBody(const std::string& task, const std::string& interval) {
  return "{\"interval\": " + interval + ", \"options\": " + OptionsFor(task) + "}";
}

std::string SequenceBody(const std::string& task, const std::string& bases,
                         const std::string& extra = "") {
  return "{\"sequence\": " + Quoted(bases) + ", \"sequence_name\": \"chr20\", \"options\": " +
         OptionsFor(task) + extra + "}";
}

const rapidjson::Value& At(const rapidjson::Value& v, const char* key) {
  REQUIRE(v.IsObject());
  REQUIRE(v.HasMember(key));
  return v[key];
}

int64_t By(const rapidjson::Value& v, const char* key) { return At(v, key).GetInt64(); }

// An item of the answer for the widened bases, cut to the interval: its span in the interval's
// own coordinates [0, length).
struct CutItem {
  int64_t start = 0;
  int64_t end = 0;
  const rapidjson::Value* item = nullptr;
};

// The widened answer's items cut to [before, before + length) as the runner cuts an interval's
// (runner/workflows/interval_edges.h): items overlapping it, clipped to it (`whole`: only those
// inside it).
std::vector<CutItem> CutToInterval(const rapidjson::Value& items, int64_t before, int64_t length,
                                   bool whole) {
  REQUIRE(items.IsArray());
  std::vector<CutItem> out;
  const int64_t lo = before, hi = before + length;
  for (const auto& item : items.GetArray()) {
    const int64_t s = By(item, "start"), t = By(item, "end");
    if (whole ? (s < lo || t > hi) : (t <= lo || s >= hi)) continue;
    out.push_back(CutItem{std::max(s, lo) - lo, std::min(t, hi) - lo, &item});
  }
  return out;
}

// Each item's [start, end) of the interval answer is the widened sequence answer's cut to the
// interval, shifted: [B + a, B + b) on '+', [E - b, E - a) on '-' (B, E: the interval's 0-based
// half-open bounds). Other numbers (scores) are the same run's and must agree.
void CheckShifted(const std::vector<CutItem>& by_sequence, const rapidjson::Value& by_interval,
                  int64_t b, int64_t e, bool minus, const char* score_key) {
  REQUIRE(by_interval.IsArray());
  REQUIRE(by_sequence.size() == by_interval.Size());
  for (rapidjson::SizeType i = 0; i < by_interval.Size(); ++i) {
    const int64_t s = by_sequence[i].start, t = by_sequence[i].end;
    INFO("item " << i);
    CHECK(By(by_interval[i], "start") == (minus ? e - t : b + s));
    CHECK(By(by_interval[i], "end") == (minus ? e - s : b + t));
    if (score_key != nullptr) {
      CHECK(At(by_interval[i], score_key).GetDouble() ==
            Approx(At(*by_sequence[i].item, score_key).GetDouble()).margin(1e-5));
    }
  }
}

// The context window of the task's default model (GET /v1/tasks/{task}/models): what the runner
// reads on each side of an interval.
int64_t ContextBp(const IntervalService& s, const std::string& task) {
  auto listed = GatewayRequest("GET", s.base, "/v1/tasks/" + task + "/models");
  REQUIRE(listed.status == 200);
  auto doc = ParseJson(listed.body);
  const std::string default_model = At(*doc, "default_model").GetString();
  for (const auto& m : At(*doc, "models").GetArray()) {
    if (default_model == At(m, "name").GetString()) {
      return By(At(m, "bio_spec"), "context_window_bp");
    }
  }
  FAIL("no default model listed for " << task);
  return 0;
}


// The array of positioned items each task reports and the score each item carries.
struct TaskItems {
  const char* array;
  const char* score;
};
const std::map<std::string, TaskItems>& ItemsByTask() {
  static const std::map<std::string, TaskItems> items = {
      {"promoter", {"window_details", "score"}}, {"splice", {"sites", "score"}},
      {"enhancer", {"windows", "dev"}},          {"chromatin", {"windows", nullptr}},
      {"annotation", {"transcripts", "score"}},
  };
  return items;
}

// `bedtools complement` against the chr20 genome file: it refuses a contig the file lacks and
// rows out of order, and warns about a row past the contig's end.
void CheckWithBedtools(const IntervalService& s, const std::string& text, const std::string& name) {
  // One file per bedGraph track: each track is sorted on its own.
  std::vector<std::string> parts(1);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("track", 0) == 0 && !parts.back().empty()) parts.emplace_back();
    parts.back() += line + "\n";
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string path = s.dir + "/" + name + "." + std::to_string(i) + ".txt";
    WriteFile(path, parts[i]);
    std::string out;
    const int rc = RunCommand({"bedtools", "complement", "-i", path, "-g", s.genome_file}, &out);
    INFO(name << " part " << i << ": " << out.substr(0, 2000));
    CHECK(rc == 0);
    CHECK(out.find("WARNING") == std::string::npos);
    CHECK(out.find("rror") == std::string::npos);
  }
}

void CheckWithGt(const IntervalService& s, const std::string& text, const std::string& name) {
  const std::string path = s.dir + "/" + name + ".gff3";
  WriteFile(path, text);
  std::string out;
  const int rc = RunCommand({"gt", "gff3validator", path}, &out);
  INFO(name << ": " << out.substr(0, 2000) << "\n" << text.substr(0, 2000));
  CHECK(rc == 0);
}

}  // namespace

TEST_CASE("interval: every task on chr20:5,750,001-5,760,000 is the same task on the bases cut "
          "with the model's context on each side and cut back to the interval shifted onto the "
          "contig", "[interval]") {
  REQUIRE_INTERVAL_SERVICE(s);
  const std::string bases = s->Cut(kStart, kEnd);
  REQUIRE(bases.size() == 10000);
  for (const auto& [task, items] : ItemsByTask()) {
    INFO(task);
    const int64_t context = ContextBp(*s, task);
    INFO("context " << context);
    REQUIRE(context > 0);
    auto by_sequence =
        s->Predict(task, SequenceBody(task, s->Cut(kStart - context, kEnd + context)));
    REQUIRE(by_sequence.status == 200);
    auto by_interval =
        s->Predict(task, IntervalBody(task, R"({"region": "chr20:5,750,001-5,760,000"})"));
    INFO(by_interval.body.substr(0, 600));
    REQUIRE(by_interval.status == 200);
    auto seq = ParseJson(by_sequence.body);
    auto iv = ParseJson(by_interval.body);
    const std::vector<CutItem> seq_items =
        CutToInterval(At(At(*seq, "data"), items.array), context, 10000, false);
    CHECK(seq_items.size() > 0);  // the comparison below compares something
    CheckShifted(seq_items, At(At(*iv, "data"), items.array), kStart - 1, kEnd, false, items.score);
    const auto& echo = At(At(*iv, "meta"), "interval");
    CHECK(std::string(At(echo, "assembly").GetString()) == "GRCh37");
    CHECK(std::string(At(echo, "contig").GetString()) == "chr20");
    CHECK(std::string(At(echo, "reference_contig").GetString()) == "20");
    CHECK(By(echo, "start") == kStart);
    CHECK(By(echo, "end") == kEnd);
    CHECK(By(echo, "length") == 10000);
    CHECK(By(At(*iv, "meta"), "sequence_length") == 10000);
    // The sequence answer is unchanged by the feature: record coordinates, no echo.
    CHECK_FALSE(At(*seq, "meta").HasMember("interval"));
    if (task == "annotation") {
      const auto& i_tx = At(At(*iv, "data"), "transcripts");
      for (rapidjson::SizeType t = 0; t < i_tx.Size(); ++t) {
        const rapidjson::Value& s_tx = *seq_items[t].item;
        CHECK(By(i_tx[t], "tss_position") == By(s_tx, "tss_position") - context + kStart - 1);
        CHECK(std::string(At(i_tx[t], "strand").GetString()) == At(s_tx, "strand").GetString());
      }
    }
  }
  // Expression: the 9,198 bp window centred on the interval's middle.
  const int64_t tss = 5000;
  auto seq = s->Predict("expression", SequenceBody("expression", bases,
                                                   ", \"tss_index\": " + std::to_string(tss)));
  REQUIRE(seq.status == 200);
  auto iv = s->Predict("expression", "{\"interval\": {\"contig\": \"chr20\", \"start\": " +
                                         std::to_string(kStart) + ", \"end\": " +
                                         std::to_string(kEnd) + "}, \"tss_index\": " +
                                         std::to_string(tss) + ", \"options\": " +
                                         OptionsFor("expression") + "}");
  INFO(iv.body.substr(0, 600));
  REQUIRE(iv.status == 200);
  auto sd = ParseJson(seq.body);
  auto id = ParseJson(iv.body);
  const auto& s_window = At(At(At(*sd, "data"), "input"), "scored_window");
  const auto& i_window = At(At(At(*id, "data"), "input"), "scored_window");
  CHECK(i_window[0].GetInt64() == s_window[0].GetInt64() + kStart - 1);
  CHECK(i_window[1].GetInt64() == s_window[1].GetInt64() + kStart - 1);
  CHECK(At(At(At(*id, "data"), "prediction"), "expression").GetDouble() ==
        Approx(At(At(At(*sd, "data"), "prediction"), "expression").GetDouble()).margin(1e-5));
}

TEST_CASE("interval: strand '-' analyses the reverse complement and reports on '+' coordinates",
          "[interval]") {
  REQUIRE_INTERVAL_SERVICE(s);
  for (const char* task : {"splice", "promoter", "annotation"}) {
    INFO(task);
    const TaskItems items = ItemsByTask().at(task);
    const int64_t context = ContextBp(*s, task);
    const std::string minus_bases =
        dnaserve::ReverseComplement(s->Cut(kStart - context, kEnd + context));
    auto seq = s->Predict(task, SequenceBody(task, minus_bases));
    REQUIRE(seq.status == 200);
    auto iv = s->Predict(task, IntervalBody(task, R"({"contig": "chr20", "start": 5750001, )"
                                                  R"("end": 5760000, "strand": "-"})"));
    INFO(iv.body.substr(0, 600));
    REQUIRE(iv.status == 200);
    auto sd = ParseJson(seq.body);
    auto id = ParseJson(iv.body);
    const std::vector<CutItem> seq_items =
        CutToInterval(At(At(*sd, "data"), items.array), context, 10000, false);
    CheckShifted(seq_items, At(At(*id, "data"), items.array), kStart - 1, kEnd, true, items.score);
    CHECK(std::string(At(At(At(*id, "meta"), "interval"), "strand").GetString()) == "-");
    if (std::string(task) == "annotation") {
      const auto& i_tx = At(At(*id, "data"), "transcripts");
      for (rapidjson::SizeType t = 0; t < i_tx.Size(); ++t) {
        const rapidjson::Value& s_tx = *seq_items[t].item;
        const std::string strand = At(s_tx, "strand").GetString();
        CHECK(std::string(At(i_tx[t], "strand").GetString()) == (strand == "+" ? "-" : "+"));
        CHECK(By(i_tx[t], "tss_position") ==
              kEnd - 1 - (By(s_tx, "tss_position") - context));
      }
    }
  }
}

TEST_CASE("interval: BED, bedGraph and GFF3 tracks are valid on chr20 for bedtools and gt",
          "[interval]") {
  REQUIRE_INTERVAL_SERVICE(s);
  struct Track {
    const char* task;
    const char* format;
  };
  for (const char* strand : {"+", "-"}) {
    const std::string interval = std::string(R"({"region": "chr20:5,750,001-5,760,000", )") +
                                 "\"strand\": \"" + strand + "\"}";
    // Every text format each task offers (common/task.cc SupportedFormats).
    for (const Track& t : {Track{"promoter", "bed"}, Track{"promoter", "bedgraph"},
                           Track{"splice", "bed"}, Track{"enhancer", "bedgraph"},
                           Track{"chromatin", "bed"}, Track{"annotation", "bed"},
                           Track{"splice", "gff3"}, Track{"annotation", "gff3"}}) {
      const std::string name = std::string(t.task) + "-" + t.format + (*strand == '-' ? "-minus" : "");
      INFO(name);
      auto r = s->Predict(t.task, IntervalBody(t.task, interval), t.format);
      INFO(r.body.substr(0, 400));
      REQUIRE(r.status == 200);
      CHECK(r.body.find("chr20\t") != std::string::npos);
      CHECK(r.body.find("sequence\t") == std::string::npos);
      if (std::string(t.format) == "gff3") {
        CHECK(r.body.find("##sequence-region chr20 5750001 5760000") != std::string::npos);
        CheckWithGt(*s, r.body, name);
      } else {
        CheckWithBedtools(*s, r.body, name);
      }
    }
    // The per-position tracks inside the JSON answers (data.tracks: bedGraph each).
    for (const char* task : {"splice", "enhancer", "chromatin"}) {
      auto r = s->Predict(task, IntervalBody(task, interval));
      REQUIRE(r.status == 200);
      auto doc = ParseJson(r.body);
      const auto& tracks = At(At(*doc, "data"), "tracks");
      CHECK(tracks.MemberCount() > 0);
      for (const auto& m : tracks.GetObject()) {
        const std::string name = std::string(task) + "-json-" + m.name.GetString() +
                                 (*strand == '-' ? "-minus" : "");
        INFO(name);
        CheckWithBedtools(*s, m.value.GetString(), name);
      }
    }
  }
}

TEST_CASE("interval: chr20, 20 and NC_000020.10 name one contig, listed in GET /v1/genomes",
          "[interval]") {
  REQUIRE_INTERVAL_SERVICE(s);
  std::map<std::string, std::string> sites;
  for (const char* contig : {"chr20", "20", "NC_000020.10", "Chr20"}) {
    auto r = s->Predict("splice", IntervalBody("splice", std::string("{\"contig\": \"") + contig +
                                                             "\", \"start\": 5750001, \"end\": 5752000}"));
    INFO(contig << ": " << r.body.substr(0, 400));
    REQUIRE(r.status == 200);
    auto doc = ParseJson(r.body);
    CHECK(std::string(At(At(At(*doc, "meta"), "interval"), "contig").GetString()) == contig);
    CHECK(std::string(At(At(At(*doc, "meta"), "interval"), "reference_contig").GetString()) == "20");
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    At(At(*doc, "data"), "sites").Accept(writer);
    sites[contig] = buffer.GetString();
  }
  CHECK(sites["chr20"] == sites["20"]);
  CHECK(sites["chr20"] == sites["NC_000020.10"]);
  CHECK(sites["chr20"] == sites["Chr20"]);
  CHECK(sites["chr20"].size() > 2);

  const rapidjson::Value* chr20 = nullptr;
  std::shared_ptr<rapidjson::Document> genomes;
  for (int i = 0; i < 600 && chr20 == nullptr; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto r = GatewayRequest("GET", s->base, "/v1/genomes");
    REQUIRE(r.status == 200);
    genomes = ParseJson(r.body);
    for (const auto& a : (*genomes)["data"]["assemblies"].GetArray()) {
      if (std::string(a["name"].GetString()) == "GRCh37") chr20 = &a["contigs"][0];
    }
  }
  REQUIRE(chr20 != nullptr);
  std::vector<std::string> aliases;
  for (const auto& a : (*chr20)["aliases"].GetArray()) aliases.emplace_back(a.GetString());
  CHECK(aliases == std::vector<std::string>{"chr20", "NC_000020.10"});
}

TEST_CASE("interval: find-genes by interval, sync and async, in genome coordinates",
          "[interval]") {
  REQUIRE_INTERVAL_SERVICE(s);
  const std::string path = "/v1/workflows/find-genes-and-predict-expression";
  const std::string bases = s->Cut(kStart, kEnd);
  auto seq = s->Post(path, "{\"sequence\": " + Quoted(bases) +
                               ", \"options\": {\"description\": \"adult liver\"}}");
  REQUIRE(seq.status == 200);
  const std::string body =
      R"({"interval": {"region": "chr20:5,750,001-5,760,000"}, "options": {"description": "adult liver"}})";
  auto iv = s->Post(path, body);
  INFO(iv.body.substr(0, 600));
  REQUIRE(iv.status == 200);
  auto sd = ParseJson(seq.body);
  auto id = ParseJson(iv.body);
  const auto& s_genes = At(At(*sd, "data"), "expression_predictions");
  const auto& i_genes = At(At(*id, "data"), "expression_predictions");
  REQUIRE(s_genes.Size() == i_genes.Size());
  for (rapidjson::SizeType g = 0; g < s_genes.Size(); ++g) {
    CHECK(By(i_genes[g], "tss_position") == By(s_genes[g], "tss_position") + kStart - 1);
  }
  // find-genes' annotation stage sees the interval's own bases (its flanks serve the
  // expression windows): every transcript is the sequence answer's.
  CheckShifted(CutToInterval(At(At(At(*sd, "data"), "annotation"), "transcripts"), 0, 10000, true),
               At(At(At(*id, "data"), "annotation"), "transcripts"), kStart - 1, kEnd, false,
               "score");
  CHECK(By(At(At(*id, "meta"), "interval"), "start") == kStart);
  const std::string gff3 = At(At(At(At(*id, "data"), "annotation"), "formats"), "gff3").GetString();
  CHECK(gff3.find("##sequence-region chr20 5750001 5760000") != std::string::npos);
  CheckWithGt(*s, gff3, "find-genes");

  // Async: 202, then the job's result is the same answer's shape with the echo.
  auto accepted = s->Post(path, body, {"Prefer: respond-async"});
  REQUIRE(accepted.status == 202);
  const std::string job_id = At(At(*ParseJson(accepted.body), "data"), "job_id").GetString();
  HttpResult done;
  for (int i = 0; i < 600; ++i) {
    done = GatewayRequest("GET", s->base, "/v1/tasks/jobs/" + job_id,
                          {"Authorization: Bearer " + s->svc->keys().alice});
    if (done.status != 202) break;  // 202 while it runs
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  INFO(done.body.substr(0, 600));
  CHECK(done.status == 200);
  CHECK(By(At(At(*ParseJson(done.body), "meta"), "interval"), "end") == kEnd);
}

TEST_CASE("interval: hostile intervals are clear 4xx errors in the envelope", "[interval]") {
  REQUIRE_INTERVAL_SERVICE(s);
  struct Case {
    std::string body;
    long status;
    std::string loc;  // the first error's loc, joined by '.'
  };
  const std::string past_end = std::to_string(s->chr20_length + 1);
  const std::vector<Case> cases = {
      {R"({"interval": {"assembly": "GRCh38", "region": "chr20:1-1000"}})", 422,
       "body.interval.assembly"},
      {R"({"interval": {"region": "chr99:1-1000"}})", 422, "body.interval.contig"},
      {R"({"interval": {"region": "NC_000020.11:1-1000"}})", 422, "body.interval.contig"},
      {"{\"interval\": {\"contig\": \"chr20\", \"start\": " +
           std::to_string(s->chr20_length - 500) + ", \"end\": " + past_end + "}}",
       422, "body.interval.end"},
      {R"({"interval": {"region": "chr20:2,000-1,000"}})", 422, "body.interval.region"},
      {R"({"interval": {"region": "chr20:1-500,001"}})", 422, "body.interval"},
      {R"({"interval": {"region": "chr20:1-1e3"}})", 422, "body.interval.region"},
      {R"({"interval": {"region": "chr20"}})", 422, "body.interval.region"},
      {R"({"interval": {"region": "chr20:1-1000"}, "sequence": ")" + std::string(200, 'A') +
           "\"}",
       422, "body"},
      {R"({"options": {}})", 422, "body.sequence"},
      {R"({"interval": {"region": "chr20:1-1000", "strand": "minus"}})", 422,
       "body.interval.strand"},
      {R"({"interval": {"region": "chr20:1-1000"}, "sequence_name": "x"})", 422,
       "body.sequence_name"},
      {R"({"interval": "chr20:1-1000"})", 422, "body.interval"},
      {R"({"interval": {"region": "chr20:1-1000")", 400, ""},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    auto r = s->Predict("splice", c.body);
    INFO(r.body.substr(0, 600));
    CHECK(r.status == c.status);
    auto doc = ParseJson(r.body);
    REQUIRE(doc->HasMember("error"));
    if (c.loc.empty()) continue;
    CHECK(FirstErrorLocation(*doc) == c.loc);
  }
  // Text tracks stay synchronous for intervals too.
  auto text_async = s->Post("/v1/tasks/splice/predict?format=bed",
                            R"({"interval": {"region": "chr20:1-1000"}})",
                            {"Prefer: respond-async"});
  CHECK(text_async.status == 400);
}

TEST_CASE("interval: the CLI's --region / --regions and the SDK's region= ask the service",
          "[interval][clients]") {
  REQUIRE_INTERVAL_SERVICE(s);
  const std::map<std::string, std::string> env = {
      {"PYTHONPATH", SourceDir() + "/clients/python"},
      {"DNASERVE_URL", s->base},
      {"DNASERVE_API_KEY", s->svc->keys().alice},
      {"HOME", s->dir},
      {"XDG_CONFIG_HOME", s->dir + "/.config"},
      {"PYTHONDONTWRITEBYTECODE", "1"}};
  auto cli = [&](std::vector<std::string> args, std::string* out) {
    std::vector<std::string> argv = {"/usr/bin/python3", "-c",
                                     "import sys; from dnaserve_client.cli import main; "
                                     "sys.exit(main(sys.argv[1:]))"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, out, env);
  };
  std::string out;
  const std::string bed = s->dir + "/cli-splice.bed";
  int rc = cli({"predict", "splice", "--region", "chr20:5,750,001-5,752,000", "--threshold",
                "0.01", "--format", "bed", "-q", "-o", bed},
               &out);
  INFO(out);
  REQUIRE(rc == 0);
  const std::string text = ReadFile(bed);
  CHECK(text.find("chr20\t575") != std::string::npos);
  CheckWithBedtools(*s, text, "cli-splice");

  // A BED file of regions (0-based starts; the second row on '-'): one JSON line each.
  const std::string regions = s->dir + "/regions.bed";
  WriteFile(regions, "chr20\t5750000\t5752000\ta\t0\t+\nchr20\t5760000\t5761000\tb\t0\t-\n");
  const std::string json = s->dir + "/cli-promoter.jsonl";
  rc = cli({"predict", "promoter", "--regions", regions, "-q", "-o", json}, &out);
  INFO(out);
  REQUIRE(rc == 0);
  std::istringstream lines(ReadFile(json));
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  REQUIRE(rows.size() == 2);
  auto first = ParseJson(rows[0]);
  auto second = ParseJson(rows[1]);
  CHECK(By(At(At(*first, "meta"), "interval"), "start") == 5750001);
  CHECK(std::string(At(At(At(*second, "meta"), "interval"), "strand").GetString()) == "-");
  CHECK(By(At(At(*second, "meta"), "interval"), "end") == 5761000);

  // The SDK: region= and interval= are the same request.
  const std::string script =
      "import json, os\n"
      "from dnaserve_client import Client\n"
      "c = Client(os.environ['DNASERVE_URL'], os.environ['DNASERVE_API_KEY'])\n"
      "a = c.predict('enhancer', region='chr20:5,750,001-5,751,000')\n"
      "b = c.predict('enhancer', interval={'contig': '20', 'start': 5750001, 'end': 5751000})\n"
      "print(json.dumps([a.meta['interval'], b.meta['interval'],\n"
      "                  a.data['windows'] == b.data['windows']]))\n";
  rc = RunCommand({"/usr/bin/python3", "-c", script}, &out, env, /*drop_stderr=*/true);
  INFO(out);
  REQUIRE(rc == 0);
  auto sdk = ParseJson(out);
  CHECK(std::string(At((*sdk)[0], "contig").GetString()) == "chr20");
  CHECK(std::string(At((*sdk)[1], "contig").GetString()) == "20");
  CHECK(By((*sdk)[0], "start") == 5750001);
  CHECK((*sdk)[2].GetBool());
}

TEST_CASE("interval: the MCP prediction tools take an interval", "[interval][mcp]") {
  REQUIRE_INTERVAL_SERVICE(s);
  const std::string call =
      R"({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "predict_splice", )"
      R"("arguments": {"interval": {"region": "chr20:5,750,001-5,752,000", "strand": "-"}}}})";
  auto r = HttpRequest("POST", s->base + "/mcp",
                       {"Authorization: Bearer " + s->svc->keys().alice,
                        "Content-Type: application/json", "Accept: application/json",
                        "MCP-Protocol-Version: 2025-06-18"},
                       call, 120);
  INFO(r.body.substr(0, 1500));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const auto& result = At(*doc, "result");
  CHECK_FALSE((result.HasMember("isError") && result["isError"].GetBool()));
  const auto& content = At(result, "structuredContent");
  const auto& interval = At(content, "interval");
  CHECK(std::string(At(interval, "strand").GetString()) == "-");
  CHECK(By(interval, "start") == 5750001);
  CHECK(By(content, "sequence_length") == 2000);
  // A hostile one is the REST error, as a tool result.
  const std::string bad =
      R"({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "predict_splice", )"
      R"("arguments": {"interval": {"region": "chr99:1-2000"}}}})";
  auto refused = HttpRequest("POST", s->base + "/mcp",
                             {"Authorization: Bearer " + s->svc->keys().alice,
                              "Content-Type: application/json", "Accept: application/json",
                              "MCP-Protocol-Version: 2025-06-18"},
                             bad, 120);
  REQUIRE(refused.status == 200);
  auto refused_doc = ParseJson(refused.body);
  CHECK(At(At(*refused_doc, "result"), "isError").GetBool());
  CHECK(refused.body.find("validation_failed") != std::string::npos);
}
