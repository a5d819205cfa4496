#include "runner/workflows/backend_expression_scorer.h"

#include <algorithm>
#include <condition_variable>
#include <memory>

#include "common/task.h"
#include "runner/variant/tss_window.h"

namespace dnaserve::runner {
namespace {

namespace pb = worker::v1;

// One batch shared by the calling thread and its helpers on the executor. Items are claimed
// with `next`; a helper that starts after every item is claimed touches nothing but this state
// (which it co-owns), so the caller may return as soon as every claimed item is done.
struct Fanout {
  Fanout(size_t n, core::InferenceBackend* backend, std::string model, core::CallContext call,
         const std::atomic<bool>* cancelled)
      : total(n),
        backend(backend),
        model(std::move(model)),
        call(std::move(call)),
        cancelled(cancelled),
        values(n, 0.0) {}

  const size_t total;
  core::InferenceBackend* const backend;
  const std::string model;
  const core::CallContext call;
  const std::atomic<bool>* const cancelled;
  // Valid while the caller waits, i.e. while some item is unclaimed or in progress.
  const std::vector<variant::ScoreRequest>* batch = nullptr;
  std::atomic<int64_t>* calls = nullptr;

  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<double> values;
  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0;
  Status error;

  bool Stopped() const { return failed.load() || (cancelled != nullptr && cancelled->load()); }

  void Fail(Status status) {
    std::lock_guard<std::mutex> lock(mu);
    if (error.ok()) error = std::move(status);
    failed = true;
  }

  // Claims and scores items until none is left.
  void Work() {
    pb::PredictRequest request;
    for (size_t i = next.fetch_add(1); i < total; i = next.fetch_add(1)) {
      if (!Stopped()) {
        const variant::ScoreRequest& item = (*batch)[i];
        request.set_model(model);
        request.set_sequence(std::string(item.sequence));
        request.set_sequence_name("tss-window");
        request.mutable_expression()->set_description(std::string(item.description));
        request.set_result_format(pb::RESULT_FORMAT_JSON);  // the numbers only, no text
        calls->fetch_add(1);
        auto result = backend->Predict(Task::kExpression, request, call, nullptr);
        if (!result.ok()) {
          Fail(result.status());
        } else if (!result->has_expression()) {
          Fail(Internal("the expression worker answered without an expression result"));
        } else {
          values[i] = result->expression().expression_log_tpm();
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      if (++done == total) cv.notify_all();
    }
  }
};

Status Cancelled() { return Unavailable("the job was cancelled"); }

}  // namespace

BackendExpressionScorer::BackendExpressionScorer(core::InferenceBackend* backend,
                                                 const core::ModelCatalogue* catalogue,
                                                 core::Executor* executor, int concurrency,
                                                 core::CallContext call)
    : backend_(backend),
      catalogue_(catalogue),
      executor_(executor),
      concurrency_(std::max(1, concurrency)),
      call_(std::move(call)) {}

StatusOr<std::string> BackendExpressionScorer::ModelId() {
  std::lock_guard<std::mutex> lock(mu_);
  if (model_) return *model_;
  auto model = catalogue_->Resolve(Task::kExpression, std::nullopt);
  if (!model.ok()) return model.status();
  model_ = model->id();
  return *model_;
}

StatusOr<std::optional<variant::TissueMatch>> BackendExpressionScorer::MatchTissue(
    std::string_view description, const std::atomic<bool>* cancelled) {
  auto model = ModelId();
  if (!model.ok()) return model.status();
  const std::atomic<bool>* flag = cancelled != nullptr ? cancelled : call_.cancelled;
  if (flag != nullptr && flag->load()) return Cancelled();
  pb::PredictRequest request;
  request.set_model(*model);
  // The match depends on the description only; an all-N window is the cheapest valid input.
  request.set_sequence(std::string(kExpressionWindowBp, 'N'));
  request.set_sequence_name("description-match");
  request.mutable_expression()->set_description(std::string(description));
  request.set_result_format(pb::RESULT_FORMAT_JSON);  // the match only, no text
  calls_.fetch_add(1);
  auto result = backend_->Predict(Task::kExpression, request, call_, nullptr);
  if (!result.ok()) return result.status();
  if (!result->has_expression() || !result->expression().has_description_match()) {
    return std::optional<variant::TissueMatch>{};
  }
  const pb::DescriptionMatch& reported = result->expression().description_match();
  variant::TissueMatch match;
  match.matched = reported.matched();
  for (const auto& c : reported.contexts()) {
    match.contexts.push_back({c.id(), c.name(), c.similarity()});
  }
  return std::optional<variant::TissueMatch>(std::move(match));
}

StatusOr<std::vector<double>> BackendExpressionScorer::Score(
    const std::vector<variant::ScoreRequest>& batch, const std::atomic<bool>* cancelled) {
  if (batch.empty()) return std::vector<double>{};
  auto model = ModelId();
  if (!model.ok()) return model.status();
  const std::atomic<bool>* flag = cancelled != nullptr ? cancelled : call_.cancelled;
  if (flag != nullptr && flag->load()) return Cancelled();

  auto fanout = std::make_shared<Fanout>(batch.size(), backend_, *model, call_, flag);
  fanout->batch = &batch;
  fanout->calls = &calls_;
  const size_t helpers =
      executor_ == nullptr ? 0 : std::min(batch.size(), static_cast<size_t>(concurrency_)) - 1;
  for (size_t h = 0; h < helpers; ++h) {
    // A full executor refuses: this thread then simply does more of the batch itself.
    if (!executor_->TrySubmit([fanout] { fanout->Work(); })) break;
  }
  fanout->Work();
  {
    std::unique_lock<std::mutex> lock(fanout->mu);
    fanout->cv.wait(lock, [&] { return fanout->done == fanout->total; });
  }
  if (!fanout->error.ok()) return fanout->error;
  if (flag != nullptr && flag->load()) return Cancelled();
  return std::move(fanout->values);
}

}  // namespace dnaserve::runner
