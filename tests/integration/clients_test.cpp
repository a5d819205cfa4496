// The clients for people (clients/python and the /viewer page) against the real stack: the SDK's
// own test suite, the `dnaserve` command line on real GRCh37 chr20 records with its merged tracks
// checked by bedtools and `gt gff3validator`, an interrupted run resumed, a small-bucket key
// paced, exit codes, and the viewer in headless chromium. Everything runs as child processes
// with the service's URL and keys in the environment, as a user would run them; the package is
// installed into a venv the way README.md says (pip, offline).
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/service_fixture.h"
#include "tests/support/s3_server.h"
#include "tests/support/variant_data.h"

namespace dnaserve::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// What `pip install` left beside the sources it installed from (build/, *.egg-info), one name
// a line; empty when the checkout stays clean.
std::string& LeftInSources() {
  static std::string left;
  return left;
}

// clients/python installed into a fresh venv over Debian's python3, offline, as README.md
// documents; once per test process. Empty with the pip log in *why when it fails.
std::string InstalledCli(std::string* why) {
  static std::string bin;
  static std::string failure;
  static bool tried = false;
  if (!tried) {
    tried = true;
    const std::string dir = MakeTempDir("dnaserve-client-venv");
    std::string out;
    // A copy, without any build/ a local `pip install` of an older version left there, so
    // that what pip leaves beside the sources can be told (LeftInSources).
    if (RunCommand({"cp", "-r", SourceDir() + "/clients/python", dir + "/src"}, &out) != 0 ||
        RunCommand({"rm", "-rf", dir + "/src/build", dir + "/src/dnaserve_client.egg-info"},
                   &out) != 0 ||
        RunCommand({"/usr/bin/python3", "-m", "venv", "--system-site-packages", dir + "/venv"},
                   &out) != 0 ||
        RunCommand({dir + "/venv/bin/pip", "install", "--no-build-isolation", "--no-index",
                    dir + "/src"},
                   &out) != 0) {
      failure = "installing clients/python failed: " + out;
    } else {
      bin = dir + "/venv/bin";
      for (const auto& entry : fs::directory_iterator(dir + "/src")) {
        const std::string name = entry.path().filename().string();
        if (name == "build" || name == "dist" ||
            (name.size() > 9 && name.substr(name.size() - 9) == ".egg-info")) {
          LeftInSources() += name + "\n";
        }
      }
    }
  }
  *why = failure;
  return bin;
}

struct Cli {
  std::string bin;
  std::string home;  // an empty HOME: no user config file is read by accident
  std::map<std::string, std::string> env;

  int Run(const std::vector<std::string>& args, std::string* output,
          std::map<std::string, std::string> extra = {}) const {
    std::vector<std::string> argv = {bin + "/dnaserve"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> all = env;
    for (auto& [k, v] : extra) all[k] = v;
    output->clear();
    return RunCommand(argv, output, all);
  }
};

Cli MakeCli(Service* svc, const std::string& key) {
  std::string why;
  Cli cli;
  cli.bin = InstalledCli(&why);
  INFO(why);
  REQUIRE_FALSE(cli.bin.empty());
  cli.home = MakeTempDir("dnaserve-cli-home");
  cli.env = {{"DNASERVE_URL", svc->base_url()}, {"DNASERVE_API_KEY", key},
             {"HOME", cli.home}, {"XDG_CONFIG_HOME", cli.home + "/.config"},
             {"PYTHONDONTWRITEBYTECODE", "1"}};
  return cli;
}

// Real chr20 records (Debian's vt-examples, via the data cache); nullopt with the reason.
std::optional<std::string> Chr20Records(const std::string& out, int count, const std::string& lengths,
                                        std::string* why, int step = 250000) {
  auto chr20 = DebianPackageFile("vt-examples", "usr/share/doc/vt/examples/ref/20.fa.gz", why);
  if (!chr20) return std::nullopt;
  std::string log;
  if (RunCommand({"/usr/bin/python3", SourceDir() + "/clients/python/tests/chr20_records.py",
                  *chr20, out, "--count", std::to_string(count), "--lengths", lengths, "--step",
                  std::to_string(step)},
                 &log) != 0) {
    *why = "cutting chr20 records failed: " + log;
    return std::nullopt;
  }
  return out;
}

// name -> length of every record of a FASTA.
std::map<std::string, size_t> FastaLengths(const std::string& path) {
  std::map<std::string, size_t> lengths;
  std::ifstream in(path);
  std::string line, name;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '>') {
      name = line.substr(1, line.find_first_of(" \t") - 1);
      lengths[name] = 0;
    } else if (!name.empty()) {
      lengths[name] += line.size();
    }
  }
  return lengths;
}

// The distinct values of column 1 in the data rows of a track.
std::set<std::string> SequenceIds(const std::string& text) {
  std::set<std::string> ids;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("track", 0) == 0) continue;
    ids.insert(line.substr(0, line.find('\t')));
  }
  return ids;
}

size_t CountLines(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

int JobCount(Service* svc, const std::string& key) {
  auto r = svc->Get("/v1/tasks/jobs?limit=500", key);
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  return (*doc)["count"].GetInt();
}

TEST_CASE("clients: the Python SDK's test suite passes against the real stack", "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  std::string why;
  const std::string bin = InstalledCli(&why);
  INFO(why);
  REQUIRE_FALSE(bin.empty());
  std::string out;
  // The installed package, not the source tree: run from an empty directory.
  const std::string cwd = MakeTempDir("dnaserve-sdk-tests");
  int rc = RunCommand({"sh", "-c", "cd " + cwd + " && " + bin + "/python -m pytest -q -rs -p "
                       "no:cacheprovider " + SourceDir() + "/clients/python/tests"},
                      &out,
                      {{"DNASERVE_URL", svc->base_url()},
                       {"DNASERVE_API_KEY", svc->keys().alice},
                       {"DNASERVE_TEST_OTHER_KEY", svc->keys().bob},
                       {"DNASERVE_TEST_DISABLED_KEY", svc->keys().disabled},
                       {"DNASERVE_TEST_SLOW_KEY", svc->keys().slow}});
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(out.find("skipped") == std::string::npos);  // every test ran
  CHECK(std::regex_search(out, std::regex("[0-9]+ passed")));
  // Installing as README.md says leaves the checkout as it was (no build/, no *.egg-info).
  CHECK(LeftInSources() == "");
}

TEST_CASE("clients: dnaserve predict turns a chr20 multi-FASTA into valid BED, bedGraph and GFF3",
          "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("dnaserve-cli-tracks");
  std::string why;
  // Five 10 kb records and one of 35 kb: above annotation's 30,000 bp advisory threshold, so
  // that record goes async.
  auto fasta = Chr20Records(dir + "/chr20.fa", 6, "10000,10000,35000,10000,10000,10000", &why);
  if (!fasta) {
    WARN("skipped: no real chr20 sequence on this machine: " << why);
    return;
  }
  // Plain and gzip input in one run: records 1-3 plain, 4-6 gzip.
  REQUIRE(RunCommand({"sh", "-c", "awk '/^>/ {n++} n <= 3' " + *fasta + " > " + dir +
                       "/a.fa && awk '/^>/ {n++} n > 3' " + *fasta + " | gzip > " + dir +
                       "/b.fa.gz"},
                     nullptr) == 0);
  const auto lengths = FastaLengths(*fasta);
  REQUIRE(lengths.size() == 6);
  {  // The records' extents as BED: every feature must lie inside its own record.
    std::ofstream extents(dir + "/records.bed");
    for (const auto& [name, length] : lengths) extents << name << "\t0\t" << length << "\n";
  }
  Cli cli = MakeCli(svc, svc->keys().alice);
  const std::vector<std::string> inputs = {dir + "/a.fa", dir + "/b.fa.gz"};
  std::string out;
  const int jobs_before = JobCount(svc, svc->keys().alice);

  auto predict = [&](const std::string& task, const std::string& format,
                     std::vector<std::string> extra) {
    std::vector<std::string> args = {"predict", task};
    args.insert(args.end(), inputs.begin(), inputs.end());
    args.insert(args.end(), {"--format", format, "-o", dir + "/" + task + "." + format, "-q"});
    args.insert(args.end(), extra.begin(), extra.end());
    int rc = cli.Run(args, &out);
    INFO(task << " " << format << ": " << out);
    REQUIRE(rc == 0);
    return ReadAll(dir + "/" + task + "." + format);
  };

  SECTION("BED and bedGraph from promoter, checked by bedtools") {
    const std::string bed = predict("promoter", "bed", {"--threshold", "0"});
    CHECK(SequenceIds(bed).size() == 6);  // each record's name is its sequence id
    const std::string bedgraph = predict("promoter", "bedgraph", {});
    CHECK(CountLines(bedgraph, "track") == 1);  // one header for all records
    CHECK(SequenceIds(bedgraph).size() == 6);
    for (const std::string file : {"promoter.bed", "promoter.bedgraph"}) {
      INFO(file);
      std::string sorted;
      REQUIRE(RunCommand({"bedtools", "sort", "-i", dir + "/" + file}, &sorted) == 0);
      std::string outside;
      // -f 1.0: a feature counts as inside only when wholly inside; -v lists the others.
      REQUIRE(RunCommand({"bedtools", "intersect", "-a", dir + "/" + file, "-b",
                          dir + "/records.bed", "-f", "1.0", "-v"},
                         &outside) == 0);
      CHECK(outside.empty());
    }
    std::string merged;
    REQUIRE(RunCommand({"sh", "-c", "bedtools sort -i " + dir + "/promoter.bed | bedtools merge"},
                       &merged) == 0);
    CHECK(SequenceIds(merged).size() == 6);
    // The enhancer's two tracks (dev, hk) stay two tracks, each with every record.
    const std::string enhancer = predict("enhancer", "bedgraph", {});
    CHECK(CountLines(enhancer, "track") == 2);
    std::string sorted;
    CHECK(RunCommand({"bedtools", "sort", "-i", dir + "/enhancer.bedgraph"}, &sorted) == 0);
  }

  SECTION("GFF3 from annotation and splice, checked by gt gff3validator") {
    const std::string gff3 = predict("annotation", "gff3", {});
    CHECK(CountLines(gff3, "##gff-version") == 1);
    CHECK(CountLines(gff3, "##sequence-region") == 6);
    std::string log;
    int rc = RunCommand({"gt", "gff3validator", dir + "/annotation.gff3"}, &log);
    INFO(log);
    CHECK(rc == 0);
    const std::string splice = predict("splice", "gff3", {"--threshold", "0.001"});
    CHECK(CountLines(splice, "##gff-version") == 1);
    rc = RunCommand({"gt", "gff3validator", dir + "/splice.gff3"}, &log);
    INFO(log);
    CHECK(rc == 0);
    // The 35 kb record went async (the advisory threshold), the 10 kb ones sync.
    auto r = svc->Get("/v1/tasks/jobs?limit=500", svc->keys().alice);
    auto doc = ParseJson(r.body);
    int async_annotation = 0, sync_annotation = 0;
    for (const auto& job : (*doc)["jobs"].GetArray()) {
      if (std::string(job["task"].GetString()) != "annotation") continue;
      (std::string(job["mode"].GetString()) == "async" ? async_annotation : sync_annotation)++;
    }
    CHECK(async_annotation == 1);
    CHECK(sync_annotation == 5);
  }

  SECTION("JSON: one {data, meta} per record, in input order") {
    predict("chromatin", "json", {});
    std::ifstream in(dir + "/chromatin.json");
    std::string line;
    std::vector<std::string> names;
    while (std::getline(in, line)) {
      auto doc = ParseJson(line);
      names.push_back((*doc)["data"]["input"]["sequence_name"].GetString());
    }
    std::vector<std::string> expected;
    std::ifstream records(*fasta);
    while (std::getline(records, line)) {
      if (line[0] == '>') expected.push_back(line.substr(1));
    }
    CHECK(names == expected);
  }
  CHECK(JobCount(svc, svc->keys().alice) > jobs_before);
}

TEST_CASE("clients: an interrupted dnaserve run resumes without resubmitting finished records",
          "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("dnaserve-cli-resume");
  std::string why;
  auto fasta = Chr20Records(dir + "/chr20.fa", 30, "6000", &why, 100000);
  if (!fasta) {
    WARN("skipped: no real chr20 sequence on this machine: " << why);
    return;
  }
  // bob's jobs are this test's alone, so the job count tells exactly what was submitted.
  Cli cli = MakeCli(svc, svc->keys().bob);
  const std::vector<std::string> args = {"predict", "annotation", *fasta, "--format", "gff3",
                                         "-j", "1", "-q", "-o", dir + "/out.gff3"};
  const std::string state = dir + "/out.gff3.dnaserve-resume";
  auto done_files = [&] {
    int n = 0;
    if (!fs::is_directory(state)) return 0;
    for (const auto& entry : fs::directory_iterator(state)) {
      n += entry.path().string().size() > 10 &&
           entry.path().string().rfind(".done.json") == entry.path().string().size() - 10;
    }
    return n;
  };
  const int jobs_at_start = JobCount(svc, svc->keys().bob);

  // Start a run and interrupt it (SIGTERM, as a closed terminal or a batch system would) once a
  // few records are saved.
  ChildProcess run;
  std::vector<std::string> argv = {cli.bin + "/dnaserve"};
  argv.insert(argv.end(), args.begin(), args.end());
  REQUIRE(run.Start(argv, cli.env, dir + "/first-run.log"));
  REQUIRE(WaitFor([&] { return done_files() >= 3; }, std::chrono::seconds(120)));
  run.Terminate();
  auto status = run.WaitExit(std::chrono::seconds(20));
  INFO(ReadAll(dir + "/first-run.log"));
  REQUIRE(status.has_value());
  CHECK(*status == 130);
  CHECK(ReadAll(dir + "/first-run.log").find("rerun the same command to resume") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out.gff3"));  // nothing half-written
  // Wait for the request in flight when it stopped, if any, to finish on the server.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const int saved = done_files();
  const int jobs_after_interrupt = JobCount(svc, svc->keys().bob);
  REQUIRE(saved >= 3);
  REQUIRE(saved < 30);

  std::string out;
  int rc = cli.Run(args, &out);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(out.find("resuming: " + std::to_string(saved) + " of 30 records already done") !=
        std::string::npos);
  // Exactly the unfinished records were submitted again.
  CHECK(JobCount(svc, svc->keys().bob) - jobs_after_interrupt == 30 - saved);
  CHECK(jobs_after_interrupt - jobs_at_start >= saved);
  CHECK_FALSE(fs::exists(state));  // cleaned up once the output is written

  // The resumed output is what an uninterrupted run writes.
  rc = cli.Run({"predict", "annotation", *fasta, "--format", "gff3", "-q", "-o",
                dir + "/straight.gff3"},
               &out);
  REQUIRE(rc == 0);
  // Byte for byte, scores included: the worker batches the records differently in the two runs,
  // and its fixed-shape forward passes make that invisible in the numbers.
  CHECK(ReadAll(dir + "/out.gff3") == ReadAll(dir + "/straight.gff3"));
  std::string log;
  CHECK(RunCommand({"gt", "gff3validator", dir + "/out.gff3"}, &log) == 0);
}

TEST_CASE("clients: the CLI paces a key with a one-token bucket instead of failing", "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("dnaserve-cli-slow");
  {
    std::ofstream fasta(dir + "/three.fa");
    for (int i = 0; i < 3; ++i) fasta << ">r" << i << "\n" << RandomDna(600, 10 + i) << "\n";
  }
  Cli cli = MakeCli(svc, svc->keys().slow);  // rate 6/min: one token every 10 s
  std::string out;
  const auto started = std::chrono::steady_clock::now();
  int rc = cli.Run({"predict", "promoter", dir + "/three.fa", "--format", "bed", "--threshold",
                    "0", "-j", "3", "-q", "-o", dir + "/out.bed"},
                   &out);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(SequenceIds(ReadAll(dir + "/out.bed")) == std::set<std::string>{"r0", "r1", "r2"});
  CHECK(seconds >= 15);  // three tokens of a 6/min bucket take two refills
}

// Width and height of a PNG, from its IHDR chunk (bytes 16-23, big-endian); {0, 0} if not a PNG.
std::pair<int, int> PngSize(const std::string& png) {
  if (png.size() < 24 || png.compare(1, 3, "PNG") != 0) return {0, 0};
  auto be32 = [&](size_t at) {
    int v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

TEST_CASE("clients: dnaserve plot draws a chr20 record's results as PNG, SVG and PDF",
          "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("dnaserve-cli-plot");
  std::string why;
  auto fasta = Chr20Records(dir + "/chr20.fa", 2, "12000", &why);
  if (!fasta) {
    WARN("skipped: no real chr20 sequence on this machine: " << why);
    return;
  }
  Cli cli = MakeCli(svc, svc->keys().alice);
  const auto lengths = FastaLengths(*fasta);
  const std::string record = lengths.begin()->first;  // chr20:<start>-<end>
  const long first = std::stol(record.substr(record.find(':') + 1));
  std::string out;
  // Two records and no --record: a figure shows one, the user is told how to choose.
  CHECK(cli.Run({"plot", *fasta, "-o", dir + "/x.png"}, &out) == 2);
  CHECK(out.find("--record") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/x.png"));

  // plot runs every task itself (expression per context through find-genes); the saved results
  // say where each feature is, and check_plot.py reads the PNG's pixels there.
  const std::string results = dir + "/results.jsonl";
  int rc = cli.Run({"plot", *fasta, "--record", record, "--description", "adult liver",
                    "--description", "brain cortex", "--threshold", "splice=0.5",
                    "--save-json", results, "-o", dir + "/fig.png"},
                   &out);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(out.find("wrote " + dir + "/fig.png (1400 x 900 px") != std::string::npos);
  CHECK(PngSize(ReadAll(dir + "/fig.png")) == std::make_pair(1400, 900));
  std::vector<std::string> tasks;
  {
    std::ifstream in(results);
    std::string line;
    while (std::getline(in, line)) {
      auto doc = ParseJson(line);
      tasks.push_back((*doc)["data"]["task"].GetString());
      CHECK(std::string((*doc)["data"]["input"]["sequence_name"].GetString()) == record);
    }
  }
  CHECK(tasks == std::vector<std::string>{"promoter", "splice", "chromatin",
                                          "find_genes_and_predict_expression",
                                          "find_genes_and_predict_expression"});
  if (const char* keep = std::getenv("DNASERVE_PLOT_FIGURE")) {  // to look at it
    fs::copy_file(dir + "/fig.png", keep, fs::copy_options::overwrite_existing);
    fs::copy_file(results, std::string(keep) + ".jsonl", fs::copy_options::overwrite_existing);
  }
  const std::string python = cli.bin + "/python";
  const std::string checker = SourceDir() + "/clients/python/tests/check_plot.py";
  rc = RunCommand({python, checker, dir + "/fig.png", results, "--width", "1400", "--height",
                   "900"},
                  &out);
  INFO(out);
  REQUIRE(rc == 0);
  auto checked = ParseJson(out.substr(out.find('{')));
  CHECK((*checked)["checked"]["splice_sites"].GetInt() > 0);
  CHECK((*checked)["checked"]["expression_bars"].GetInt() > 0);
  CHECK((*checked)["checked"].HasMember("heatmap_cells"));
  CHECK((*checked)["checked"].HasMember("cds_boxes"));

  // The saved results redrawn without the service (no URL at all): 1024 x 768, SVG and PDF.
  const std::map<std::string, std::string> offline = {{"DNASERVE_URL", ""},
                                                      {"DNASERVE_API_KEY", ""}};
  rc = cli.Run({"plot", "--from-json", results, "--tasks", "promoter,splice,annotation",
                "--width", "1024", "--height", "768", "-q", "-o", dir + "/small.png"},
               &out, offline);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(PngSize(ReadAll(dir + "/small.png")) == std::make_pair(1024, 768));
  rc = RunCommand({python, checker, dir + "/small.png", results, "--width", "1024", "--height",
                   "768", "--tasks", "promoter,splice,annotation"},
                  &out);
  INFO(out);
  CHECK(rc == 0);
  REQUIRE(cli.Run({"plot", "--from-json", results, "-q", "-o", dir + "/fig.svg"}, &out,
                  offline) == 0);
  REQUIRE(cli.Run({"plot", "--from-json", results, "-q", "-o", dir + "/fig.pdf"}, &out,
                  offline) == 0);
  CHECK(RunCommand({python, "-c",
                    "import sys, xml.etree.ElementTree as E; "
                    "sys.exit(0 if E.parse(sys.argv[1]).getroot().tag.endswith('svg') else 1)",
                    dir + "/fig.svg"},
                   &out) == 0);
  CHECK(ReadAll(dir + "/fig.pdf").rfind("%PDF-", 0) == 0);

  // A region of the record, on chr20's coordinates: only that part is sent.
  const std::string region = "chr20:" + std::to_string(first + 2000) + "-" +
                             std::to_string(first + 5999);
  rc = cli.Run({"plot", *fasta, "--record", record, "--region", region, "--tasks", "splice",
                "--save-json", dir + "/region.jsonl", "-q", "-o", dir + "/region.png"},
               &out);
  INFO(out);
  REQUIRE(rc == 0);
  auto saved = ParseJson(ReadAll(dir + "/region.jsonl"));
  CHECK(std::string((*saved)["data"]["input"]["sequence_name"].GetString()) == region);
  CHECK((*saved)["meta"]["sequence_length"].GetInt() == 4000);
  CHECK(cli.Run({"plot", *fasta, "--record", record, "--region", "chr7:1-100", "-o",
                 dir + "/y.png"},
                &out) == 2);
  CHECK(out.find("not on chr7") != std::string::npos);
}

TEST_CASE("clients: CLI exit codes, messages and key handling", "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("dnaserve-cli-errors");
  {
    std::ofstream(dir + "/one.fa") << ">one\n" << RandomDna(800) << "\n";
    std::ofstream(dir + "/bad.fa") << "this is not a FASTA\n";
  }
  const std::string key = svc->keys().alice;
  Cli cli = MakeCli(svc, key);
  std::string out;
  std::vector<std::string> outputs;

  CHECK(cli.Run({"health"}, &out) == 0);
  CHECK(out.find("\"healthy\"") != std::string::npos);
  CHECK(cli.Run({"models", "promoter"}, &out) == 0);
  CHECK(out.find("\"default_model\"") != std::string::npos);
  CHECK(cli.Run({"predict", "promoter", dir + "/one.fa", "--format", "bed", "--threshold", "0"},
                &out) == 0);
  CHECK(out.rfind("one\t", 0) == 0);
  outputs.push_back(out);
  CHECK(cli.Run({"jobs", "--limit", "5"}, &out) == 0);
  auto jobs = ParseJson(out);
  REQUIRE((*jobs)["jobs"].Size() >= 1);
  const std::string job_id = (*jobs)["jobs"][0]["job_id"].GetString();
  CHECK(cli.Run({"job", job_id, "--format", "bed"}, &out) == 0);
  INFO("job " << job_id << ": " << out);
  CHECK(out.rfind("one\t", 0) == 0);
  outputs.push_back(out);

  CHECK(cli.Run({"job", job_id, "--wait", "-q"}, &out) == 0);
  CHECK(ParseJson(out)->HasMember("meta"));
  CHECK(cli.Run({"models"}, &out) == 0);  // every task
  CHECK(ParseJson(out)->HasMember("expression"));
  {
    std::ofstream(dir + "/region.fa") << ">region\n" << RandomDna(3000, 3) << "\n";
  }
  CHECK(cli.Run({"find-genes", dir + "/region.fa", "--description", "adult liver", "-q"}, &out) ==
        0);
  auto found = ParseJson(out);
  CHECK(std::string((*found)["data"]["task"].GetString()) == "find_genes_and_predict_expression");
  outputs.push_back(out);
  // The variant workflow: this service has no object store, so the POST is refused (400 or
  // 503) and the CLI says so with the envelope's code.
  CHECK(cli.Run({"--retry-budget", "0", "variant", "s3://bucket/calls.vcf.gz"}, &out) == 1);
  CHECK(std::regex_search(out, std::regex("error: (bad_request|service_unavailable): ")));

  // The service's refusals: exit 1 with the envelope's code and message.
  CHECK(cli.Run({"health"}, &out) == 0);
  int rc = cli.Run({"predict", "promoter", dir + "/one.fa"}, &out,
                   {{"DNASERVE_API_KEY", "dns_wrong_key_for_test"}});
  CHECK(rc == 1);
  CHECK(out.find("unauthorized") != std::string::npos);
  CHECK(out.find("dns_wrong_key_for_test") == std::string::npos);  // the key is never printed
  CHECK(cli.Run({"job", "00000000-0000-4000-8000-000000000000"}, &out) == 1);
  CHECK(out.find("not_found") != std::string::npos);
  CHECK(cli.Run({"predict", "promoter", dir + "/one.fa", "--model", "nope"}, &out) == 1);
  CHECK(out.find("model_not_found") != std::string::npos);
  // Usage: exit 2.
  CHECK(cli.Run({"predict", "promoter", dir + "/bad.fa"}, &out) == 2);
  CHECK(out.find("not a readable FASTA") != std::string::npos);
  CHECK(cli.Run({"predict", "expression", dir + "/one.fa", "--format", "bed"}, &out) == 2);
  CHECK(cli.Run({"predict", "promoter", dir + "/missing.fa"}, &out) == 2);
  // Configuration: exit 3; unreachable: exit 4.
  CHECK(cli.Run({"health"}, &out, {{"DNASERVE_URL", ""}}) == 3);
  CHECK(cli.Run({"health"}, &out, {{"DNASERVE_URL", "http://127.0.0.1:9"}}) == 4);

  // A config file: used when it is mode 600, refused when others can read the key.
  const std::string config = cli.home + "/.config/dnaserve/config.json";
  fs::create_directories(fs::path(config).parent_path());
  std::ofstream(config) << "{\"url\": \"" << svc->base_url() << "\", \"api_key\": \"" << key
                        << "\"}";
  const std::map<std::string, std::string> from_file = {{"DNASERVE_URL", ""},
                                                        {"DNASERVE_API_KEY", ""}};
  chmod(config.c_str(), 0644);
  CHECK(cli.Run({"jobs", "--limit", "1"}, &out, from_file) == 3);
  CHECK(out.find("chmod 600") != std::string::npos);
  outputs.push_back(out);
  chmod(config.c_str(), 0600);
  CHECK(cli.Run({"jobs", "--limit", "1"}, &out, from_file) == 0);
  outputs.push_back(out);
  for (const auto& text : outputs) CHECK(text.find(key) == std::string::npos);
}

// How often `needle` occurs in `text`.
size_t CountOccurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The records of a FASTA named chrom:start-end as a BED of their places on the genome.
void WriteGenomeExtents(const std::map<std::string, size_t>& lengths, const std::string& path,
                        int64_t* first, int64_t* last) {
  std::ofstream extents(path);
  *first = INT64_MAX;
  *last = 0;
  for (const auto& [name, length] : lengths) {
    const size_t colon = name.find(':'), dash = name.find('-');
    const int64_t start = std::stoll(name.substr(colon + 1, dash - colon - 1));
    const int64_t end = std::stoll(name.substr(dash + 1));
    REQUIRE(end - start + 1 == static_cast<int64_t>(length));
    extents << name.substr(0, colon) << "\t" << start - 1 << "\t" << end << "\n";
    *first = std::min(*first, start);
    *last = std::max(*last, end);
  }
}

TEST_CASE("clients: --shift-coordinates places every task's BED, bedGraph and GFF3 on the contig",
          "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("dnaserve-cli-genome");
  std::string why;
  auto fasta = Chr20Records(dir + "/chr20.fa", 3, "10000", &why);
  if (!fasta) {
    WARN("skipped: no real chr20 sequence on this machine: " << why);
    return;
  }
  int64_t first = 0, last = 0;
  WriteGenomeExtents(FastaLengths(*fasta), dir + "/genome.bed", &first, &last);
  Cli cli = MakeCli(svc, svc->keys().alice);
  std::string out;
  auto predict = [&](const std::string& input, const std::string& task, const std::string& format,
                     std::vector<std::string> extra) {
    const std::string file = dir + "/" + task + "." + format;
    std::vector<std::string> args = {"predict", task, input, "--format", format, "-o", file,
                                     "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const int rc = cli.Run(args, &out);
    INFO(task << " " << format << ": " << out);
    REQUIRE(rc == 0);
    return ReadAll(file);
  };
  // Every row on chr20, every feature inside the genome extent of the record it came from.
  auto on_the_genome = [&](const std::string& file) {
    INFO(file);
    const std::string text = ReadAll(dir + "/" + file);
    CHECK(SequenceIds(text) == std::set<std::string>{"chr20"});
    std::string outside;
    REQUIRE(RunCommand({"bedtools", "intersect", "-a", dir + "/" + file, "-b",
                        dir + "/genome.bed", "-f", "1.0", "-v"},
                       &outside) == 0);
    CHECK(outside.empty());
  };
  const std::vector<std::string> shift = {"--shift-coordinates", "UCSC"};
  const std::string region_line = "##sequence-region chr20 " + std::to_string(first) + " " +
                                  std::to_string(last) + "\n";
  struct Run {
    std::string task, format;
    std::vector<std::string> extra;
  };
  for (const Run& run : std::vector<Run>{{"promoter", "bed", {"--threshold", "0"}},
                                         {"promoter", "bedgraph", {}},
                                         {"enhancer", "bedgraph", {}},
                                         {"chromatin", "bed", {"--threshold", "0.01"}},
                                         {"splice", "bed", {"--threshold", "0.001"}},
                                         {"splice", "gff3", {"--threshold", "0.001"}},
                                         {"annotation", "bed", {}},
                                         {"annotation", "gff3", {}}}) {
    std::vector<std::string> extra = run.extra;
    extra.insert(extra.end(), shift.begin(), shift.end());
    const std::string text = predict(*fasta, run.task, run.format, extra);
    on_the_genome(run.task + "." + run.format);
    if (run.format == "gff3") {
      // One ##sequence-region for the contig, spanning the three records: gt accepts it.
      CHECK(CountLines(text, "##sequence-region") == 1);
      CHECK(text.find(region_line) != std::string::npos);
      std::string log;
      int rc = RunCommand({"gt", "gff3validator", dir + "/" + run.task + ".gff3"}, &log);
      INFO(log);
      CHECK(rc == 0);
    }
  }
  // The promoter BED in genome coordinates is the record-relative one shifted by each start.
  const std::string relative = predict(*fasta, "promoter", "bed", {"--threshold", "0"});
  std::string shifted_by_awk;
  REQUIRE(RunCommand({"sh", "-c",
                      "awk -F'\\t' -v OFS='\\t' '{split($1, a, /[:-]/); $2 += a[2] - 1; "
                      "$3 += a[2] - 1; $1 = a[1]; print $1, $2, $3}' " +
                          dir + "/promoter.bed"},
                     &shifted_by_awk) == 0);
  const std::string placed = predict(*fasta, "promoter", "bed",
                                     {"--threshold", "0", "--shift-coordinates", "UCSC"});
  std::string placed_columns;
  REQUIRE(RunCommand({"cut", "-f1-3", dir + "/promoter.bed"}, &placed_columns) == 0);
  CHECK(!relative.empty());
  CHECK(placed_columns == shifted_by_awk);
  // The viewer's record names (chrom_start-end) place the same way; --region places one record.
  REQUIRE(RunCommand({"sh", "-c", "sed 's/^>chr20:/>chr20_/' " + *fasta + " > " + dir +
                                      "/underscore.fa"},
                     nullptr) == 0);
  predict(dir + "/underscore.fa", "promoter", "bed", {"--threshold", "0", "--shift-coordinates",
                                                      "UCSC"});
  std::string underscore_columns;
  REQUIRE(RunCommand({"cut", "-f1-3", dir + "/promoter.bed"}, &underscore_columns) == 0);
  CHECK(underscore_columns == placed_columns);
  REQUIRE(RunCommand({"sh", "-c", "awk '/^>/ {n++} n == 1' " + *fasta + " | sed 's/^>.*/>mine/' > " +
                                      dir + "/one.fa"},
                     nullptr) == 0);
  // The first record of the file (chr20_records.py writes them in genome order, so the first
  // name in sort order is the first record).
  const std::string one = predict(dir + "/one.fa", "annotation", "gff3",
                                  {"--region", FastaLengths(*fasta).begin()->first});
  CHECK(one.find("##sequence-region chr20 " + std::to_string(first) + " " +
                 std::to_string(first + 9999) + "\n") != std::string::npos);
  CHECK(SequenceIds(one) == std::set<std::string>{"chr20"});
}

TEST_CASE("clients: a refusal of the whole run is checked once, before records are sent",
          "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("dnaserve-cli-run-wide");
  {
    std::ofstream fasta(dir + "/eight.fa");
    for (int i = 0; i < 8; ++i) fasta << ">r" << i << "\n" << RandomDna(600, 40 + i) << "\n";
  }
  const std::string eight = dir + "/eight.fa";
  // bob's job count tells what reached the service.
  Cli cli = MakeCli(svc, svc->keys().bob);
  std::string out;
  const int jobs_before = JobCount(svc, svc->keys().bob);
  auto no_per_record_report = [&] {
    CHECK(out.find("records failed") == std::string::npos);
    CHECK(out.find("r0:") == std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/out.bed"));
    CHECK_FALSE(fs::exists(dir + "/out.bed.dnaserve-resume"));
  };
  const std::vector<std::string> run = {"predict", "promoter", eight, "--format", "bed", "-q",
                                        "-o", dir + "/out.bed"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = run;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };

  SECTION("a wrong or disabled key: one message, exit 1") {
    int rc = cli.Run(run, &out, {{"DNASERVE_API_KEY", "dns_wrong_key_for_test"}});
    INFO(out);
    CHECK(rc == 1);
    CHECK(CountOccurrences(out, "unauthorized") == 1);
    CHECK(out.find("the run stopped before any record was done") != std::string::npos);
    no_per_record_report();
    rc = cli.Run(run, &out, {{"DNASERVE_API_KEY", svc->keys().disabled}});
    INFO(out);
    CHECK(rc == 1);
    CHECK(CountOccurrences(out, "forbidden") == 1);
    no_per_record_report();
  }
  SECTION("an option out of range: a usage error before anything is sent, exit 2") {
    int rc = cli.Run(with({"--threshold", "1.5"}), &out);
    INFO(out);
    CHECK(rc == 2);
    CHECK(CountLines(out, "dnaserve: ") == 1);
    CHECK(out.find("--threshold must be between 0 and 1") != std::string::npos);
    no_per_record_report();
    CHECK(JobCount(svc, svc->keys().bob) == jobs_before);
  }
  SECTION("an unknown model stops the run at its first refusal") {
    int rc = cli.Run(with({"--model", "no-such-model", "-j", "1"}), &out);
    INFO(out);
    CHECK(rc == 1);
    CHECK(CountOccurrences(out, "model_not_found") == 1);
    no_per_record_report();
  }
  SECTION("an unreachable service or the wrong scheme: one readable line, exit 4") {
    int rc = cli.Run(run, &out, {{"DNASERVE_URL", "http://127.0.0.1:9"}});
    INFO(out);
    CHECK(rc == 4);
    CHECK(CountOccurrences(out, "connection refused") == 1);
    for (const char* internals : {"urllib3", "HTTPConnectionPool", "Max retries", "Traceback"}) {
      CHECK(out.find(internals) == std::string::npos);
    }
    std::string https = svc->base_url();
    https.replace(0, 4, "https");
    const auto started = std::chrono::steady_clock::now();
    rc = cli.Run(run, &out, {{"DNASERVE_URL", https}});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    INFO(out);
    CHECK(rc == 4);
    CHECK(out.find("plain HTTP, not TLS: use " + svc->base_url()) != std::string::npos);
    CHECK(seconds < 15);  // one connect timeout at most, no retries (it was 31.7 s)
    no_per_record_report();
  }
  SECTION("a record's own fault fails that record only, and the summary counts right") {
    {
      std::ofstream(dir + "/mixed.fa") << ">good1\n" << RandomDna(600, 1) << "\n>bad\n"
                                       << "ACGTX" << RandomDna(600, 2) << "\n>good2\n"
                                       << RandomDna(600, 3) << "\n";
    }
    int rc = cli.Run({"predict", "promoter", dir + "/mixed.fa", "--format", "bed", "-q", "-o",
                      dir + "/mixed.bed"},
                     &out);
    INFO(out);
    CHECK(rc == 1);
    CHECK(out.find("bad: validation_failed") != std::string::npos);
    CHECK(out.find("1 of 3 records failed; the other 2 are saved in") != std::string::npos);
  }
}

TEST_CASE("clients: expression on records that are not 9,198 bp scores each record's centre",
          "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("dnaserve-cli-expression");
  {
    std::ofstream(dir + "/ten.fa") << ">a\n" << RandomDna(10000, 5) << "\n>b\n"
                                   << RandomDna(10001, 6) << "\n>exact\n"
                                   << RandomDna(9198, 7) << "\n";
    std::ofstream(dir + "/short.fa") << ">short\n" << RandomDna(5000, 8) << "\n";
  }
  Cli cli = MakeCli(svc, svc->keys().alice);
  std::string out;
  int rc = cli.Run({"predict", "expression", dir + "/ten.fa", "--description", "adult liver",
                    "-q", "-o", dir + "/ten.jsonl"},
                   &out);
  INFO(out);
  REQUIRE(rc == 0);
  std::ifstream in(dir + "/ten.jsonl");
  std::string line;
  std::vector<int64_t> tss;
  while (std::getline(in, line)) tss.push_back((*ParseJson(line))["data"]["input"]["tss_index"].GetInt64());
  CHECK(tss == std::vector<int64_t>{5000, 5000, 4599});  // length // 2, as the viewer sends
  rc = cli.Run({"predict", "expression", dir + "/short.fa", "--description", "adult liver"}, &out);
  CHECK(rc == 2);
  CHECK(out.find("short (5,000 bp)") != std::string::npos);
}

TEST_CASE("clients: CLI output files honour the umask", "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("dnaserve-cli-umask");
  { std::ofstream(dir + "/one.fa") << ">one\n" << RandomDna(800) << "\n"; }
  Cli cli = MakeCli(svc, svc->keys().alice);
  for (const auto& [umask, mode] : std::vector<std::pair<std::string, int>>{{"022", 0644},
                                                                            {"077", 0600}}) {
    const std::string file = dir + "/out-" + umask + ".bed";
    std::string out;
    std::map<std::string, std::string> env = cli.env;
    int rc = RunCommand({"sh", "-c", "umask " + umask + " && exec " + cli.bin +
                                         "/dnaserve predict promoter " + dir +
                                         "/one.fa --format bed --threshold 0 -q -o " + file},
                        &out, env);
    INFO(umask << ": " << out);
    REQUIRE(rc == 0);
    struct stat info {};
    REQUIRE(stat(file.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == mode);
  }
}

TEST_CASE("clients: scripts/try-variant takes the service and the store on its command line",
          "[clients]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  std::string why;
  auto s3 = S3Server::Start({"try-bucket"}, &why);
  if (!s3) FAIL("the local S3 server did not start (scripts/install-deps): " << why);
  const std::string dir = MakeTempDir("dnaserve-try-variant");
  { std::ofstream(dir + "/secret") << S3Server::kSecretKey; }
  {
    std::ofstream(dir + "/calls.vcf") << "##fileformat=VCFv4.2\n##contig=<ID=20>\n"
                                      << "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                                      << "20\t1600125\t.\tG\tA\t.\t.\t.\n";
  }
  // An empty build directory: nothing another scripts/run wrote can be read.
  const std::map<std::string, std::string> env = {{"DNASERVE_BUILD_DIR", dir + "/no-build"},
                                                  {"DNASERVE_URL", ""},
                                                  {"DNASERVE_API_KEY", ""}};
  auto try_variant = [&](const std::string& key, std::string* out) {
    return RunCommand({SourceDir() + "/scripts/try-variant", "--url", svc->base_url(), "--key",
                       key, "--s3-endpoint", s3->endpoint(), "--s3-bucket", "try-bucket",
                       "--s3-region", S3Server::kRegion, "--s3-access-key-id",
                       S3Server::kAccessKey, "--s3-secret-file", dir + "/secret",
                       "--output-dir", dir, dir + "/calls.vcf"},
                      out, env);
  };
  std::string out;
  int rc = try_variant(svc->keys().alice, &out);
  INFO(out);
  // The file went to the store named on the command line, and the service named there answered
  // the key given: this test service has no object store of its own, so it refuses the job with
  // its envelope (400 or 503), which the script prints.
  CHECK(s3->StoredKeys("try-bucket", "try/").size() == 1);
  CHECK(rc == 1);
  CHECK(std::regex_search(out, std::regex("refused: .*\"(bad_request|service_unavailable)\"")));
  CHECK(out.find("start the service first") == std::string::npos);
  rc = try_variant("dns_wrong_key_for_test", &out);
  CHECK(rc == 1);
  CHECK(out.find("\"unauthorized\"") != std::string::npos);
  // Without a URL it says what to pass.
  rc = RunCommand({SourceDir() + "/scripts/try-variant", dir + "/calls.vcf"}, &out, env);
  CHECK(rc == 2);
  CHECK(out.find("pass --url") != std::string::npos);
}

// The records the viewer test loads: real chr20 when this machine has it (else random DNA under
// the same names), named in each form the viewer places on the genome, plus one it cannot place.
// Record 0 `chr20:S-E`, record 1 `chr20:S,SSS-E,EEE`, record 2 `chr20_S-E` (10 kb, for
// expression), record 3 `plain`.
std::string ViewerFasta(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> records;
  std::string why;
  if (auto real = Chr20Records(dir + "/chr20.fa", 3, "8000,10000,10000", &why)) {
    std::ifstream in(*real);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line[0] == '>') records.push_back({line.substr(1), ""});
      else if (!records.empty()) records.back().second += line;
    }
  } else {
    WARN("no real chr20 sequence on this machine (" << why << "): the viewer runs on random DNA");
    records = {{"chr20:31000001-31008000", RandomDna(8000, 1)},
               {"chr20:31250001-31260000", RandomDna(10000, 2)},
               {"chr20:31500001-31510000", RandomDna(10000, 3)}};
  }
  REQUIRE(records.size() == 3);
  auto with_commas = [](const std::string& digits) {
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return out;
  };
  std::smatch m;
  REQUIRE(std::regex_match(records[1].first, m, std::regex("(chr20):(\\d+)-(\\d+)")));
  records[1].first = m.str(1) + ":" + with_commas(m.str(2)) + "-" + with_commas(m.str(3));
  REQUIRE(std::regex_match(records[2].first, m, std::regex("(chr20):(\\d+)-(\\d+)")));
  records[2].first = m.str(1) + "_" + m.str(2) + "-" + m.str(3);
  records.push_back({"plain", RandomDna(3000, 4)});
  const std::string path = dir + "/records.fa";
  std::ofstream out(path);
  for (const auto& [name, sequence] : records) out << ">" << name << "\n" << sequence << "\n";
  return path;
}

TEST_CASE("clients: the /viewer page in headless chromium draws tracks in genome coordinates, "
          "every record, the expression context and paced 429s at 1400x900 and 1024x768",
          "[clients][viewer]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string runner = SourceDir() + "/tests/viewer/viewer_test.js";
  if (!fs::exists(SourceDir() + "/tests/viewer/node_modules/puppeteer-core") ||
      !fs::exists("/usr/bin/chromium")) {
    FAIL("puppeteer-core (npm ci --prefix tests/viewer) or Debian's chromium is missing: "
         "run scripts/install-deps");
  }
  const std::string dir = MakeTempDir("dnaserve-viewer");
  const std::string fasta = ViewerFasta(dir);
  std::string out;
  // The "single" key allows one request in flight: several tasks at once draw 429s, which the
  // page must pace and show.
  int rc = RunCommand({"node", runner, "--url", svc->base_url(), "--key", svc->keys().alice,
                       "--single-key", svc->keys().single, "--fasta", fasta, "--screenshot-dir",
                       dir},
                      &out);
  const std::vector<std::pair<int, int>> sizes = {{1400, 900}, {1024, 768}};
  auto file_name = [](const std::pair<int, int>& size) {
    return "viewer-" + std::to_string(size.first) + "x" + std::to_string(size.second) + ".png";
  };
  // Kept on request, failed run or not: a failing layout is easier to fix when seen.
  if (const char* keep = std::getenv("DNASERVE_VIEWER_SCREENSHOTS")) {
    fs::create_directories(keep);
    std::vector<std::string> names = {"viewer-429-waiting.png"};  // the page while a task waits
    for (const auto& size : sizes) names.push_back(file_name(size));
    for (const auto& name : names) {
      if (fs::exists(dir + "/" + name)) {
        fs::copy_file(dir + "/" + name, fs::path(keep) / name, fs::copy_options::overwrite_existing);
      }
    }
  }
  INFO(out);
  REQUIRE(rc == 0);
  // Both sizes, each a PNG of exactly that size and more than a blank page's few kilobytes.
  for (const auto& size : sizes) {
    const std::string png = ReadAll(dir + "/" + file_name(size));
    INFO(file_name(size));
    CHECK(png.size() > 20000);
    CHECK(PngSize(png) == size);
  }
}

}  // namespace
}  // namespace dnaserve::testing
