#include "gateway/handlers/job_runner.h"

#include <chrono>
#include <thread>

#include "common/log.h"
#include "gateway/http/error_response.h"
#include "gateway/observability/gateway_metrics.h"
#include "gateway/render/predict_response.h"

namespace dnaserve::gateway {
namespace {

constexpr int64_t kLeaseTtlMs = 330 * 1000;

std::string ProgressMessage(const worker::v1::Progress& p) {
  if (!p.message().empty()) return p.message();
  return "processed " + std::to_string(p.windows_done()) + " of " +
         std::to_string(p.windows_total()) + " windows";
}

}  // namespace

JobRunner::JobRunner(JobStore* jobs, InferenceBackend* backend, Executor* executor,
                     std::chrono::seconds heartbeat_interval)
    : jobs_(jobs), backend_(backend), executor_(executor), heartbeat_interval_(heartbeat_interval) {}

JobRunner::~JobRunner() { Stop(); }

void JobRunner::Start() { heartbeat_ = std::thread([this] { HeartbeatLoop(); }); }

void JobRunner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& [id, active] : active_) active->cancelled = true;
  }
  cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

bool JobRunner::Submit(PredictJob job, std::function<void(HttpResponse)> on_done) {
  auto shared_job = std::make_shared<PredictJob>(std::move(job));
  const std::string task(TaskName(shared_job->input.task));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
  }
  const bool queued = executor_->TrySubmit([this, shared_job, on_done = std::move(on_done)] {
    Run(*shared_job, on_done);
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) idle_cv_.notify_all();
  });
  if (!queued) {
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) idle_cv_.notify_all();
    if (metrics_) metrics_->JobRefused(task);
  }
  return queued;
}

bool JobRunner::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_until(lock, deadline, [this] { return pending_ == 0; });
}

JobRunner::Counts JobRunner::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  c.running = static_cast<int64_t>(active_.size());
  c.queued = pending_ - c.running;
  return c;
}

void JobRunner::Run(PredictJob& job, const std::function<void(HttpResponse)>& on_done) {
  auto active = std::make_shared<Active>();
  active->lease = job.lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_[job.job_id] = active;
  }
  jobs_->UpdateProgress(job.job_id, 0, "running");

  HttpResponse response = Execute(job, *active);
  response.SetHeader("X-Job-Id", job.job_id);
  StoreResult(job.job_id, response);
  if (metrics_) {
    metrics_->JobFinished(std::string(TaskName(job.input.task)), on_done ? "sync" : "async",
                          response.status);
  }

  {
    std::lock_guard<std::mutex> lock(mu_);
    active_.erase(job.job_id);
    active->lease.reset();
  }
  job.lease.reset();  // the last holder: the concurrency slot is free before the client hears
  if (on_done) on_done(std::move(response));
}

HttpResponse JobRunner::Execute(PredictJob& job, Active& active) {
  const Task task = job.input.task;
  CallContext context{job.request_id, job.job_id, &active.cancelled};
  auto last_update = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  auto on_progress = [&](const worker::v1::Progress& p) {
    double percent =
        p.windows_total() > 0 ? 100.0 * p.windows_done() / p.windows_total() : active.percent;
    std::string message = ProgressMessage(p);
    {
      std::lock_guard<std::mutex> lock(mu_);
      active.percent = percent;
      active.message = message;
    }
    // Progress is written at most twice a second; polls need no finer grain.
    auto now = std::chrono::steady_clock::now();
    if (now - last_update >= std::chrono::milliseconds(500)) {
      last_update = now;
      jobs_->UpdateProgress(job.job_id, percent, message);
    }
  };

  const auto call_started = std::chrono::steady_clock::now();
  auto result = backend_->Predict(task, job.input.request, context, on_progress);
  if (metrics_) {
    metrics_->WorkerCall(
        std::string(TaskName(task)),
        result.ok() ? "ok" : std::string(ErrorCodeName(result.status().code())),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - call_started).count());
  }
  if (!result.ok()) {
    Status status = result.status();
    if (auto* cap = std::get_if<RecordCapDetails>(&status.mutable_details())) {
      cap->task = std::string(TaskName(task));
      cap->sequence_length = job.input.sequence_length;
    }
    return ErrorResponse(status, job.request_id);
  }
  HttpResponse response;
  if (job.format == OutputFormat::kJson) {
    response.body = RenderPredictJson(job.input, *result, {job.job_id, job.request_id});
    return response;
  }
  auto text = RenderPredictText(job.format, *result);
  if (!text.ok()) return ErrorResponse(text.status(), job.request_id);
  response.content_type = std::string(FormatMediaType(job.format));
  response.body = std::move(text).value();
  return response;
}

void JobRunner::StoreResult(const std::string& job_id, const HttpResponse& response) {
  // A Redis restart must not lose a finished job: retry with backoff for ~10 s.
  const std::chrono::milliseconds backoff[] = {std::chrono::milliseconds(0),
                                               std::chrono::milliseconds(200),
                                               std::chrono::milliseconds(1000),
                                               std::chrono::milliseconds(3000),
                                               std::chrono::milliseconds(6000)};
  Status status;
  for (auto delay : backoff) {
    std::this_thread::sleep_for(delay);
    status = jobs_->Finish(job_id, response.status, response.content_type, response.body);
    if (status.ok()) return;
  }
  log::Error("job_result_not_stored", {{"job_id", job_id}, {"error", status.ToString()}});
}

void JobRunner::HeartbeatLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, heartbeat_interval_, [this] { return stopping_; });
    if (stopping_) return;
    auto snapshot = active_;
    lock.unlock();
    for (auto& [job_id, active] : snapshot) {
      double percent;
      std::string message;
      std::shared_ptr<QuotaLease> lease;
      {
        std::lock_guard<std::mutex> guard(mu_);
        percent = active->percent;
        message = active->message.empty() ? "running" : active->message;
        lease = active->lease;
      }
      jobs_->UpdateProgress(job_id, percent, message);
      if (lease) lease->Renew(kLeaseTtlMs);
    }
    lock.lock();
  }
}

}  // namespace dnaserve::gateway
