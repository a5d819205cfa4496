// Progress notifications for tool calls whose client sent a progressToken: while the job runs,
// its current_percent is read from the job store (where the runner records it, at most twice a
// second) and each rise becomes a notifications/progress message.
//
// With a sink (a streamed text/event-stream response) each notification is handed over as it
// is made, while the job runs; without one they are collected for Take.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/jobs/job_store.h"

namespace dnaserve::gateway::mcp {

class ProgressWatch {
 public:
  explicit ProgressWatch(core::JobStore* jobs);
  ~ProgressWatch();
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  // Starts watching a job; `token_json` is the client's progressToken as JSON text. `sink`
  // (may be null) receives each notification at once, on the watch's thread.
  int Watch(const std::string& job_id, const std::string& owner, const std::string& token_json,
            std::function<void(const std::string&)> sink = nullptr);
  // Stops watching; the notifications (JSON-RPC messages) collected for it, oldest first.
  std::vector<std::string> Take(int watch_id);

 private:
  struct Entry {
    std::string job_id;
    std::string owner;
    std::string token_json;
    double last_percent = 0;
    std::vector<std::string> notifications;
    std::function<void(const std::string&)> sink;
  };
  void Loop();

  core::JobStore* jobs_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::map<int, Entry> entries_;
  int next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;  // started on the first Watch
};

}  // namespace dnaserve::gateway::mcp
