// InferenceBackend over gRPC: one channel per configured worker address, calls balanced
// round-robin across the replicas (addresses) of a task family that are in rotation
// (replica_set.h). An address may itself name many workers (a Kubernetes headless Service):
// its channel spreads calls round-robin over every worker the name resolves to, skipping those
// that gRPC's built-in health checking (grpc.health.v1 Watch per connection) finds not serving.
//
// - Health: every `health_interval` each address gets a grpc.health.v1 Check for the
//   dnaserve.worker.v1.Worker service (bounded by `health_timeout`); the verdicts take addresses
//   out of rotation and bring them back.
// - Deadlines: a call ends by the caller's deadline (a sync request's 300 s budget counted from
//   its arrival) and never later than `predict_deadline` after it starts.
// - Retries, only where safe: a Predict that fails with a transport error before the worker's
//   handler acknowledged it (call_metadata.h: connection refused, worker gone, server not
//   accepting) is sent again, up to three attempts: to another address while there is an
//   untried one, else through the same address (to another of its workers). A call the worker has
//   acknowledged is never repeated: its failure is the caller's answer (503 for a worker that
//   died). Either way the failing replica leaves rotation until a health check answers SERVING.
// - Liveness of connections: keepalive pings while calls are open, so a worker that stops
//   answering (hung process, lost node) fails its calls after keepalive_time + keepalive_timeout
//   instead of holding them to the deadline.
// - Every call carries the request and job ids as metadata; workers log them.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dispatch/inference_backend.h"

namespace dnaserve::core {

struct WorkerEndpoints {
  std::map<Task, std::vector<std::string>> addresses;  // "host:port"

  // Parses "promoter=127.0.0.1:50051,splice=127.0.0.1:50052;127.0.0.1:50062,...": comma between
  // families, semicolon between replicas of one family.
  static StatusOr<WorkerEndpoints> Parse(const std::string& spec);
};

// Replicas of one family by rotation state (for /metrics).
struct ReplicaCounts {
  int64_t in_rotation = 0;
  int64_t out_of_rotation = 0;
};

class GrpcInferenceBackend : public InferenceBackend {
 public:
  struct Options {
    WorkerEndpoints endpoints;
    std::chrono::seconds predict_deadline{300};  // the contract's sync budget
    std::chrono::seconds list_deadline{5};
    std::chrono::milliseconds health_interval{1000};
    std::chrono::milliseconds health_timeout{1000};
    int health_timeouts_to_eject = 2;  // checks in a row without an answer
    std::chrono::milliseconds keepalive_time{10000};
    std::chrono::milliseconds keepalive_timeout{10000};
  };
  // Starts health checking at once; the destructor stops it.
  explicit GrpcInferenceBackend(Options options);
  ~GrpcInferenceBackend() override;

  StatusOr<worker::v1::PredictResult> Predict(Task task, const worker::v1::PredictRequest& request,
                                              const CallContext& context,
                                              const ProgressCallback& on_progress) override;
  StatusOr<std::vector<worker::v1::ModelInfo>> ListModels(Task task) override;
  StatusOr<worker::v1::GetModelCardResponse> GetModelCard(Task task, const std::string& model,
                                                          const std::string& file) override;

  std::map<Task, ReplicaCounts> Replicas() const;
  // Predict calls sent to another replica after a failure that never reached a worker.
  int64_t retries() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dnaserve::core
