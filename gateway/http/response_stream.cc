#include "gateway/http/response_stream.h"

namespace dnaserve::gateway {

void ResponseStream::Write(std::string data) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || data.empty()) return;
  if (sink_) {
    sink_(std::move(data));
  } else {
    pending_.push_back(std::move(data));
  }
}

void ResponseStream::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  closed_ = true;
  if (on_close_ && !close_sent_) {
    close_sent_ = true;
    on_close_();
  }
}

void ResponseStream::Attach(std::function<void(std::string)> sink, std::function<void()> on_close) {
  std::lock_guard<std::mutex> lock(mu_);
  sink_ = std::move(sink);
  on_close_ = std::move(on_close);
  for (auto& data : pending_) sink_(std::move(data));
  pending_.clear();
  if (closed_ && !close_sent_) {
    close_sent_ = true;
    on_close_();
  }
}

}  // namespace dnaserve::gateway
