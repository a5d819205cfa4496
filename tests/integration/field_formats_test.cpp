// Every text format the service writes, checked by the field's own tools: GFF3 by
// `gt gff3validator` (with the Sequence Ontology type check), BED and bedGraph by bedtools (sort,
// merge and intersect against a genome file run clean: exit 0 and nothing on stderr). The texts
// come from the real service over HTTP, both as `?format=` responses and as the `data.formats` /
// `data.tracks` strings of the JSON responses, for a real stretch of GRCh37 chr20 around a
// catalogue start site (random DNA when the Debian data cannot be had). The variant workflow's
// VCF is checked by bcftools in variant_test.cpp (view, query and +split-vep -l).
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runner/genome/reference_genome.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/variant_data.h"

namespace dnaserve::testing {
namespace {

// What a tool did: its exit status, stdout and stderr apart ("runs clean" needs both).
struct ToolRun {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

ToolRun Tool(const std::string& dir, const std::vector<std::string>& argv) {
  static int n = 0;
  const std::string err_path = dir + "/stderr-" + std::to_string(++n);
  std::vector<std::string> sh = {"sh", "-c", "exec \"$0\" \"$@\" 2>\"$DNASERVE_TOOL_STDERR\""};
  sh.insert(sh.end(), argv.begin(), argv.end());
  ToolRun run;
  run.rc = RunCommand(sh, &run.out, {{"DNASERVE_TOOL_STDERR", err_path}});
  run.err = ReadText(err_path);
  return run;
}

// Requires the tool to exit 0 with nothing on stderr; its stdout.
#define REQUIRE_CLEAN(run_expr, what)                         \
  [&] {                                                       \
    ToolRun r_ = (run_expr);                                  \
    INFO(what << ": exit " << r_.rc << ", stderr: " << r_.err \
              << "\nstdout: " << r_.out.substr(0, 2000));      \
    REQUIRE(r_.rc == 0);                                      \
    REQUIRE(r_.err.empty());                                  \
    return r_.out;                                            \
  }()

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Columns(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string c; std::getline(in, c, '\t');) out.push_back(c);
  return out;
}

bool IsDataLine(const std::string& line) {
  return !line.empty() && line[0] != '#' && line.rfind("track", 0) != 0 &&
         line.rfind("browser", 0) != 0;
}

size_t DataLines(const std::string& text) {
  size_t n = 0;
  for (const auto& line : Lines(text)) n += IsDataLine(line);
  return n;
}

// The sequence the service sees: its name and bases, with the genome file and the extent BED
// bedtools checks against.
struct Region {
  std::string name;
  std::string bases;
  std::string dir;
  std::string genome() const { return dir + "/genome.txt"; }
  std::string extent() const { return dir + "/extent.bed"; }
};

// 12 kb of chr20 from 2 kb upstream of a catalogue start site, so that annotation and promoter
// have something real to call; random DNA when the Debian data are unavailable.
Region MakeRegion() {
  Region region;
  region.dir = MakeTempDir("dnaserve-field-formats");
  std::string why;
  auto built = BuildCatalogue({}, &why);
  if (built) {
    std::istringstream lines(ReadText(built->catalogue));
    int64_t tss = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream f(line);
      std::string contig;
      f >> contig >> tss;
      if (tss > 10000) break;
    }
    auto reference = variant::ReferenceGenome::Open(built->fasta);
    if (reference.ok() && tss > 10000) {
      auto bases = (*reference)->Fetch("20", tss - 2000, tss + 10000);
      if (bases.ok()) {
        region.name = "chr20_" + std::to_string(tss - 2000);
        region.bases = *bases;
      }
    }
  }
  if (region.bases.empty()) {
    WARN("no real chr20 sequence (" << why << "): random DNA instead");
    region.name = "random12k";
    region.bases = RandomDna(12000, 17);
  }
  WriteText(region.genome(), region.name + "\t" + std::to_string(region.bases.size()) + "\n");
  WriteText(region.extent(), region.name + "\t0\t" + std::to_string(region.bases.size()) + "\n");
  return region;
}

const Region& TheRegion() {
  static const Region region = MakeRegion();
  return region;
}

std::string RequestBody(const Region& region, const std::string& options) {
  return "{\"sequence\": \"" + region.bases + "\", \"sequence_name\": \"" + region.name + "\"" +
         (options.empty() ? "" : ", \"options\": " + options) + "}";
}

// BED (BED6 or BED12, one kind per file): sorted, merged and intersected with the genome file
// cleanly; every feature inside the sequence; BED12 blocks as many as blockCount says.
void CheckBed(const Region& region, const std::string& label, const std::string& text) {
  INFO(label << ":\n" << text.substr(0, 2000));
  const std::string path = region.dir + "/" + label + ".bed";
  WriteText(path, text);
  const std::string sorted = REQUIRE_CLEAN(
      Tool(region.dir, {"bedtools", "sort", "-i", path, "-g", region.genome()}), "bedtools sort");
  CHECK(DataLines(sorted) == DataLines(text));
  WriteText(path + ".sorted", sorted);
  REQUIRE_CLEAN(Tool(region.dir, {"bedtools", "merge", "-i", path + ".sorted"}), "bedtools merge");
  const std::string outside = REQUIRE_CLEAN(
      Tool(region.dir, {"bedtools", "intersect", "-a", path + ".sorted", "-b", region.extent(),
                        "-f", "1.0", "-v", "-sorted", "-g", region.genome()}),
      "bedtools intersect");
  CHECK(outside.empty());
  size_t blocks = 0;
  bool bed12 = false;
  for (const auto& line : Lines(text)) {
    if (!IsDataLine(line)) continue;
    const auto c = Columns(line);
    CHECK(c[0] == region.name);
    if (c.size() == 12) {
      bed12 = true;
      blocks += std::stoul(c[9]);
    }
  }
  if (bed12) {
    const std::string bed6 = REQUIRE_CLEAN(
        Tool(region.dir, {"bedtools", "bed12tobed6", "-i", path}), "bedtools bed12tobed6");
    CHECK(DataLines(bed6) == blocks);
  }
}

// bedGraph: each track (a file may hold several) sorts and merges cleanly, has numeric values
// and no two intervals that overlap (the format's rule), all inside the sequence.
void CheckBedGraph(const Region& region, const std::string& label, const std::string& text) {
  INFO(label << ":\n" << text.substr(0, 2000));
  std::vector<std::string> tracks;
  for (const auto& line : Lines(text)) {
    if (line.rfind("track", 0) == 0) {
      CHECK(line.find("type=bedGraph") != std::string::npos);
      tracks.emplace_back();
    }
    REQUIRE_FALSE(tracks.empty());  // the track line comes first
    tracks.back() += line + "\n";
  }
  REQUIRE_FALSE(tracks.empty());
  for (size_t t = 0; t < tracks.size(); ++t) {
    const std::string name = label + "-track" + std::to_string(t + 1);
    INFO(name);
    REQUIRE(DataLines(tracks[t]) > 0);
    const std::string path = region.dir + "/" + name + ".bedgraph";
    WriteText(path, tracks[t]);
    const std::string sorted = REQUIRE_CLEAN(
        Tool(region.dir, {"bedtools", "sort", "-i", path, "-g", region.genome()}),
        "bedtools sort");
    WriteText(path + ".sorted", sorted);
    // -d -1: only overlapping intervals (not bookended ones) merge; a count above 1 is an
    // overlap. The max of column 4 warns on stderr if a value is not a number.
    const std::string merged = REQUIRE_CLEAN(
        Tool(region.dir, {"bedtools", "merge", "-i", path + ".sorted", "-d", "-1", "-c", "1,4",
                          "-o", "count,max"}),
        "bedtools merge");
    for (const auto& line : Lines(merged)) {
      INFO(line);
      CHECK(Columns(line).at(3) == "1");
    }
    const std::string outside = REQUIRE_CLEAN(
        Tool(region.dir, {"bedtools", "intersect", "-a", path + ".sorted", "-b", region.extent(),
                          "-f", "1.0", "-v", "-sorted", "-g", region.genome()}),
        "bedtools intersect");
    CHECK(outside.empty());
  }
}

// GFF3: gt gff3validator with the Sequence Ontology type check; its features inside the
// sequence (bedtools reads GFF too) and on it, in column 1.
void CheckGff3(const Region& region, const std::string& label, const std::string& text) {
  INFO(label << ":\n" << text.substr(0, 2000));
  const std::string path = region.dir + "/" + label + ".gff3";
  WriteText(path, text);
  REQUIRE_CLEAN(Tool(region.dir, {"gt", "gff3validator", "-typecheck", "so", path}),
                "gt gff3validator");
  CHECK(text.rfind("##gff-version 3", 0) == 0);
  CHECK(text.find("##sequence-region " + region.name + " 1 " +
                  std::to_string(region.bases.size())) != std::string::npos);
  for (const auto& line : Lines(text)) {
    if (IsDataLine(line)) CHECK(Columns(line).at(0) == region.name);
  }
  if (DataLines(text) > 0) {
    const std::string outside = REQUIRE_CLEAN(
        Tool(region.dir,
             {"bedtools", "intersect", "-a", path, "-b", region.extent(), "-f", "1.0", "-v"}),
        "bedtools intersect");
    CHECK(outside.empty());
  }
}

void CheckText(const Region& region, const std::string& format, const std::string& label,
               const std::string& text) {
  if (format == "bed") {
    CheckBed(region, label, text);
  } else if (format == "bedgraph") {
    CheckBedGraph(region, label, text);
  } else if (format == "gff3") {
    CheckGff3(region, label, text);
  } else {
    FAIL(label << ": a text format this test does not know: " << format);
  }
}

struct TaskFormats {
  std::string task;
  std::string options;               // JSON object or empty
  std::vector<std::string> formats;  // the text formats the contract allows the task
};

// The contract's table: promoter bed|bedgraph; splice bed|gff3; enhancer bedgraph; chromatin
// bed; annotation bed|gff3. Thresholds low enough that there are features to check.
const std::vector<TaskFormats>& AllTextFormats() {
  static const std::vector<TaskFormats> all = {
      {"promoter", R"({"threshold": 0})", {"bed", "bedgraph"}},
      {"splice", R"({"threshold": 0.001})", {"bed", "gff3"}},
      {"enhancer", "", {"bedgraph"}},
      {"chromatin", R"({"threshold": 0})", {"bed"}},
      {"annotation", "", {"bed", "gff3"}},
  };
  return all;
}

TEST_CASE("field formats: every ?format= text the service writes passes the field's tools",
          "[integration][formats]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const Region& region = TheRegion();
  for (const auto& task : AllTextFormats()) {
    for (const auto& format : task.formats) {
      const std::string label = task.task + "-" + format;
      SECTION(label) {
        auto r = svc->Post("/v1/tasks/" + task.task + "/predict?format=" + format,
                           RequestBody(region, task.options), svc->keys().alice);
        INFO(r.body.substr(0, 2000));
        REQUIRE(r.status == 200);
        REQUIRE(r.Header("content-type").has_value());
        CHECK(r.Header("content-type")->rfind("text/", 0) == 0);
        // Thresholds of 0 call every window: a promoter or chromatin BED without features, or
        // any bedGraph without values, would mean the check ran on nothing.
        if (task.task != "annotation" && task.task != "splice") CHECK(DataLines(r.body) > 0);
        CheckText(region, format, label, r.body);
      }
    }
  }
}

TEST_CASE("field formats: the texts inside JSON responses pass the same tools and equal the "
          "?format= ones",
          "[integration][formats]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const Region& region = TheRegion();
  size_t checked = 0;
  for (const auto& task : AllTextFormats()) {
    SECTION(task.task) {
      auto r = svc->Post("/v1/tasks/" + task.task + "/predict", RequestBody(region, task.options),
                         svc->keys().alice);
      INFO(r.body.substr(0, 2000));
      REQUIRE(r.status == 200);
      auto doc = ParseJson(r.body);
      const rapidjson::Value& data = (*doc)["data"];
      // data.formats: {format: text} (null when the task renders none).
      if (data.HasMember("formats") && data["formats"].IsObject()) {
        for (auto m = data["formats"].MemberBegin(); m != data["formats"].MemberEnd(); ++m) {
          const std::string format = m->name.GetString();
          if (m->value.IsNull()) continue;
          REQUIRE(m->value.IsString());
          const std::string text = m->value.GetString();
          CheckText(region, format, task.task + "-json-" + format, text);
          ++checked;
          // The same rendering as the text response of that format, where there is one.
          for (const auto& f : task.formats) {
            if (f != format) continue;
            auto as_text = svc->Post("/v1/tasks/" + task.task + "/predict?format=" + format,
                                     RequestBody(region, task.options), svc->keys().alice);
            REQUIRE(as_text.status == 200);
            CHECK(as_text.body == text);
          }
        }
      }
      // data.tracks: {name: bedGraph text} for the tasks that publish tracks.
      if (data.HasMember("tracks") && data["tracks"].IsObject()) {
        for (auto m = data["tracks"].MemberBegin(); m != data["tracks"].MemberEnd(); ++m) {
          if (!m->value.IsString()) continue;
          CheckBedGraph(region, task.task + "-json-track-" + m->name.GetString(),
                        m->value.GetString());
          ++checked;
        }
      }
      // Every task of the table publishes at least one text in its JSON.
      CHECK(checked > 0);
    }
  }
}

}  // namespace
}  // namespace dnaserve::testing
