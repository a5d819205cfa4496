#include "gateway/dispatch/worker_client.h"

#include <grpcpp/grpcpp.h>

#include <atomic>

#include "common/log.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "proto/status_codec.h"

namespace dnaserve::gateway {
namespace {

namespace pb = dnaserve::worker::v1;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    start = end + 1;
  }
  return out;
}

}  // namespace

StatusOr<WorkerEndpoints> WorkerEndpoints::Parse(const std::string& spec) {
  WorkerEndpoints out;
  for (const auto& family : Split(spec, ',')) {
    auto eq = family.find('=');
    if (eq == std::string::npos) {
      return BadRequest("worker address entry '" + family + "' is not of the form task=host:port");
    }
    auto task = TaskFromName(family.substr(0, eq));
    if (!task) return BadRequest("unknown task '" + family.substr(0, eq) + "' in worker addresses");
    for (const auto& address : Split(family.substr(eq + 1), ';')) {
      out.addresses[*task].push_back(address);
    }
  }
  return out;
}

struct GrpcInferenceBackend::Impl {
  struct Family {
    std::vector<std::unique_ptr<pb::Worker::Stub>> stubs;
    std::atomic<size_t> next{0};
  };
  Options options;
  std::map<Task, std::unique_ptr<Family>> families;

  pb::Worker::Stub* Pick(Task task) {
    auto it = families.find(task);
    if (it == families.end() || it->second->stubs.empty()) return nullptr;
    auto& family = *it->second;
    return family.stubs[family.next++ % family.stubs.size()].get();
  }
};

GrpcInferenceBackend::GrpcInferenceBackend(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  for (const auto& [task, addresses] : impl_->options.endpoints.addresses) {
    auto family = std::make_unique<Impl::Family>();
    for (const auto& address : addresses) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(256 * 1024 * 1024);
      args.SetMaxSendMessageSize(64 * 1024 * 1024);
      // gRPC's default reconnect backoff grows to 120 s; a restarted worker should be back in
      // rotation within seconds.
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
      args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
      auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
      family->stubs.push_back(pb::Worker::NewStub(channel));
    }
    impl_->families[task] = std::move(family);
  }
}

GrpcInferenceBackend::~GrpcInferenceBackend() = default;

StatusOr<pb::PredictResult> GrpcInferenceBackend::Predict(Task task,
                                                          const pb::PredictRequest& request,
                                                          const CallContext& context,
                                                          const ProgressCallback& on_progress) {
  pb::Worker::Stub* stub = impl_->Pick(task);
  if (!stub) {
    return Unavailable("no inference worker is configured for the " + std::string(TaskName(task)) +
                       " task");
  }
  grpc::ClientContext rpc;
  rpc.set_deadline(std::chrono::system_clock::now() + impl_->options.predict_deadline);
  rpc.AddMetadata("x-request-id", context.request_id);
  rpc.AddMetadata("x-job-id", context.job_id);

  auto reader = stub->Predict(&rpc, request);
  pb::PredictEvent event;
  std::optional<pb::PredictResult> result;
  while (reader->Read(&event)) {
    if (context.cancelled && context.cancelled->load()) {
      rpc.TryCancel();
      break;
    }
    if (event.has_progress()) {
      if (on_progress) on_progress(event.progress());
    } else if (event.has_result()) {
      result = std::move(*event.mutable_result());
    }
  }
  grpc::Status status = reader->Finish();
  if (context.cancelled && context.cancelled->load()) {
    return Unavailable("the job was cancelled");
  }
  if (!status.ok()) {
    Status mapped = FromGrpcStatus(status);
    if (mapped.code() == ErrorCode::kServiceUnavailable || mapped.code() == ErrorCode::kInternal) {
      log::Warn("worker_call_failed", {{"request_id", context.request_id},
                                       {"task", TaskName(task)},
                                       {"grpc_code", static_cast<int>(status.error_code())},
                                       {"grpc_message", status.error_message()}});
    }
    return mapped;
  }
  if (!result) return Internal("the inference worker ended the call without a result");
  return std::move(*result);
}

StatusOr<std::vector<pb::ModelInfo>> GrpcInferenceBackend::ListModels(Task task) {
  auto it = impl_->families.find(task);
  if (it == impl_->families.end() || it->second->stubs.empty()) {
    return Unavailable("no inference worker is configured for the " + std::string(TaskName(task)) +
                       " task");
  }
  // Any replica answers for the family; try each once.
  Status last = Unavailable("no worker answered");
  for (auto& stub : it->second->stubs) {
    grpc::ClientContext rpc;
    rpc.set_deadline(std::chrono::system_clock::now() + impl_->options.list_deadline);
    pb::ListModelsResponse response;
    grpc::Status status = stub->ListModels(&rpc, pb::ListModelsRequest(), &response);
    if (status.ok()) {
      return std::vector<pb::ModelInfo>(response.models().begin(), response.models().end());
    }
    last = FromGrpcStatus(status);
  }
  return last;
}

}  // namespace dnaserve::gateway
