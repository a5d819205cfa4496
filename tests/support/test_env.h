// Shared helpers for dnaserve tests: free loopback ports, child processes that are always
// stopped, a real redis-server, and an HTTP client over libcurl.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dnaserve::testing {

std::string SourceDir();  // repository root
std::string BinaryDir();  // CMake build root
// A fresh temporary directory under /tmp. It is removed with everything in it when the test
// process exits, unless DNASERVE_KEEP_TEST_DIRS is set (post-mortems of a local run: the
// integration fixtures keep their processes' logs there).
std::string MakeTempDir(const std::string& prefix);
// Removes `path` (a file or a directory tree) at process exit, as MakeTempDir's directories are.
void RemoveAtExit(const std::string& path);

// A loopback TCP port that was free a moment ago (bind to port 0, read it back, close), claimed
// for this process so that no other test process is handed it too (see test_env.cc).
int FreePort();
// Polls until something accepts on 127.0.0.1:port, or the timeout passes.
bool WaitForPort(int port, std::chrono::milliseconds timeout);
// A TCP connection to 127.0.0.1:`port` whose reads give up after `receive_timeout` (raw-bytes
// tests of a server's framing); the caller closes it. -1 when it cannot connect.
int ConnectLoopback(int port, std::chrono::milliseconds receive_timeout);

// A child process started with execve; SIGTERM (then SIGKILL after 5 s) on Stop/destruction.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  // argv[0] is the executable path. `env` entries are added to the current environment.
  // stdout+stderr go to `log_path` when given, else /dev/null.
  bool Start(const std::vector<std::string>& argv,
             const std::map<std::string, std::string>& env = {},
             const std::string& log_path = "");
  // SIGTERM, wait up to `grace`, then SIGKILL. True when the process exited on its own with
  // status 0 within the grace period (a clean shutdown).
  bool Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
  void Kill();           // SIGKILL now
  void Terminate();      // SIGTERM, without waiting (graceful-shutdown tests)
  // Waits for the process to end: its exit code (128 + signal when killed), or nullopt when it
  // is still running after `timeout`.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout);
  bool Running();
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
};

// A real redis-server on a free loopback port with persistence off.
class RedisServer {
 public:
  // Empty optional when redis-server is not installed or did not start.
  static std::optional<RedisServer> Start();
  RedisServer(RedisServer&&) = default;
  RedisServer& operator=(RedisServer&&) = default;
  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  void Stop() { process_.Stop(); }
  // Restarts on the same port (data is lost: persistence is off).
  bool Restart();

 private:
  RedisServer() = default;
  int port_ = 0;
  ChildProcess process_;
};

struct HttpResult {
  long status = 0;  // 0 when the request failed at the transport level
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
  std::string error;
  std::optional<std::string> Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    if (it == headers.end()) return std::nullopt;
    return it->second;
  }
};

// One HTTP request over libcurl. `headers` are "Name: value" lines; "Expect:" is always added
// (Pistache never answers 100-continue).
HttpResult HttpRequest(const std::string& method, const std::string& url,
                       const std::vector<std::string>& headers = {},
                       const std::string& body = "", long timeout_seconds = 60);

}  // namespace dnaserve::testing
