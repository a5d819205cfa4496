#include "tests/support/service_launcher.h"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <thread>

namespace dnaserve::testing {

std::string Loopback(int port) { return "127.0.0.1:" + std::to_string(port); }
std::string LoopbackUrl(int port) { return "http://" + Loopback(port); }

std::optional<std::string> GeneratedModelsDir(std::string* why) {
  static std::once_flag once;
  static std::optional<std::string> dir;
  static std::string reason;
  std::call_once(once, [] {
    if (const char* shared = std::getenv("DNASERVE_TEST_MODELS_DIR"); shared && *shared) {
      dir = shared;
      return;
    }
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
      reason = "Debian's python3-torch is not installed (/usr/bin/python3 cannot import torch), "
               "so the test models cannot be generated (run scripts/test, which installs it)";
      return;
    }
    const std::string out = MakeTempDir("dnaserve-test-models");
    const std::string command = "/usr/bin/python3 " + SourceDir() +
                                "/scripts/make_models.py --out " + out + " >" + out +
                                "/make_models.log 2>&1";
    if (std::system(command.c_str()) != 0) {
      reason = "scripts/make_models.py failed; see " + out + "/make_models.log";
      return;
    }
    dir = out;
  });
  if (!dir && why) *why = reason;
  return dir;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

std::string WorkerBinary() { return BinaryDir() + "/worker/dnaserve-worker"; }
std::string RunnerBinary() { return BinaryDir() + "/runner/dnaserve-runner"; }
std::string GatewayBinary() { return BinaryDir() + "/gateway/dnaserve-gateway"; }

bool LaunchedWorker::Start(WorkerLaunch launch) {
  launch_ = std::move(launch);
  port_ = FreePort();
  admin_port_ = launch_.admin ? FreePort() : 0;
  return Restart();
}

bool LaunchedWorker::Restart() {
  std::vector<std::string> argv = {launch_.binary.empty() ? WorkerBinary() : launch_.binary,
                                   "--task", launch_.task, "--listen", Loopback(port_)};
  if (!launch_.models_dir.empty()) {
    argv.insert(argv.end(), {"--models-dir", launch_.models_dir});
  }
  if (admin_port_ != 0) argv.insert(argv.end(), {"--admin-listen", Loopback(admin_port_)});
  argv.insert(argv.end(), launch_.extra_args.begin(), launch_.extra_args.end());
  return process_.Start(argv, launch_.env, launch_.log_path);
}

bool LaunchedWorker::WaitUntilListening(std::chrono::milliseconds timeout) const {
  return WaitForPort(port_, timeout);
}

bool StartRunner(ChildProcess* process, const std::string& redis_url, const std::string& workers,
                 const std::string& log_path, const std::map<std::string, std::string>& extra,
                 const std::string& binary) {
  static int counter = 0;
  std::map<std::string, std::string> env = {
      {"DNASERVE_REDIS_URL", redis_url},
      {"DNASERVE_WORKERS", workers},
      {"DNASERVE_RUNNER_ID", "test-runner-" + std::to_string(getpid()) + "-" +
                                 std::to_string(++counter)},
      // Quick hand-overs, so that the runner-death tests take seconds, not minutes.
      {"DNASERVE_RUNNER_CLAIM_TIMEOUT", "3"}};
  for (const auto& [k, v] : extra) env[k] = v;
  return process->Start({binary.empty() ? RunnerBinary() : binary}, env, log_path);
}

bool LaunchedGateway::Start(GatewayLaunch launch) {
  launch_ = std::move(launch);
  port_ = FreePort();
  admin_port_ = launch_.admin ? FreePort() : 0;
  return Restart();
}

bool LaunchedGateway::Restart() {
  std::map<std::string, std::string> env = {{"DNASERVE_PORT", std::to_string(port_)},
                                            {"DNASERVE_KEYS_FILE", launch_.keys_file},
                                            {"DNASERVE_REDIS_URL", launch_.redis_url},
                                            {"DNASERVE_WORKERS", launch_.workers}};
  if (admin_port_ != 0) env["DNASERVE_ADMIN_LISTEN"] = Loopback(admin_port_);
  if (launch_.generous_ip_limits) {
    env["DNASERVE_IP_RATE"] = "10000";
    env["DNASERVE_IP_BURST"] = "10000";
  }
  for (const auto& [k, v] : launch_.env) env[k] = v;
  return process_.Start({launch_.binary.empty() ? GatewayBinary() : launch_.binary}, env,
                        launch_.log_path);
}

bool LaunchedGateway::WaitUntilListening(std::chrono::milliseconds timeout) const {
  return WaitForPort(port_, timeout);
}

std::string WaitForModelLists(const std::string& base_url, const std::vector<std::string>& tasks,
                              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& task : tasks) {
    while (HttpRequest("GET", base_url + "/v1/tasks/" + task + "/models").status != 200) {
      if (std::chrono::steady_clock::now() > deadline) return task;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return "";
}

}  // namespace dnaserve::testing
