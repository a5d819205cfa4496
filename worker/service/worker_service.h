// The gRPC face of a worker: dnaserve.worker.v1.Worker for one task. Transport only; the work is
// ModelRegistry (which model, loaded when) and RunPrediction (what it computes).
#pragma once

#include <grpcpp/grpcpp.h>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "worker/manifest/manifest.h"
#include "worker/models/model_registry.h"
#include "worker/service/worker_metrics.h"

namespace dnaserve::worker {

class WorkerService final : public v1::Worker::Service {
 public:
  // `metrics` is optional (tests pass none).
  WorkerService(Task task, ModelRegistry* registry, WorkerMetrics* metrics = nullptr)
      : task_(task), registry_(registry), metrics_(metrics) {}

  // Streams one Progress event per window batch, then the Result. Every failure is a status
  // built by ToGrpcStatus (proto/status_codec.h); a cancelled call stops between batches, and
  // its forward pass still waiting in the batching queue (worker/batching) is withdrawn.
  grpc::Status Predict(grpc::ServerContext* context, const v1::PredictRequest* request,
                       grpc::ServerWriter<v1::PredictEvent>* writer) override;

  grpc::Status ListModels(grpc::ServerContext* context, const v1::ListModelsRequest* request,
                          v1::ListModelsResponse* response) override;

  // MODEL_CARD.md or one of the PNGs it embeds (worker/service/model_card_files.h).
  grpc::Status GetModelCard(grpc::ServerContext* context, const v1::GetModelCardRequest* request,
                            v1::GetModelCardResponse* response) override;

 private:
  Task task_;
  ModelRegistry* registry_;
  WorkerMetrics* metrics_;
};

v1::Task ToProtoTask(Task task);
// The models-list facts of a package (trained_window_bp 0 = none).
v1::ModelInfo ToModelInfo(const ModelManifest& manifest);

}  // namespace dnaserve::worker
