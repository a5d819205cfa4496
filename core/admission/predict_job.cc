#include "core/admission/predict_job.h"

#include <utility>
#include <variant>

#include "core/dispatch/async_predictor.h"
#include "core/dispatch/result_format.h"
#include "core/jobs/async_job.h"
#include "core/jobs/run_guarded.h"
#include "core/render/predict_response.h"

namespace dnaserve::core {
namespace {

// Worker results up to this size (a 2 kb promoter call's is ~10 KiB) are rendered on the thread
// their answer arrives on; larger ones through the job's Offload (AsyncJob::StartAsync).
constexpr size_t kRenderInlineBytes = 256 << 10;

class PredictJob : public Job, public AsyncJob {
 public:
  PredictJob(InferenceBackend* backend, AdmittedPredict admitted)
      : backend_(backend), admitted_(std::move(admitted)) {}

  StatusOr<JobOutput> Run(const JobContext& context) override {
    Prepare();
    if (context.Cancelled()) return Unavailable("the job was cancelled");
    return Finish(backend_->Predict(admitted_.input.task, admitted_.input.request, context.call,
                                    ProgressReporter(context)),
                  context);
  }

  bool RunsAsync() const override { return AsyncPredictorOf(backend_) != nullptr; }

  void StartAsync(const JobContext& context, Offload offload, Done done) override {
    AsyncPredictor* predictor = AsyncPredictorOf(backend_);
    Prepare();
    if (context.Cancelled()) {
      done(Unavailable("the job was cancelled"));
      return;
    }
    predictor->PredictAsync(
        admitted_.input.task, admitted_.input.request, context.call, ProgressReporter(context),
        [this, &context, offload = std::move(offload),
         done = std::move(done)](StatusOr<worker::v1::PredictResult> result) mutable {
          // The answer arrives on the thread that completes every worker call: a large result
          // is rendered elsewhere, so that it does not hold up the others' answers.
          if (result.ok() && result->ByteSizeLong() > kRenderInlineBytes) {
            auto owned = std::make_shared<StatusOr<worker::v1::PredictResult>>(std::move(result));
            offload([this, &context, owned, done = std::move(done)] {
              done(FinishGuarded(std::move(*owned), context));
            });
            return;
          }
          done(FinishGuarded(std::move(result), context));
        });
  }

 private:
  void Prepare() {
    // Set here rather than at admission so that it holds for commands queued before the field.
    admitted_.input.request.set_result_format(ResultFormatFor(admitted_.format));
    // Likewise set by the process that renders the reply, never carried in a queued command: a
    // runner older than ChromatinResult.labels must not receive features without names.
    if (admitted_.input.task == Task::kChromatin) {
      admitted_.input.request.mutable_chromatin()->set_labels_once(true);
    }
  }

  ProgressCallback ProgressReporter(const JobContext& context) const {
    return [&context](const worker::v1::Progress& p) {
      const double percent =
          p.windows_total() > 0 ? 100.0 * p.windows_done() / p.windows_total() : 0.0;
      context.Progress(percent, WorkerProgressMessage(p));
    };
  }

  // The rendering runs on a gRPC thread in the asynchronous case, where an escaping exception
  // (std::bad_alloc) would end the process: it fails the job as Run's caller fails a thrown Run.
  StatusOr<JobOutput> FinishGuarded(StatusOr<worker::v1::PredictResult> result,
                                    const JobContext& context) {
    return RunGuarded(context.call.job_id, [&] { return Finish(std::move(result), context); });
  }

  // The worker's answer as the job's output: rendered, or its error with the request's details.
  StatusOr<JobOutput> Finish(StatusOr<worker::v1::PredictResult> result,
                             const JobContext& context) {
    const ValidatedPredict& input = admitted_.input;
    if (!result.ok()) {
      Status status = result.status();
      if (auto* cap = std::get_if<RecordCapDetails>(&status.mutable_details())) {
        cap->task = std::string(TaskName(input.task));
        cap->sequence_length = input.sequence_length;
      }
      return status;
    }
    JobOutput output;
    if (admitted_.format == OutputFormat::kJson) {
      output.body =
          RenderPredictJson(input, *result, {context.call.job_id, context.call.request_id});
      return output;
    }
    auto text = RenderPredictText(admitted_.format, *result);
    if (!text.ok()) return text.status();
    output.content_type = std::string(FormatMediaType(admitted_.format));
    output.body = std::move(text).value();
    return output;
  }

  InferenceBackend* backend_;
  AdmittedPredict admitted_;
};

}  // namespace

std::unique_ptr<Job> MakePredictJob(InferenceBackend* backend, AdmittedPredict admitted) {
  return std::make_unique<PredictJob>(backend, std::move(admitted));
}

std::string WorkerProgressMessage(const worker::v1::Progress& progress) {
  if (!progress.message().empty()) return progress.message();
  return "processed " + std::to_string(progress.windows_done()) + " of " +
         std::to_string(progress.windows_total()) + " windows";
}

}  // namespace dnaserve::core
