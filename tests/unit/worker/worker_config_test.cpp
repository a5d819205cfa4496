// The worker's flags and environment variables: what an operator writes in a Deployment is
// what the worker runs with, and a wrong value stops it with a message naming the flag.
#include "worker/config/worker_config.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace dnaserve::worker {
namespace {

StatusOr<WorkerConfig> Parse(std::vector<std::string> args, bool* exit_now = nullptr) {
  args.insert(args.begin(), "dnaserve-worker");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  bool ignored = false;
  return ParseWorkerConfig(static_cast<int>(argv.size()), argv.data(),
                           exit_now ? exit_now : &ignored);
}

const std::vector<std::string> kRequired = {"--task", "splice",   "--models-dir",
                                            "/m",     "--listen", "127.0.0.1:50051"};

std::vector<std::string> With(std::vector<std::string> more) {
  std::vector<std::string> args = kRequired;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

CATCH_TEST_CASE("worker settings: flags, defaults and environment variables", "[worker-config]") {
  auto c = Parse(With({"--threads", "4", "--queue-max-bases", "1000", "--no-batching",
                       "--admin-listen", "127.0.0.1:9090"}));
  CATCH_REQUIRE(c.ok());
  CATCH_CHECK(c->task == Task::kSplice);
  CATCH_CHECK(c->models_dir == "/m");
  CATCH_CHECK(c->listen_address == "127.0.0.1:50051");
  CATCH_CHECK(c->torch_threads == 4);
  CATCH_CHECK(c->batching.max_queue_bases == 1000);
  CATCH_CHECK_FALSE(c->batching.enabled);
  CATCH_CHECK(c->admin_listen == "127.0.0.1:9090");
  CATCH_CHECK(c->shutdown_grace_seconds == WorkerConfig{}.shutdown_grace_seconds);

  setenv("DNASERVE_WORKER_THREADS", "3", 1);
  setenv("DNASERVE_WORKER_BATCH_MAX_WAIT_US", "250", 1);
  auto from_env = Parse(kRequired);
  unsetenv("DNASERVE_WORKER_THREADS");
  unsetenv("DNASERVE_WORKER_BATCH_MAX_WAIT_US");
  CATCH_REQUIRE(from_env.ok());
  CATCH_CHECK(from_env->torch_threads == 3);
  CATCH_CHECK(from_env->batching.max_wait_us == 250);
  CATCH_CHECK(from_env->batching.enabled);
}

CATCH_TEST_CASE("worker settings: rows per pass, by task unless set, 0 turns it off",
                "[worker-config]") {
  auto by_task = Parse(kRequired);
  CATCH_REQUIRE(by_task.ok());
  CATCH_CHECK(by_task->batching.rows_per_pass == BatchingConfig::kRowsPerPassByTask);
  CATCH_CHECK(DefaultRowsPerPass(Task::kSplice) == 1);
  CATCH_CHECK(DefaultRowsPerPass(Task::kExpression) == 1);
  for (Task task : {Task::kPromoter, Task::kChromatin, Task::kEnhancer, Task::kAnnotation}) {
    CATCH_CHECK(DefaultRowsPerPass(task) == 4);
  }
  auto set = Parse(With({"--batch-rows-per-pass", "8"}));
  CATCH_REQUIRE(set.ok());
  CATCH_CHECK(set->batching.rows_per_pass == 8);
  setenv("DNASERVE_WORKER_BATCH_ROWS_PER_PASS", "0", 1);
  auto off = Parse(kRequired);
  unsetenv("DNASERVE_WORKER_BATCH_ROWS_PER_PASS");
  CATCH_REQUIRE(off.ok());
  CATCH_CHECK(off->batching.rows_per_pass == 0);
  // Whose R a model gets: the operator's setting, else its package's, else its task's.
  ModelManifest transformer;
  transformer.task = Task::kPromoter;
  transformer.batch_rows_per_pass = 1;
  ModelManifest plain;
  plain.task = Task::kChromatin;
  CATCH_CHECK(RowsPerPassFor(transformer, BatchingConfig::kRowsPerPassByTask) == 1);
  CATCH_CHECK(RowsPerPassFor(plain, BatchingConfig::kRowsPerPassByTask) == 4);
  CATCH_CHECK(RowsPerPassFor(transformer, 8) == 8);
  CATCH_CHECK(RowsPerPassFor(transformer, 0) == 0);
  auto bad = Parse(With({"--batch-rows-per-pass", "-2"}));
  CATCH_REQUIRE_FALSE(bad.ok());
  CATCH_CHECK(bad.status().message().find("--batch-rows-per-pass") != std::string::npos);
}

CATCH_TEST_CASE("worker settings: a missing or bad value is a bad_request naming the flag",
                "[worker-config]") {
  auto no_task = Parse({"--models-dir", "/m", "--listen", "127.0.0.1:1"});
  CATCH_REQUIRE_FALSE(no_task.ok());
  CATCH_CHECK(no_task.status().code() == ErrorCode::kBadRequest);
  CATCH_CHECK(no_task.status().message().find("--task") != std::string::npos);

  auto unknown_task = Parse({"--task", "folding", "--models-dir", "/m", "--listen", "x:1"});
  CATCH_REQUIRE_FALSE(unknown_task.ok());
  CATCH_CHECK(unknown_task.status().message().find("folding") != std::string::npos);

  auto threads = Parse(With({"--threads", "999"}));
  CATCH_REQUIRE_FALSE(threads.ok());
  CATCH_CHECK(threads.status().message().find("--threads") != std::string::npos);

  auto not_a_number = Parse(With({"--queue-max-bases", "lots"}));
  CATCH_REQUIRE_FALSE(not_a_number.ok());
  CATCH_CHECK(not_a_number.status().message().find("--queue-max-bases") != std::string::npos);

  CATCH_CHECK_FALSE(Parse(With({"--no-such-flag"})).ok());
}

CATCH_TEST_CASE("worker settings: --help asks the binary to exit cleanly", "[worker-config]") {
  std::ostringstream help;
  std::streambuf* const stdout_buffer = std::cout.rdbuf(help.rdbuf());
  bool exit_now = false;
  const bool parsed = Parse({"--help"}, &exit_now).ok();
  std::cout.rdbuf(stdout_buffer);
  CATCH_CHECK(parsed);
  CATCH_CHECK(exit_now);
  CATCH_CHECK(help.str().find("DNASERVE_WORKER_QUEUE_MAX_BASES") != std::string::npos);
}

}  // namespace dnaserve::worker
