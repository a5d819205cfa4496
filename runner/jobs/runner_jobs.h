// Turns a queued job back into work: the command the gateway admitted (core/admission) becomes
// the Job to run; only the checks a gateway cannot make (the variant workflow's, against the
// object store) are made here. Also the variant workflow's admission, which only a runner can
// make and whose verdict the gateway relays.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "core/dispatch/executor.h"
#include "core/dispatch/inference_backend.h"
#include "core/dispatch/model_catalogue.h"
#include "core/jobs/job.h"
#include "core/jobs/job_queue.h"
#include "core/jobs/job_store.h"
#include "runner/workflows/answer_cache.h"
#include "runner/workflows/interval_answers.h"
#include "runner/workflows/variant_resources.h"

namespace dnaserve::runner {

// What jobs run with on a runner.
struct JobServices {
  core::InferenceBackend* backend = nullptr;
  core::ModelCatalogue* catalogue = nullptr;
  core::Executor* executor = nullptr;  // a variant job's concurrent expression calls
  const runner::VariantResources* variant = nullptr;  // null: the workflow answers 503
  int64_t max_model_calls = 0;  // per variant job; 0 = unbounded
  // A batch variant score's checkpoints and annotated VCF (job files); null: such jobs 503.
  core::JobStore* jobs = nullptr;
  AnswerCache* answer_cache = nullptr;  // variant scores kept across requests (null: none)
  // Interval answers larger than this are not kept (interval_answers.h; 0: no cap).
  int64_t interval_answer_max_bytes = kDefaultIntervalAnswerMaxBytes;
};

// The job of a queued entry, or the status to finish it with (a request that no longer passes
// admission: a model removed since, the input object replaced).
StatusOr<std::unique_ptr<core::Job>> BuildJob(const core::QueuedJob& queued,
                                                 const JobServices& services);

// The variant workflow's admission of `queued` (an entry of the admission stream): the checks
// that need the object store and catalogue, then the job record (or the standing job of the same
// case) and, for a new job, its entry in the client's queue. Returns the verdict for the waiting
// gateway (core/jobs/admission_verdict.h); never fails: a refusal is a verdict too.
std::string AdmitVariant(const core::QueuedJob& queued, const JobServices& services,
                         core::JobStore* jobs, core::RedisJobQueue* queue);

}  // namespace dnaserve::runner
