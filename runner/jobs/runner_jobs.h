// Turns a queued job back into work: the runner repeats the gateway's admission of the request
// with the same code (validation, model resolution, the variant workflow's object-store checks)
// and gets the Job to run. Also the variant workflow's admission, which only a runner can make
// (it reads the object store) and whose verdict the gateway relays.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "gateway/dispatch/executor.h"
#include "gateway/dispatch/inference_backend.h"
#include "gateway/dispatch/model_catalogue.h"
#include "gateway/jobs/job.h"
#include "gateway/jobs/job_queue.h"
#include "gateway/jobs/job_store.h"
#include "runner/workflows/variant_resources.h"

namespace dnaserve::runner {

// What jobs run with on a runner.
struct JobServices {
  gateway::InferenceBackend* backend = nullptr;
  gateway::ModelCatalogue* catalogue = nullptr;
  gateway::Executor* executor = nullptr;  // a variant job's concurrent expression calls
  const gateway::VariantResources* variant = nullptr;  // null: the workflow answers 503
  int64_t max_model_calls = 0;  // per variant job; 0 = unbounded
};

// The job of a queued entry, or the status to finish it with (a request that no longer passes
// admission: a model removed since, the input object replaced).
StatusOr<std::unique_ptr<gateway::Job>> BuildJob(const gateway::QueuedJob& queued,
                                                 const JobServices& services);

// The variant workflow's admission of `queued` (an entry of the admission stream): the checks
// that need the object store and catalogue, then the job record (or the standing job of the same
// case) and, for a new job, its entry in the client's queue. Returns the verdict for the waiting
// gateway (gateway/handlers/job_start.h); never fails: a refusal is a verdict too.
std::string AdmitVariant(const gateway::QueuedJob& queued, const JobServices& services,
                         gateway::JobStore* jobs, gateway::RedisJobQueue* queue);

}  // namespace dnaserve::runner
