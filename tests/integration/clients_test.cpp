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
#include "tests/support/variant_data.h"

namespace dnaserve::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
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
    // A copy, so that pip's build files never land in the source tree; without any build/ a
    // local `pip install` left there (setuptools would reuse its stale copies).
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

// Width and height from a PNG's IHDR chunk; {0, 0} when it is not a PNG.
std::pair<uint32_t, uint32_t> PngSize(const std::string& png) {
  if (png.size() < 24 || png.compare(1, 3, "PNG") != 0) return {0, 0};
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  return {be32(16), be32(20)};
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
  const std::vector<std::pair<uint32_t, uint32_t>> sizes = {{1400, 900}, {1024, 768}};
  auto file_name = [](const std::pair<uint32_t, uint32_t>& size) {
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
