// The READMEs' command blocks as tests (tests/readme/readme_blocks.py says the convention: a
// `<!-- readme-test: run | output | skip: <reason> -->` comment before every shell block). This
// test provides the service they run against: a real redis-server, one worker per task family
// serving the packages committed in worker/packages (the README quotes their results), a real
// runner and gateway on free loopback ports, started with the same launcher as the other
// integration tests; then runs every block of README.md, clients/python/README.md and
// deploy/README.md with DNASERVE_URL and DNASERVE_API_KEY set to this service.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <vector>

#include "gateway/auth/key_store.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/variant_data.h"

namespace dnaserve::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kTasks = {"promoter",  "splice",     "enhancer",
                                         "chromatin", "annotation", "expression"};

// The whole service over the committed packages, as scripts/run serves them.
class BundledStack {
 public:
  ~BundledStack() {
    gateway_.process().Stop();
    runner_.Stop();
    for (auto& worker : workers_) worker.process().Stop();
    if (redis_) redis_->Stop();
  }

  bool Start(std::string* why) {
    dir_ = MakeTempDir("dnaserve-readme-stack");
    redis_ = RedisServer::Start();
    if (!redis_) {
      *why = "redis-server is not installed or did not start";
      return false;
    }
    std::string spec;
    for (const auto& task : kTasks) {
      WorkerLaunch launch;
      launch.task = task;
      launch.models_dir = SourceDir() + "/worker/packages";
      launch.log_path = dir_ + "/worker-" + task + ".log";
      workers_.emplace_back();
      workers_.back().Start(std::move(launch));
      spec += (spec.empty() ? "" : ",") + task + "=" + workers_.back().address();
    }
    key_ = gateway::GenerateApiKey();
    // max_concurrency 4: the CLI's default -j, as the README says to match.
    std::ofstream(dir_ + "/keys.json")
        << "{\"keys\": [" << KeyEntry(key_, "readme", true, 600, 4) << "]}";
    if (!StartRunner(&runner_, redis_->url(), spec, dir_ + "/runner.log")) {
      *why = "the runner did not start; see " + dir_ + "/runner.log";
      return false;
    }
    GatewayLaunch launch;
    launch.redis_url = redis_->url();
    launch.workers = spec;
    launch.keys_file = dir_ + "/keys.json";
    launch.log_path = dir_ + "/gateway.log";
    launch.env["DNASERVE_DOCS_DIR"] = SourceDir() + "/gateway/docs/node_modules";
    gateway_.Start(std::move(launch));
    if (!gateway_.WaitUntilListening()) {
      *why = "the gateway did not start; see " + dir_;
      return false;
    }
    if (const std::string silent = WaitForModelLists(gateway_.base_url(), kTasks); !silent.empty()) {
      *why = "the " + silent + " worker never reported its models; see " + dir_;
      return false;
    }
    return true;
  }

  std::string url() const { return gateway_.base_url(); }
  const std::string& key() const { return key_; }

 private:
  std::string dir_;
  std::string key_;
  std::optional<RedisServer> redis_;
  std::vector<LaunchedWorker> workers_;
  ChildProcess runner_;
  LaunchedGateway gateway_;
};

TEST_CASE("readme: every command block of the READMEs runs, and its quoted output matches",
          "[readme]") {
  std::string why;
  // The worked example's chr20 (Debian's vt-examples), fetched into this build's data cache
  // first: a machine that cannot download it skips, as the other chr20 tests do.
  if (!DebianPackageFile("vt-examples", "usr/share/doc/vt/examples/ref/20.fa.gz", &why)) {
    WARN("skipped: no real chr20 sequence on this machine: " << why);
    return;
  }
  BundledStack stack;
  const bool started = stack.Start(&why);
  INFO(why);
  REQUIRE(started);
  std::string out;
  // The data cache of this build: the README's chr20 comes from Debian's vt-examples there.
  const int rc = RunCommand({"/usr/bin/python3", SourceDir() + "/tests/readme/readme_blocks.py",
                             "run", "--url", stack.url(), "--key", stack.key(), "--env",
                             "DNASERVE_DATA_CACHE=" + DataCacheDir(), "README.md",
                             "clients/python/README.md", "deploy/README.md"},
                            &out);
  INFO(out);
  CHECK(rc == 0);
  // Not vacuous: blocks ran and outputs were compared.
  CHECK(out.find("ran  README.md:") != std::string::npos);
  CHECK(out.find("same README.md:") != std::string::npos);
}

}  // namespace
}  // namespace dnaserve::testing
