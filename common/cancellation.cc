#include "common/cancellation.h"

#include <utility>

namespace dnaserve {

void Cancellation::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fired_) return;
  fired_ = true;
  flag_.store(true);
  for (auto& [id, callback] : callbacks_) callback();
}

Cancellation::Registration Cancellation::OnCancel(std::function<void()> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fired_) {
    callback();
    return Registration();
  }
  const uint64_t id = next_id_++;
  callbacks_.emplace(id, std::move(callback));
  return Registration(this, id);
}

Cancellation::Registration::Registration(Registration&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {}

Cancellation::Registration& Cancellation::Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    Reset();
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

Cancellation::Registration::~Registration() { Reset(); }

void Cancellation::Registration::Reset() {
  if (!owner_) return;
  std::lock_guard<std::mutex> lock(owner_->mu_);  // waits for Cancel() running the callback
  owner_->callbacks_.erase(id_);
  owner_ = nullptr;
}

}  // namespace dnaserve
