// InferenceBackend over gRPC: one channel per configured worker address, round-robin across the
// replicas of a task family. Calls carry the request and job ids as metadata and a deadline.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gateway/dispatch/inference_backend.h"

namespace dnaserve::gateway {

struct WorkerEndpoints {
  std::map<Task, std::vector<std::string>> addresses;  // "host:port"

  // Parses "promoter=127.0.0.1:50051,splice=127.0.0.1:50052;127.0.0.1:50062,...": comma between
  // families, semicolon between replicas of one family.
  static StatusOr<WorkerEndpoints> Parse(const std::string& spec);
};

class GrpcInferenceBackend : public InferenceBackend {
 public:
  struct Options {
    WorkerEndpoints endpoints;
    std::chrono::seconds predict_deadline{300};  // the contract's sync budget
    std::chrono::seconds list_deadline{5};
  };
  explicit GrpcInferenceBackend(Options options);
  ~GrpcInferenceBackend() override;

  StatusOr<worker::v1::PredictResult> Predict(Task task, const worker::v1::PredictRequest& request,
                                              const CallContext& context,
                                              const ProgressCallback& on_progress) override;
  StatusOr<std::vector<worker::v1::ModelInfo>> ListModels(Task task) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dnaserve::gateway
