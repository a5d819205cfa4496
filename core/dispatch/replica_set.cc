#include "core/dispatch/replica_set.h"

#include <algorithm>

namespace dnaserve::core {

ReplicaSet::ReplicaSet(size_t replicas, int timeouts_to_eject)
    : timeouts_to_eject_(std::max(1, timeouts_to_eject)), replicas_(replicas) {}

std::optional<size_t> ReplicaSet::Pick(const std::vector<size_t>& tried) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = replicas_.size();
  if (n == 0) return std::nullopt;
  auto untried = [&](size_t i) { return std::find(tried.begin(), tried.end(), i) == tried.end(); };
  // Two passes from the cursor: replicas in rotation first, then any untried one.
  for (bool only_in_rotation : {true, false}) {
    for (size_t step = 0; step < n; ++step) {
      const size_t i = (next_ + step) % n;
      if (!untried(i) || (only_in_rotation && !replicas_[i].in_rotation)) continue;
      next_ = (i + 1) % n;
      return i;
    }
  }
  return std::nullopt;
}

bool ReplicaSet::SetInRotation(Replica& replica, bool in_rotation) {
  const bool changed = replica.in_rotation != in_rotation;
  replica.in_rotation = in_rotation;
  return changed;
}

bool ReplicaSet::Report(size_t replica, HealthVerdict verdict) {
  std::lock_guard<std::mutex> lock(mu_);
  if (replica >= replicas_.size()) return false;
  Replica& r = replicas_[replica];
  switch (verdict) {
    case HealthVerdict::kServing:
      r.timeouts = 0;
      return SetInRotation(r, true);
    case HealthVerdict::kNotServing:
      r.timeouts = 0;
      return SetInRotation(r, false);
    case HealthVerdict::kNoAnswer:
      if (++r.timeouts >= timeouts_to_eject_) return SetInRotation(r, false);
      return false;
  }
  return false;
}

bool ReplicaSet::Eject(size_t replica) {
  std::lock_guard<std::mutex> lock(mu_);
  if (replica >= replicas_.size()) return false;
  return SetInRotation(replicas_[replica], false);
}

bool ReplicaSet::InRotation(size_t replica) const {
  std::lock_guard<std::mutex> lock(mu_);
  return replica < replicas_.size() && replicas_[replica].in_rotation;
}

size_t ReplicaSet::in_rotation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(replicas_.begin(), replicas_.end(),
                                           [](const Replica& r) { return r.in_rotation; }));
}

}  // namespace dnaserve::core
