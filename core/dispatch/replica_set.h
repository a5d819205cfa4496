// Which replicas of one task family are in rotation, and whose turn it is. Pure bookkeeping (no
// gRPC), driven by two kinds of evidence:
//  - health checks (grpc.health.v1 Check every second): SERVING brings a replica back at once;
//    NOT_SERVING (a draining worker) or a refused connection takes it out at once; a check that
//    times out counts against it, and `timeouts_to_eject` in a row take it out (one slow answer
//    from a busy worker is not a verdict);
//  - calls: a call that could not reach the replica takes it out at once (passive ejection), so
//    a killed worker leaves rotation before its next health check.
// Picking is round-robin over the replicas in rotation. When none is, it falls back to
// round-robin over all of them: a call to a dead replica fails fast (and is retried elsewhere),
// while a replica whose checks merely lag can still serve.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

namespace dnaserve::core {

enum class HealthVerdict {
  kServing,      // SERVING
  kNotServing,   // NOT_SERVING / UNKNOWN, or the connection was refused
  kNoAnswer,     // the check timed out
};

class ReplicaSet {
 public:
  explicit ReplicaSet(size_t replicas, int timeouts_to_eject = 2);

  // The next replica to call, never one of `tried` (those this call already failed on);
  // nullopt when every replica has been tried.
  std::optional<size_t> Pick(const std::vector<size_t>& tried = {});

  // Applies one health check's outcome. True when the replica entered or left rotation.
  bool Report(size_t replica, HealthVerdict verdict);
  // A call could not reach the replica: out of rotation until a check answers SERVING. True
  // when it was in rotation.
  bool Eject(size_t replica);

  bool InRotation(size_t replica) const;
  size_t in_rotation() const;
  size_t size() const { return replicas_.size(); }

 private:
  struct Replica {
    bool in_rotation = true;  // optimistic at start-up: calls flow before the first check ends
    int timeouts = 0;         // consecutive checks without an answer
  };
  bool SetInRotation(Replica& replica, bool in_rotation);

  const int timeouts_to_eject_;
  mutable std::mutex mu_;
  std::vector<Replica> replicas_;
  size_t next_ = 0;
};

}  // namespace dnaserve::core
