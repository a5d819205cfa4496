// Starting dnaserve's own processes for tests and benchmarks: workers, runners and gateways on
// free loopback ports, each a ChildProcess that is always stopped. The one place that knows their
// command lines and settings; tests/integration/service_fixture.h builds the whole service from
// these pieces, and a test that needs one more process of a kind starts it here too.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/test_env.h"

namespace dnaserve::testing {

std::string Loopback(int port);     // "127.0.0.1:<port>": a gRPC target or a listen address
std::string LoopbackUrl(int port);  // "http://127.0.0.1:<port>"

// The generated model packages (never modified by tests): $DNASERVE_TEST_MODELS_DIR when set
// (scripts/test generates them once and exports it), else `/usr/bin/python3
// scripts/make_models.py` run once per test process into a temporary directory. nullopt, with
// the reason in *why, when Debian's python3-torch is missing or the script fails.
std::optional<std::string> GeneratedModelsDir(std::string* why);

// `s` quoted for sh, for the commands tests run through std::system / popen.
std::string ShellQuote(const std::string& s);

std::string WorkerBinary();   // <build>/worker/dnaserve-worker
std::string RunnerBinary();   // <build>/runner/dnaserve-runner
std::string GatewayBinary();  // <build>/gateway/dnaserve-gateway

// How to start one dnaserve-worker.
struct WorkerLaunch {
  std::string binary;      // "" = this build's WorkerBinary()
  std::string task;        // "promoter", ...
  std::string models_dir;  // --models-dir
  bool admin = false;      // also an operations listener (/metrics, /ready, /live)
  std::vector<std::string> extra_args;      // appended to the command line
  std::map<std::string, std::string> env;   // added to the environment
  std::string log_path;    // stdout and stderr; "" = /dev/null
};

// One dnaserve-worker on free loopback ports, stopped on destruction. The ports are picked once,
// so Restart brings a killed worker back on the same address.
class LaunchedWorker {
 public:
  // Picks the ports and starts the process without waiting for it (WaitUntilListening does).
  bool Start(WorkerLaunch launch);
  bool Restart();
  bool WaitUntilListening(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

  int port() const { return port_; }
  std::string address() const { return Loopback(port_); }
  int admin_port() const { return admin_port_; }  // 0 without an operations listener
  std::string admin_url() const { return LoopbackUrl(admin_port_); }
  const std::string& log_path() const { return launch_.log_path; }
  ChildProcess& process() { return process_; }

 private:
  WorkerLaunch launch_;
  int port_ = 0;
  int admin_port_ = 0;
  ChildProcess process_;
};

// Starts a dnaserve-runner taking jobs from `redis_url` and calling `workers` (a DNASERVE_WORKERS
// value), its output in `log_path`; `extra` settings are added to (and override) the defaults.
// `binary` "" is this build's RunnerBinary().
bool StartRunner(ChildProcess* process, const std::string& redis_url, const std::string& workers,
                 const std::string& log_path, const std::map<std::string, std::string>& extra = {},
                 const std::string& binary = "");

// How to start one dnaserve-gateway.
struct GatewayLaunch {
  std::string binary;     // "" = this build's GatewayBinary()
  std::string redis_url;
  std::string workers;    // DNASERVE_WORKERS
  std::string keys_file;  // DNASERVE_KEYS_FILE
  bool admin = false;     // also an operations listener (/metrics, /ready, /live)
  // Per-address limits high enough for a test that sends many requests from 127.0.0.1.
  bool generous_ip_limits = true;
  std::map<std::string, std::string> env;  // more settings; they override the above
  std::string log_path;   // stdout and stderr; "" = /dev/null
};

// One dnaserve-gateway on free loopback ports, stopped on destruction; Restart keeps the ports.
class LaunchedGateway {
 public:
  // Picks the ports and starts the process without waiting for it (WaitUntilListening does).
  bool Start(GatewayLaunch launch);
  bool Restart();
  bool WaitUntilListening(std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;

  int port() const { return port_; }
  std::string base_url() const { return LoopbackUrl(port_); }
  int admin_port() const { return admin_port_; }  // 0 without an operations listener
  std::string admin_url() const { return LoopbackUrl(admin_port_); }
  const std::string& log_path() const { return launch_.log_path; }
  ChildProcess& process() { return process_; }

 private:
  GatewayLaunch launch_;
  int port_ = 0;
  int admin_port_ = 0;
  ChildProcess process_;
};

// Polls GET <base_url>/v1/tasks/<task>/models until every task in `tasks` answers 200 (its
// workers have reported their models): the first task that had not by `timeout`, "" when all did.
std::string WaitForModelLists(const std::string& base_url, const std::vector<std::string>& tasks,
                              std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace dnaserve::testing
