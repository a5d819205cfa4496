// Progress notifications for tool calls whose client sent a progressToken: while the job runs,
// its current_percent is read from the job store (where the runner records it, at most twice a
// second) and each rise becomes a notifications/progress message.
//
// The gateway's HTTP transport sends a response whole, so the notifications collected for a
// call are written into its text/event-stream response ahead of the result rather than as they
// happen; a client that needs live progress runs the job async and polls get_job.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gateway/jobs/job_store.h"

namespace dnaserve::gateway::mcp {

class ProgressWatch {
 public:
  explicit ProgressWatch(JobStore* jobs);
  ~ProgressWatch();
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  // Starts watching a job; `token_json` is the client's progressToken as JSON text.
  int Watch(const std::string& job_id, const std::string& owner, const std::string& token_json);
  // Stops watching; the notifications (JSON-RPC messages) collected for it, oldest first.
  std::vector<std::string> Take(int watch_id);

 private:
  struct Entry {
    std::string job_id;
    std::string owner;
    std::string token_json;
    double last_percent = 0;
    std::vector<std::string> notifications;
  };
  void Loop();

  JobStore* jobs_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::map<int, Entry> entries_;
  int next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;  // started on the first Watch
};

}  // namespace dnaserve::gateway::mcp
