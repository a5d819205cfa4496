// A response body written while it is produced: the MCP endpoint's Server-Sent Events, where
// progress notifications must reach the client while the job runs, not with its result. The
// HTTP server sends the status and headers at once, each Write as one HTTP/1.1 chunk, and ends
// the response on Close. Writes made before the server attaches are kept and sent first.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace dnaserve::gateway {

class ResponseStream {
 public:
  void Write(std::string data);
  // Ends the body; later writes are dropped.
  void Close();

  // The server's side. `sink` gets every write in order; `on_close` runs once, after the last.
  // Both run under this stream's lock: they must only queue the bytes.
  void Attach(std::function<void(std::string)> sink, std::function<void()> on_close);

 private:
  std::mutex mu_;
  std::vector<std::string> pending_;
  std::function<void(std::string)> sink_;
  std::function<void()> on_close_;
  bool closed_ = false;
  bool close_sent_ = false;
};

}  // namespace dnaserve::gateway
