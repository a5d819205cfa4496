// A one-way signal that some work is no longer wanted: its HTTP client went away, its job was
// dropped, the process is stopping. Code that checks between steps reads flag(); code blocked on
// something else (a gRPC stream waiting for a worker) registers a callback that unblocks it, so
// the signal takes effect at once instead of at the next step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace dnaserve {

class Cancellation {
 public:
  Cancellation() = default;
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  // Sets the flag, then runs every registered callback once, on this thread. Later calls do
  // nothing.
  void Cancel();
  bool cancelled() const { return flag_.load(); }
  // For code that polls a plain flag (it turns true before the callbacks run).
  const std::atomic<bool>* flag() const { return &flag_; }

  // Unregisters its callback when destroyed, waiting for it if it is running. REQUIRES: destroyed
  // before its Cancellation.
  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration();

   private:
    friend class Cancellation;
    Registration(Cancellation* owner, uint64_t id) : owner_(owner), id_(id) {}
    void Reset();
    Cancellation* owner_ = nullptr;
    uint64_t id_ = 0;
  };

  // Runs `callback` when Cancel() is called, or at once (on this thread) when it already was.
  // Callbacks run under this object's lock: they must be quick and must not register or
  // unregister on the same Cancellation (they may cancel another one).
  [[nodiscard]] Registration OnCancel(std::function<void()> callback);

 private:
  std::atomic<bool> flag_{false};
  std::mutex mu_;
  bool fired_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::function<void()>> callbacks_;
};

}  // namespace dnaserve
