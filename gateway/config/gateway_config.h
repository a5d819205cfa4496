// The gateway's settings, parsed once in main(). Precedence: default < environment < flag.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "core/config/shared_settings.h"

namespace dnaserve::gateway {

// The shared settings (Redis, workers, admin listener, per-client bounds) come from the base.
struct GatewayConfig : core::SharedSettings {
  std::string listen_address = "127.0.0.1";  // DNASERVE_LISTEN_ADDRESS
  int port = 8080;                            // DNASERVE_PORT
  std::string keys_file;                      // DNASERVE_KEYS_FILE (required)
  std::string docs_dir;                       // DNASERVE_DOCS_DIR: npm assets for /docs, /redoc
  int http_threads = 2;                       // DNASERVE_HTTP_THREADS
  int executor_threads = 32;                  // DNASERVE_EXECUTOR_THREADS: concurrent worker calls
  int executor_queue = 256;                   // DNASERVE_EXECUTOR_QUEUE: queued calls beyond those
  double ip_rate_per_second = 10;             // DNASERVE_IP_RATE: edge per-IP refill
  int64_t ip_burst = 20;                      // DNASERVE_IP_BURST: edge per-IP bucket
  int64_t sync_timeout_seconds = 300;         // DNASERVE_SYNC_TIMEOUT: worker call deadline
  // DNASERVE_TRUSTED_PROXIES: comma-separated addresses or CIDRs of the proxies (ingress, load
  // balancer) whose X-Forwarded-For names the client for the per-IP limit; empty = none.
  std::string trusted_proxies;
  // DNASERVE_MAX_BUFFERED_BODY_MB: request bodies being received at once, all connections
  // together (MiB); beyond it new bodies get 503 with Retry-After.
  int64_t max_buffered_body_mb = 256;
  // DNASERVE_DRAIN_TIMEOUT: after SIGTERM, how long in-flight requests and jobs may still run.
  int64_t drain_timeout_seconds = 30;

};

// Parses flags (--help lists each with its environment variable). Returns a bad_request status
// naming the problem; prints help and returns nullopt-like kOk-with-exit via `exit_now`.
StatusOr<GatewayConfig> ParseGatewayConfig(int argc, char** argv, bool* exit_now);

}  // namespace dnaserve::gateway
