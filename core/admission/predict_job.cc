#include "core/admission/predict_job.h"

#include <utility>
#include <variant>

#include "core/dispatch/result_format.h"
#include "core/render/predict_response.h"

namespace dnaserve::core {
namespace {

class PredictJob : public Job {
 public:
  PredictJob(InferenceBackend* backend, AdmittedPredict admitted)
      : backend_(backend), admitted_(std::move(admitted)) {}

  StatusOr<JobOutput> Run(const JobContext& context) override {
    // Set here rather than at admission so that it holds for commands queued before the field.
    admitted_.input.request.set_result_format(ResultFormatFor(admitted_.format));
    const ValidatedPredict& input = admitted_.input;
    if (context.Cancelled()) return Unavailable("the job was cancelled");
    auto on_progress = [&](const worker::v1::Progress& p) {
      const double percent =
          p.windows_total() > 0 ? 100.0 * p.windows_done() / p.windows_total() : 0.0;
      context.Progress(percent, WorkerProgressMessage(p));
    };
    auto result = backend_->Predict(input.task, input.request, context.call, on_progress);
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

 private:
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
