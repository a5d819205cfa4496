#include "tests/support/redis_monitor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>

namespace dnaserve::testing {

bool RedisMonitor::Start(int port) {
  Stop();
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};  // for the confirmation only
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  const std::string command = "MONITOR\r\n";
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      send(fd_, command.data(), command.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(command.size())) {
    Stop();
    return false;
  }
  // "+OK\r\n" first; commands only follow it.
  std::string confirmation;
  char c;
  while (confirmation.size() < 5 && recv(fd_, &c, 1, 0) == 1) confirmation.push_back(c);
  if (confirmation != "+OK\r\n") {
    Stop();
    return false;
  }
  timeval forever{0, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
  reader_ = std::thread([this] { Read(); });
  return true;
}

void RedisMonitor::Stop() {
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);  // the reader's recv returns
  if (reader_.joinable()) reader_.join();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void RedisMonitor::Read() {
  char buffer[16384];
  while (true) {
    const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) return;
    pending_.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t end; (end = pending_.find("\r\n", start)) != std::string::npos; start = end + 2) {
      // Each command is one status reply, "+..." (arguments are escaped, so no raw newlines).
      if (pending_[start] != '+') continue;
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(pending_.substr(start + 1, end - start - 1));
    }
    pending_.erase(0, start);
  }
}

std::vector<std::string> RedisMonitor::Lines() {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

size_t RedisMonitor::Count() {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_.size();
}

int64_t RedisMonitor::Micros(const std::string& line) {
  // "1700000000.123456 [0 127.0.0.1:5000] ..."
  const size_t dot = line.find('.');
  if (dot == std::string::npos || dot + 7 > line.size()) return -1;
  char* end = nullptr;
  const long long seconds = std::strtoll(line.c_str(), &end, 10);
  if (end != line.c_str() + dot) return -1;
  const long long micros = std::strtoll(line.c_str() + dot + 1, &end, 10);
  if (end != line.c_str() + dot + 7) return -1;
  return seconds * 1000000LL + micros;
}

}  // namespace dnaserve::testing
