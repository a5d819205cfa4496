// What handlers get to work with: the gateway's components (owned by main) and, per call, the
// facts the middleware established (route parameters, the authenticated principal, quota).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gateway/auth/key_store.h"
#include "core/dispatch/executor.h"
#include "core/dispatch/inference_backend.h"
#include "core/dispatch/model_catalogue.h"
#include "gateway/handlers/docs_handler.h"
#include "gateway/http/http_types.h"
#include "core/jobs/admit_and_create.h"
#include "core/jobs/genome_listing.h"
#include "core/jobs/job_queue.h"
#include "core/jobs/job_store.h"
#include "core/quota/quota.h"
#include "gateway/server/http_server.h"

namespace dnaserve::gateway {

class GatewayMetrics;
class JobRunner;
class JobWaiter;

struct GatewayServices {
  const KeyStore* keys = nullptr;
  core::QuotaStore* quotas = nullptr;
  core::JobStore* jobs = nullptr;
  // Optional: the quota and a job record in one step (one Redis round trip) for jobs that run
  // here; when null, `quotas` then `jobs`.
  core::AdmitAndCreate* admit_and_create = nullptr;
  core::InferenceBackend* backend = nullptr;
  core::ModelCatalogue* catalogue = nullptr;
  const DocsHandler* docs = nullptr;
  // Runs the jobs executed here: a gateway's sync predictions, a runner's dequeued jobs.
  JobRunner* runner = nullptr;
  // The pool jobs run on.
  core::Executor* executor = nullptr;
  // Gateways only: where jobs that outlive a request go (async predictions, both workflows),
  // and what waits for a runner's answer (sync find-genes, variant admissions). A runner leaves
  // both null, so the same admissions build jobs to run in place.
  core::RedisJobQueue* queue = nullptr;
  const core::GenomeListing* genomes = nullptr;  // GET /v1/genomes (runners publish it)
  JobWaiter* waiter = nullptr;
  // How long a sync request may take from its arrival (DNASERVE_SYNC_TIMEOUT): a sync job run by
  // a runner gets it as its deadline, and the gateway waits for it no longer.
  std::chrono::seconds sync_budget{300};
  GatewayMetrics* metrics = nullptr;  // optional: requests, latencies and 429s for /metrics
  // Per-IP edge limit: nullopt admits; a refusal carries Retry-After and the bucket's state.
  std::function<std::optional<core::QuotaDecision>(const std::string& ip)> admit_ip;
};

// A concurrency lease on the caller's quota, released when the last holder lets go (the sync
// response is sent, the async job ends, or the request is refused before any work).
class QuotaLease {
 public:
  QuotaLease(core::QuotaStore* store, Principal principal, std::string lease_id)
      : store_(store), principal_(std::move(principal)), lease_id_(std::move(lease_id)) {}
  ~QuotaLease() {
    if (store_) store_->Release(principal_, lease_id_);
  }
  QuotaLease(const QuotaLease&) = delete;
  QuotaLease& operator=(const QuotaLease&) = delete;
  void Renew(int64_t ttl_ms) {
    if (store_) store_->Renew(principal_, lease_id_, ttl_ms);
  }
  // Hands the lease to whoever runs the queued job (a runner releases it when the job ends).
  void Detach() { store_ = nullptr; }
  const std::string& client_id() const { return principal_.client_id; }

 private:
  core::QuotaStore* store_;
  Principal principal_;
  std::string lease_id_;
};

// A Metering::kAdmit route's quota, left by the pipeline to its handler (MakeJobRoute), which
// takes it once it knows where the job runs: for a job run here together with its record
// (GatewayServices::admit_and_create). The handler stores the bucket's state in `info` for the
// response's RateLimit-* headers.
struct DeferredMetering {
  std::optional<core::RateLimitInfo> info;
};

struct RouteCall {
  HttpRequest request;
  std::map<std::string, std::string> params;  // from {name} segments of the route pattern
  std::optional<Principal> principal;          // set on authenticated routes
  std::string job_id;                          // metered routes: the id the lease was taken under
  std::shared_ptr<QuotaLease> lease;           // metered routes
  // Set by the pipeline on kAdmit routes: the handler still has to take the quota (above).
  std::shared_ptr<DeferredMetering> deferred_metering;
};

using RouteHandler = std::function<void(RouteCall call, Responder respond)>;

}  // namespace dnaserve::gateway
