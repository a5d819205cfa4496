// The answer cache (answer_cache.h) for interval requests: a prediction or find-genes run on a
// stretch of a held reference genome (interval_job.h). Such an answer is public: its bases come
// from the reference, so every tenant asking for the same interval with the same model and
// options gets the same answer, and the key names no tenant.
//
// What is kept is each worker result of the job (worker::v1::PredictResult, as the worker sent
// it), not the rendered body: the body carries per-request parts (meta.job_id,
// meta.request_id, the timings) and the contig as the client spelt it, all written around the
// result when the job renders it. So a hit goes through the very renderers and coordinate
// mapping of a miss: `data` and the text tracks are the same bytes, only the ids differ, and
// the timings are 0 (no model ran). A find-genes job makes several worker calls (the
// annotation, then one per gene): each is an entry, and the job is served from the cache when
// every one of them is.
//
// The key material (hashed into the Redis key) is everything a worker result depends on:
//   the format (kIntervalAnswerFormat) and this build's version;
//   the interval: assembly, contig by the reference's name (chr20, 20 and NC_000020.10 share
//   an entry), start, end, strand;
//   the task, the model id and its package digest (from the runner's catalogue; a model with
//   none names no exact package, and its calls are neither looked up nor kept);
//   the worker request itself (deterministically serialised): the bases read from the reference,
//   the options (thresholds, windows, descriptions), the result format (JSON, bed, ...).
// The worker is sent the reference's contig name as sequence_name where the request had the
// client's spelling, so aliases make the same call; the mapping (interval_coordinates.h) names
// every output by the contig as sent.
//
// Only the interval job uses this: nothing of a request that sent its own bases is ever kept.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "core/dispatch/model_catalogue.h"
#include "core/dispatch/inference_backend.h"
#include "runner/workflows/answer_cache.h"

namespace dnaserve::runner {

inline constexpr const char* kIntervalAnswerFormat = "interval_answer/1";

// The largest answer (its stored value) kept: one 500 kb splice or chromatin answer with every
// site or feature can be tens of MiB, which would push most of the shared budget out for one
// entry. A larger answer is served as computed and not stored (counted, logged).
// DNASERVE_INTERVAL_ANSWER_MAX_BYTES (runner_config.h).
inline constexpr int64_t kDefaultIntervalAnswerMaxBytes = 4LL << 20;

// Answers not stored for being over the cap, since the process started (every job's backend).
int64_t IntervalAnswersTooLarge();

// The interval as the cache keys it.
struct IntervalPlace {
  std::string assembly;          // the held assembly's spelling, "GRCh37"
  std::string contig_as_sent;    // the client's spelling ("chr20"): replaced in worker requests
  std::string reference_contig;  // the FASTA's name ("20"): what the worker is sent instead
  int64_t start = 0;             // 1-based inclusive
  int64_t end = 0;
  char strand = '+';
};

// The key material of one worker call of an interval job (`request` as the worker is sent it).
std::string IntervalAnswerMaterial(const IntervalPlace& place, Task task,
                                   const worker::v1::PredictRequest& request,
                                   const std::string& package_digest);

// An entry's value and back; nullopt when a value does not read back (a miss, never an error).
std::string IntervalAnswerValue(const worker::v1::PredictResult& result);
std::optional<worker::v1::PredictResult> ReadIntervalAnswer(const std::string& value);

// The backend an interval job runs its worker calls through: each call is looked up in the
// cache first and kept after a miss. A Redis failure is a miss (the cache logs it).
class IntervalAnswerBackend : public core::InferenceBackend {
 public:
  // `cache` may be null or disabled: every call then goes to `inner` and `all_cached()` is false.
  // `max_answer_bytes`: answers whose value is larger are not stored (0: no cap).
  IntervalAnswerBackend(core::InferenceBackend* inner, AnswerCache* cache,
                        const core::ModelCatalogue* catalogue, IntervalPlace place,
                        int64_t max_answer_bytes = kDefaultIntervalAnswerMaxBytes);

  StatusOr<worker::v1::PredictResult> Predict(Task task, const worker::v1::PredictRequest& request,
                                              const core::CallContext& context,
                                              const core::ProgressCallback& on_progress) override;
  StatusOr<std::vector<worker::v1::ModelInfo>> ListModels(Task task) override;

  // True when the job made worker calls and every one was served from the cache.
  bool all_cached() const { return calls_ > 0 && calls_ == hits_; }

 private:
  // The package digest of the request's model; "" when unknown (the call is not cached).
  std::string DigestOf(Task task, const std::string& model) const;

  core::InferenceBackend* inner_;
  AnswerCache* cache_;
  const core::ModelCatalogue* catalogue_;
  IntervalPlace place_;
  int64_t max_answer_bytes_;
  std::atomic<int64_t> calls_{0}, hits_{0};
};

// A JSON response body {"data": ..., "meta": {...}} (meta last, as every interval job's
// renderer writes it) with "cached": `cached` added as meta's last member. A body of any other
// shape is returned unchanged.
std::string WithMetaCached(std::string body, bool cached);

}  // namespace dnaserve::runner
