#include "core/dispatch/worker_client.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "dnaserve/health/v1/health.grpc.pb.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "core/dispatch/replica_set.h"
#include "proto/call_metadata.h"
#include "proto/status_codec.h"

namespace dnaserve::core {
namespace {

namespace pb = dnaserve::worker::v1;
namespace health = grpc::health::v1;

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

constexpr char kChannelServiceConfig[] =
    R"({"loadBalancingConfig": [{"round_robin": {}}],)"
    R"( "healthCheckConfig": {"serviceName": "dnaserve.worker.v1.Worker"}})";

// A call that never reached a worker may be sent again, to another configured address when
// there is one, or through the same address (which may name several pods) when there is not.
constexpr int kMaxAttempts = 3;

std::chrono::system_clock::time_point ToSystemClock(std::chrono::steady_clock::time_point t) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             t - std::chrono::steady_clock::now());
}

// A failure of the call itself (no WorkerError attached): the worker could not be reached, went
// away, or stopped answering. Errors a worker returns on purpose always carry a WorkerError.
bool IsTransportUnavailable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE && status.error_details().empty();
}

HealthVerdict VerdictOf(const grpc::Status& status, const health::HealthCheckResponse& response) {
  if (status.ok()) {
    return response.status() == health::HealthCheckResponse::SERVING ? HealthVerdict::kServing
                                                                      : HealthVerdict::kNotServing;
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) return HealthVerdict::kNoAnswer;
  return HealthVerdict::kNotServing;
}

std::string VerdictText(HealthVerdict verdict, const grpc::Status& status) {
  switch (verdict) {
    case HealthVerdict::kServing: return "serving";
    case HealthVerdict::kNotServing:
      return status.ok() ? "health check answered NOT_SERVING"
                         : "health check failed: " + status.error_message();
    case HealthVerdict::kNoAnswer: return "health checks timed out";
  }
  return "";
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
  struct Replica {
    std::string address;
    std::unique_ptr<pb::Worker::Stub> worker;
    std::unique_ptr<health::Health::Stub> health;
  };
  struct Family {
    Task task = Task::kPromoter;
    std::vector<Replica> replicas;
    std::unique_ptr<ReplicaSet> rotation;
  };
  // One Predict attempt on one replica.
  struct Attempt {
    grpc::Status status;
    bool accepted = false;  // the worker's handler acknowledged the call
    std::optional<pb::PredictResult> result;
  };

  Options options;
  std::map<Task, std::unique_ptr<Family>> families;
  std::atomic<int64_t> retries{0};

  std::mutex mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  std::thread health_thread;

  Family* Find(Task task) {
    auto it = families.find(task);
    return it == families.end() || it->second->replicas.empty() ? nullptr : it->second.get();
  }

  void LeaveRotation(Family& family, size_t index, const std::string& reason) {
    if (family.rotation->Eject(index)) LogLeft(family, index, reason);
  }
  static void LogLeft(const Family& family, size_t index, const std::string& reason) {
    log::Warn("worker_out_of_rotation", {{"task", TaskName(family.task)},
                                         {"address", family.replicas[index].address},
                                         {"reason", reason}});
  }

  Attempt CallOnce(const Replica& replica, const pb::PredictRequest& request,
                   const CallContext& context, std::chrono::steady_clock::time_point deadline,
                   const ProgressCallback& on_progress) {
    Attempt attempt;
    grpc::ClientContext rpc;
    rpc.set_deadline(ToSystemClock(deadline));
    rpc.AddMetadata(kRequestIdMetadata, context.request_id);
    rpc.AddMetadata(kJobIdMetadata, context.job_id);
    // Cancels the call at once from whichever thread raises the signal (the HTTP reactor when a
    // sync client disconnects); gRPC then ends the Read below and tells the worker, which drops
    // the request's remaining windows. Declared after `rpc`, so it is gone before `rpc` is.
    Cancellation::Registration cancel_call;
    if (context.cancellation) {
      cancel_call = context.cancellation->OnCancel([&rpc] { rpc.TryCancel(); });
    }
    auto reader = replica.worker->Predict(&rpc, request);
    pb::PredictEvent event;
    while (reader->Read(&event)) {
      if (context.cancelled && context.cancelled->load()) {
        rpc.TryCancel();
        break;
      }
      if (event.has_progress()) {
        if (on_progress) on_progress(event.progress());
      } else if (event.has_result()) {
        attempt.result = std::move(*event.mutable_result());
      }
    }
    attempt.status = reader->Finish();
    // Finish() has received the initial metadata (empty when the call never reached a handler).
    attempt.accepted = rpc.GetServerInitialMetadata().count(kAcceptedMetadata) > 0;
    return attempt;
  }

  // One round of health checks over every replica, all in flight at once.
  void CheckAll() {
    struct Probe {
      Family* family;
      size_t index;
      grpc::ClientContext rpc;
      health::HealthCheckRequest request;
      health::HealthCheckResponse response;
      grpc::Status status;
    };
    std::vector<std::unique_ptr<Probe>> probes;
    std::mutex done_mu;
    std::condition_variable done_cv;
    size_t pending = 0;
    for (auto& [task, family] : families) {
      for (size_t i = 0; i < family->replicas.size(); ++i) {
        auto probe = std::make_unique<Probe>();
        probe->family = family.get();
        probe->index = i;
        probe->rpc.set_deadline(std::chrono::system_clock::now() + options.health_timeout);
        probe->request.set_service(pb::Worker::service_full_name());
        probes.push_back(std::move(probe));
      }
    }
    pending = probes.size();
    for (auto& probe : probes) {
      Probe* p = probe.get();
      p->family->replicas[p->index].health->async()->Check(
          &p->rpc, &p->request, &p->response, [&, p](grpc::Status status) {
            std::lock_guard<std::mutex> lock(done_mu);
            p->status = std::move(status);
            if (--pending == 0) done_cv.notify_all();
          });
    }
    {
      std::unique_lock<std::mutex> lock(done_mu);
      done_cv.wait(lock, [&] { return pending == 0; });  // every probe has its own deadline
    }
    for (auto& probe : probes) {
      const HealthVerdict verdict = VerdictOf(probe->status, probe->response);
      Family& family = *probe->family;
      if (!family.rotation->Report(probe->index, verdict)) continue;
      if (verdict == HealthVerdict::kServing) {
        log::Info("worker_back_in_rotation", {{"task", TaskName(family.task)},
                                              {"address", family.replicas[probe->index].address}});
      } else {
        LogLeft(family, probe->index, VerdictText(verdict, probe->status));
      }
    }
  }

  void HealthLoop() {
    for (;;) {
      const auto round_started = std::chrono::steady_clock::now();
      CheckAll();
      std::unique_lock<std::mutex> lock(mu);
      if (stop_cv.wait_until(lock, round_started + options.health_interval,
                             [this] { return stopping; })) {
        return;
      }
    }
  }
};

GrpcInferenceBackend::GrpcInferenceBackend(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  const Options& o = impl_->options;
  for (const auto& [task, addresses] : o.endpoints.addresses) {
    auto family = std::make_unique<Impl::Family>();
    family->task = task;
    for (const auto& address : addresses) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(256 * 1024 * 1024);
      args.SetMaxSendMessageSize(64 * 1024 * 1024);
      // gRPC's default reconnect backoff grows to 120 s; a restarted worker should be back in
      // rotation within seconds.
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
      args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
      // Pings only while calls are open, as often as needed: workers accept one every 5 s
      // (worker_server.cc), so a long call without progress events is never cut as abusive.
      args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(o.keepalive_time.count()));
      args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(o.keepalive_timeout.count()));
      args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
      args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
      // An address may name many workers (a Kubernetes headless Service resolves to every ready
      // pod of the family): spread calls over all of them, and let gRPC's own health checking
      // (grpc.health.v1 Watch per connection) drop the ones that are not serving, e.g. a pod
      // draining after SIGTERM. The DNS name is resolved again whenever a connection drops
      // (workers end connections after DNASERVE_WORKER_MAX_CONNECTION_AGE_SECONDS), so new pods
      // join within that time. The service config is ours alone, never taken from DNS.
      args.SetServiceConfigJSON(kChannelServiceConfig);
      args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
      auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
      family->replicas.push_back(
          {address, pb::Worker::NewStub(channel), health::Health::NewStub(channel)});
    }
    family->rotation =
        std::make_unique<ReplicaSet>(family->replicas.size(), o.health_timeouts_to_eject);
    impl_->families[task] = std::move(family);
  }
  impl_->health_thread = std::thread([this] { impl_->HealthLoop(); });
}

GrpcInferenceBackend::~GrpcInferenceBackend() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->health_thread.joinable()) impl_->health_thread.join();
}

StatusOr<pb::PredictResult> GrpcInferenceBackend::Predict(Task task,
                                                          const pb::PredictRequest& request,
                                                          const CallContext& context,
                                                          const ProgressCallback& on_progress) {
  Impl::Family* family = impl_->Find(task);
  if (!family) {
    return Unavailable("no inference worker is configured for the " + std::string(TaskName(task)) +
                       " task");
  }
  const auto started = std::chrono::steady_clock::now();
  auto deadline = started + impl_->options.predict_deadline;
  if (context.deadline && *context.deadline < deadline) deadline = *context.deadline;

  std::vector<size_t> tried;
  Status failure = Unavailable("no inference worker of the " + std::string(TaskName(task)) +
                               " task could be reached; retry shortly");
  for (int attempts = 0; attempts < kMaxAttempts; ++attempts) {
    std::optional<size_t> index = family->rotation->Pick(tried);
    if (!index) index = family->rotation->Pick();  // every address tried: again, round-robin
    if (!index) break;
    if (attempts > 0) ++impl_->retries;
    if (context.cancelled && context.cancelled->load()) return Unavailable("the job was cancelled");
    if (std::chrono::steady_clock::now() >= deadline) {
      return Unavailable("the request's time budget ran out before a worker could answer");
    }
    const Impl::Replica& replica = family->replicas[*index];
    Impl::Attempt attempt = impl_->CallOnce(replica, request, context, deadline, on_progress);
    if (context.cancelled && context.cancelled->load()) return Unavailable("the job was cancelled");
    if (attempt.status.ok()) {
      if (!attempt.result) return Internal("the inference worker ended the call without a result");
      return std::move(*attempt.result);
    }
    failure = FromGrpcStatus(attempt.status);
    const bool unreachable = IsTransportUnavailable(attempt.status);
    if (unreachable) impl_->LeaveRotation(*family, *index, attempt.status.error_message());
    if (failure.code() == ErrorCode::kServiceUnavailable || failure.code() == ErrorCode::kInternal) {
      log::Warn("worker_call_failed", {{"request_id", context.request_id},
                                       {"job_id", context.job_id},
                                       {"task", TaskName(task)},
                                       {"address", replica.address},
                                       {"accepted", attempt.accepted},
                                       {"grpc_code", static_cast<int>(attempt.status.error_code())},
                                       {"grpc_message", attempt.status.error_message()}});
    }
    // Only a call no worker ever started may go elsewhere.
    if (!unreachable || attempt.accepted) return failure;
    tried.push_back(*index);
  }
  return failure;
}

StatusOr<std::vector<pb::ModelInfo>> GrpcInferenceBackend::ListModels(Task task) {
  Impl::Family* family = impl_->Find(task);
  if (!family) {
    return Unavailable("no inference worker is configured for the " + std::string(TaskName(task)) +
                       " task");
  }
  // Any replica answers for the family; try each once, those in rotation first. (Not Pick():
  // these periodic calls must not shift the round-robin of predictions.)
  std::vector<size_t> order;
  for (bool in_rotation : {true, false}) {
    for (size_t i = 0; i < family->replicas.size(); ++i) {
      if (family->rotation->InRotation(i) == in_rotation) order.push_back(i);
    }
  }
  Status last = Unavailable("no worker answered");
  for (size_t index : order) {
    grpc::ClientContext rpc;
    rpc.set_deadline(std::chrono::system_clock::now() + impl_->options.list_deadline);
    pb::ListModelsResponse response;
    grpc::Status status =
        family->replicas[index].worker->ListModels(&rpc, pb::ListModelsRequest(), &response);
    if (status.ok()) {
      return std::vector<pb::ModelInfo>(response.models().begin(), response.models().end());
    }
    last = FromGrpcStatus(status);
  }
  return last;
}

StatusOr<pb::GetModelCardResponse> GrpcInferenceBackend::GetModelCard(Task task,
                                                                     const std::string& model,
                                                                     const std::string& file) {
  Impl::Family* family = impl_->Find(task);
  if (!family) {
    return Unavailable("no inference worker is configured for the " + std::string(TaskName(task)) +
                       " task");
  }
  // Every replica of a family serves the same packages: the first that answers does, those in
  // rotation first (as ListModels; a card is small, read from disk, under list_deadline).
  pb::GetModelCardRequest request;
  request.set_model(model);
  request.set_file(file);
  Status last = Unavailable("no worker answered");
  for (bool in_rotation : {true, false}) {
    for (size_t i = 0; i < family->replicas.size(); ++i) {
      if (family->rotation->InRotation(i) != in_rotation) continue;
      grpc::ClientContext rpc;
      rpc.set_deadline(std::chrono::system_clock::now() + impl_->options.list_deadline);
      pb::GetModelCardResponse response;
      grpc::Status status = family->replicas[i].worker->GetModelCard(&rpc, request, &response);
      if (status.ok()) return response;
      last = FromGrpcStatus(status);
      // A worker's answer (not_found, model_not_found) is final; only transport failures move on.
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
          status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
        return last;
      }
    }
  }
  return last;
}

std::map<Task, ReplicaCounts> GrpcInferenceBackend::Replicas() const {
  std::map<Task, ReplicaCounts> out;
  for (const auto& [task, family] : impl_->families) {
    const auto in = static_cast<int64_t>(family->rotation->in_rotation());
    out[task] = {in, static_cast<int64_t>(family->rotation->size()) - in};
  }
  return out;
}

int64_t GrpcInferenceBackend::retries() const { return impl_->retries.load(); }

}  // namespace dnaserve::core
