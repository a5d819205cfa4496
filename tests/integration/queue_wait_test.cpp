// A real dnaserve-runner with nothing to do, against a real redis-server and a real promoter
// worker (so that the runner is ready and waits for work as deployed, with the default claim
// timeout): the Redis commands it sends over a quiet window, counted with MONITOR on a
// connection of its own, and SIGTERM ending it without waiting for its blocked reads.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "tests/integration/service_fixture.h"
#include "tests/support/redis_monitor.h"

using namespace dnaserve::testing;

namespace {

class IdleRunner {
 public:
  ~IdleRunner() {
    runner_.Stop();
    worker_.process().Stop();
    if (redis_) redis_->Stop();
  }

  // False with `failure` set when the models cannot be made; REQUIREs everything else.
  bool Start(std::string* failure) {
    dir_ = MakeTempDir("dnaserve-idle-runner");
    const std::optional<std::string> models = GeneratedModelsDir(failure);
    if (!models) return false;
    redis_ = RedisServer::Start();
    REQUIRE(redis_.has_value());
    WorkerLaunch worker;
    worker.task = "promoter";
    worker.models_dir = *models;
    worker.log_path = dir_ + "/worker.log";
    REQUIRE(worker_.Start(std::move(worker)));
    REQUIRE(worker_.WaitUntilListening());
    admin_port_ = FreePort();
    INFO("logs in " << dir_);
    // The claim timeout as deployed (30 s; the test default of 3 s looks for dead runners'
    // jobs every second).
    REQUIRE(StartRunner(&runner_, redis_->url(), "promoter=" + worker_.address(),
                        dir_ + "/runner.log",
                        {{"DNASERVE_RUNNER_CLAIM_TIMEOUT", "30"},
                         {"DNASERVE_ADMIN_LISTEN", Loopback(admin_port_)}}));
    // Ready: it knows the worker's models. Before that it takes no work (and sends Redis
    // nothing), which would make the count below say nothing.
    REQUIRE(WaitFor(
        [&] { return HttpRequest("GET", LoopbackUrl(admin_port_) + "/ready", {}, "", 2).status == 200; },
        std::chrono::seconds(60)));
    return true;
  }

  RedisServer& redis() { return *redis_; }
  ChildProcess& runner() { return runner_; }

 private:
  std::string dir_;
  std::optional<RedisServer> redis_;
  LaunchedWorker worker_;
  ChildProcess runner_;
  int admin_port_ = 0;
};

}  // namespace

TEST_CASE("an idle dnaserve-runner sends Redis at most one command a second",
          "[integration][runner][idle]") {
  IdleRunner stack;
  std::string failure;
  const bool started = stack.Start(&failure);
  INFO(failure);
  REQUIRE(started);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the /ready checks' PINGs are over
  RedisMonitor monitor;
  REQUIRE(monitor.Start(stack.redis().port()));
  // Longer than the longest blocked read (10 s), so each loop shows itself at least once.
  constexpr int kWindowSeconds = 12;
  std::this_thread::sleep_for(std::chrono::seconds(kWindowSeconds));
  const auto commands = monitor.Lines();
  monitor.Stop();
  for (const auto& line : commands) UNSCOPED_INFO(line);
  REQUIRE(stack.runner().Running());
  // Waiting, not gone: both loops blocked in their reads and came back to them.
  auto seen = [&](const std::string& command) {
    for (const auto& line : commands) {
      if (line.find("\"" + command + "\"") != std::string::npos) return true;
    }
    return false;
  };
  CHECK(seen("XREAD"));
  CHECK(seen("XREADGROUP"));
  // Polling every 50 ms on each loop sent about 60 a second.
  CHECK(commands.size() <= static_cast<size_t>(kWindowSeconds));
}

TEST_CASE("an idle dnaserve-runner given SIGTERM exits at once, not when its reads time out",
          "[integration][runner][idle]") {
  IdleRunner stack;
  std::string failure;
  const bool started = stack.Start(&failure);
  INFO(failure);
  REQUIRE(started);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // blocked in its reads (up to 10 s)
  stack.runner().Terminate();
  const auto exit_code = stack.runner().WaitExit(std::chrono::seconds(5));
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
}
