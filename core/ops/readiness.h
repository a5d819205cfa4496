// A replica's readiness signal (gateways and runners) (GET /ready on the admin listener), distinct from /health's
// liveness. Ready means: not draining, Redis answered at least once, and every configured task
// family has reported its models at least once.
//
// Why latched, not live: readiness takes a replica out of its Service. Every replica shares
// Redis and the workers, so if readiness followed their live state, one Redis restart or one
// dead worker family would take every gateway out at once, and clients would get the ingress's
// bare 502/503 instead of the service's own 503 envelope with Retry-After (which the gateway
// keeps answering while a dependency is down). The live state is still reported in the body
// and in the dnaserve_redis_up metric.
#pragma once

#include <atomic>
#include <functional>
#include <vector>

#include "common/task.h"
#include "core/dispatch/model_catalogue.h"
#include "core/jobs/job_store.h"
#include "common/observability/admin_server.h"

namespace dnaserve::core {

class Readiness {
 public:
  // `tasks` are the configured worker families; `on_redis_checked` (may be empty) hears each
  // check's Redis state, for a metric.
  Readiness(JobStore* jobs, const ModelCatalogue* catalogue, std::vector<Task> tasks,
            std::function<void(bool up)> on_redis_checked = {});

  // SIGTERM: from now on /ready answers 503 so that the replica leaves its Service's endpoints.
  void BeginDrain() { draining_ = true; }
  bool draining() const { return draining_; }

  // 200 {"status":"ready",...} or 503 {"status":"starting"|"draining",...}; the body also carries
  // "redis" ("up"/"down") and "tasks_waiting" (families whose models are not known yet).
  observability::AdminResponse Check();

 private:
  JobStore* jobs_;
  const ModelCatalogue* catalogue_;
  std::vector<Task> tasks_;
  std::function<void(bool up)> on_redis_checked_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> redis_seen_{false};
};

}  // namespace dnaserve::core
