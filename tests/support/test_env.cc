#include "tests/support/test_env.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

extern char** environ;

namespace dnaserve::testing {

std::string SourceDir() { return DNASERVE_SOURCE_DIR; }
std::string BinaryDir() { return DNASERVE_BINARY_DIR; }

namespace {

// Paths to delete when the process exits. A function-local static: it is built by the first
// MakeTempDir call, so static fixtures that make directories are destroyed (their processes
// stopped) before it runs.
class ExitCleanup {
 public:
  ~ExitCleanup() {
    if (std::getenv("DNASERVE_KEEP_TEST_DIRS") != nullptr) return;
    std::error_code ignored;
    for (const std::string& path : paths_) std::filesystem::remove_all(path, ignored);
  }
  void Add(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    paths_.push_back(path);
  }

 private:
  std::mutex mu_;
  std::vector<std::string> paths_;
};

ExitCleanup& Cleanup() {
  static ExitCleanup cleanup;
  return cleanup;
}

}  // namespace

void RemoveAtExit(const std::string& path) { Cleanup().Add(path); }

std::string MakeTempDir(const std::string& prefix) {
  std::string templ = "/tmp/" + prefix + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  char* dir = mkdtemp(buf.data());
  if (dir == nullptr) return std::string("/tmp");
  RemoveAtExit(dir);
  return std::string(dir);
}

namespace {

// A loopback port the kernel says is free now, or 0.
int KernelFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace

int FreePort() {
  // ctest runs test processes side by side, and a port is free only until its server binds it:
  // two processes can be handed the same one in that window. gRPC servers bind with
  // SO_REUSEPORT by default, so both would then listen and share connections (a gateway of one
  // test talking to a worker of another). Each port handed out is therefore claimed across
  // processes with an flock on a file named after it, held until this process exits.
  static const std::string dir = [] {
    std::string d = "/tmp/dnaserve-test-ports";
    mkdir(d.c_str(), 0777);
    return d;
  }();
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int port = KernelFreePort();
    if (port == 0) continue;
    const std::string claim = dir + "/" + std::to_string(port);
    int fd = open(claim.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return port;  // no claims possible here: the kernel's word alone
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return port;  // fd stays open: the claim lasts
    close(fd);                                            // another process holds this port
  }
  return KernelFreePort();
}

bool WaitForPort(int port, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    close(fd);
    if (rc == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int ConnectLoopback(int port, std::chrono::milliseconds receive_timeout) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{static_cast<time_t>(receive_timeout.count() / 1000),
             static_cast<suseconds_t>((receive_timeout.count() % 1000) * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }
ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Stop();
    pid_ = other.pid_;
    other.pid_ = -1;
  }
  return *this;
}
ChildProcess::~ChildProcess() { Stop(); }

bool ChildProcess::Start(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         const std::string& log_path) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    if (env.count(key) == 0) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> c_argv;
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  std::vector<char*> c_env;
  for (const auto& e : env_strings) c_env.push_back(const_cast<char*>(e.c_str()));
  c_env.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    setpgid(0, 0);
    int out = open(log_path.empty() ? "/dev/null" : log_path.c_str(),
                   O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0);
    execve(c_argv[0], c_argv.data(), c_env.data());
    _exit(127);
  }
  pid_ = pid;
  return true;
}

bool ChildProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void ChildProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void ChildProcess::Terminate() {
  if (pid_ > 0) kill(pid_, SIGTERM);
}

std::optional<int> ChildProcess::WaitExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return false;
  Terminate();
  std::optional<int> exit_code = WaitExit(grace);
  if (!exit_code) {
    Kill();
    return false;
  }
  return *exit_code == 0;
}

namespace {
std::string FindRedisServer() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

bool StartRedisOn(ChildProcess& process, int port) {
  std::string exe = FindRedisServer();
  if (exe.empty()) return false;
  if (!process.Start({exe, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "",
                      "--appendonly", "no", "--protected-mode", "yes"})) {
    return false;
  }
  return WaitForPort(port, std::chrono::seconds(10));
}
}  // namespace

std::optional<RedisServer> RedisServer::Start() {
  RedisServer server;
  server.port_ = FreePort();
  if (!StartRedisOn(server.process_, server.port_)) return std::nullopt;
  return server;
}

bool RedisServer::Restart() {
  process_.Stop();
  return StartRedisOn(process_, port_);
}

namespace {
size_t WriteBody(char* ptr, size_t size, size_t nmemb, void* userdata) {
  static_cast<std::string*>(userdata)->append(ptr, size * nmemb);
  return size * nmemb;
}
size_t WriteHeader(char* ptr, size_t size, size_t nmemb, void* userdata) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(userdata);
  std::string line(ptr, size * nmemb);
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    auto b = value.find_first_not_of(" \t");
    auto e = value.find_last_not_of(" \t\r\n");
    value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
    (*headers)[name] = value;
  }
  return size * nmemb;
}
}  // namespace

HttpResult HttpRequest(const std::string& method, const std::string& url,
                       const std::vector<std::string>& headers, const std::string& body,
                       long timeout_seconds) {
  static const bool initialised = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == 0; }();
  (void)initialised;
  HttpResult result;
  CURL* curl = curl_easy_init();
  if (!curl) {
    result.error = "curl_easy_init failed";
    return result;
  }
  curl_slist* list = curl_slist_append(nullptr, "Expect:");
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, timeout_seconds);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (method == "POST" || method == "PUT" || !body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &result.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &result.headers);
  CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  } else {
    result.error = curl_easy_strerror(rc);
  }
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return result;
}

}  // namespace dnaserve::testing
