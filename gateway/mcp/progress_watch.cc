#include "gateway/mcp/progress_watch.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>

#include "gateway/mcp/json_rpc.h"

namespace dnaserve::gateway::mcp {
namespace {

constexpr auto kInterval = std::chrono::milliseconds(250);

std::string ProgressNotification(const std::string& token_json, double percent,
                                 const std::string& message) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("progress");
  w.Double(percent);
  w.Key("total");
  w.Int(100);
  if (!message.empty()) {
    w.Key("message");
    w.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
  }
  w.EndObject();
  std::string params(buffer.GetString(), buffer.GetSize());
  params.insert(1, "\"progressToken\":" + token_json + ",");
  return RpcNotificationJson("notifications/progress", params);
}

}  // namespace

ProgressWatch::ProgressWatch(core::JobStore* jobs) : jobs_(jobs) {}

ProgressWatch::~ProgressWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int ProgressWatch::Watch(const std::string& job_id, const std::string& owner,
                         const std::string& token_json,
                         std::function<void(const std::string&)> sink) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  const int id = next_id_++;
  entries_[id] = Entry{job_id, owner, token_json, 0, {}, std::move(sink)};
  return id;
}

std::vector<std::string> ProgressWatch::Take(int watch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(watch_id);
  if (it == entries_.end()) return {};
  auto out = std::move(it->second.notifications);
  entries_.erase(it);
  return out;
}

void ProgressWatch::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, kInterval);
    if (stopping_) break;
    // Read the store without the lock (it may be Redis); entries may come and go meanwhile.
    std::vector<std::pair<int, Entry>> snapshot;
    for (const auto& [id, e] : entries_)
      snapshot.emplace_back(id, Entry{e.job_id, e.owner, "", 0, {}, nullptr});
    lock.unlock();
    std::vector<std::pair<int, core::JobRecord>> read;
    for (const auto& [id, e] : snapshot) {
      auto record = jobs_->Get(e.job_id, e.owner);
      if (record.ok()) read.emplace_back(id, std::move(record).value());
    }
    lock.lock();
    for (auto& [id, record] : read) {
      auto it = entries_.find(id);
      if (it == entries_.end()) continue;
      Entry& e = it->second;
      // Progress must only rise (MCP); a finished job's result is the answer, not a notification.
      if (record.state != core::JobState::kRunning || record.progress_percent <= e.last_percent) continue;
      e.last_percent = record.progress_percent;
      std::string note =
          ProgressNotification(e.token_json, record.progress_percent, record.progress_message);
      if (e.sink) {
        e.sink(note);  // only queues bytes on the response stream
      } else {
        e.notifications.push_back(std::move(note));
      }
    }
  }
}

}  // namespace dnaserve::gateway::mcp
