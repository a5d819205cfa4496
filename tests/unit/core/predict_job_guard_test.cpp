// The predict job's asynchronous rendering goes through the jobs' one guard (core/jobs/
// run_guarded.h): the result is rendered on the thread the worker's answer arrives on (a gRPC
// thread, where an escaped exception would end the process) or on the job's offload, and a
// rendering that throws fails the job as internal ("internal error") on either path instead.
#include <catch2/catch.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/admission/predict_job.h"
#include "core/dispatch/async_predictor.h"
#include "core/jobs/async_job.h"

namespace dnaserve::core {
namespace {

namespace pb = worker::v1;

// Answers every call at once, on the caller's thread, with a result of `bytes` bytes of tracks.
class AnsweringBackend : public InferenceBackend, public AsyncPredictor {
 public:
  explicit AnsweringBackend(size_t bytes) : bytes_(bytes) {}

  StatusOr<pb::PredictResult> Predict(Task, const pb::PredictRequest&, const CallContext&,
                                      const ProgressCallback&) override {
    return Result();
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override { return Unavailable("n/a"); }
  void PredictAsync(Task, const pb::PredictRequest&, const CallContext&, ProgressCallback,
                    Done done) override {
    done(Result());
  }

 private:
  pb::PredictResult Result() const {
    pb::PredictResult result;
    result.set_model("enhancer-test");
    (*result.mutable_tracks())["dev"] = std::string(bytes_, 'x');
    return result;
  }
  size_t bytes_;
};

// A task no renderer has a row for: RendererFor's lookup throws std::out_of_range, a stand-in
// for any foreign exception (std::bad_alloc on a large body) escaping the rendering.
AdmittedPredict UnrenderableAdmitted() {
  AdmittedPredict admitted;
  admitted.input.task = static_cast<Task>(99);
  admitted.input.request.set_model("enhancer-test");
  admitted.format = OutputFormat::kJson;
  return admitted;
}

std::optional<StatusOr<JobOutput>> RunAsync(AnsweringBackend& backend, int* offloaded) {
  std::unique_ptr<Job> job = MakePredictJob(&backend, UnrenderableAdmitted());
  auto* async = dynamic_cast<AsyncJob*>(job.get());
  REQUIRE(async != nullptr);
  REQUIRE(async->RunsAsync());
  JobContext context;
  context.call.job_id = "job-guarded";
  std::optional<StatusOr<JobOutput>> answer;
  async->StartAsync(
      context,
      [offloaded](std::function<void()> work) {
        ++*offloaded;
        work();
      },
      [&answer](StatusOr<JobOutput> result) { answer = std::move(result); });
  return answer;
}

TEST_CASE("a predict job whose asynchronous rendering throws fails as internal on either thread",
          "[jobs]") {
  for (const size_t bytes : {size_t{16}, size_t{512} << 10}) {  // inline, then offloaded
    INFO("result bytes " << bytes);
    AnsweringBackend backend(bytes);
    int offloaded = 0;
    const auto answer = RunAsync(backend, &offloaded);
    REQUIRE(answer.has_value());
    CHECK(offloaded == (bytes > (256 << 10) ? 1 : 0));
    REQUIRE_FALSE(answer->ok());
    CHECK(answer->status().code() == ErrorCode::kInternal);
    CHECK(answer->status().message() == "internal error");
  }
}

}  // namespace
}  // namespace dnaserve::core
