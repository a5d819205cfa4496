#include "gateway/config/gateway_config.h"

#include <CLI/CLI.hpp>

namespace dnaserve::gateway {

StatusOr<GatewayConfig> ParseGatewayConfig(int argc, char** argv, bool* exit_now) {
  *exit_now = false;
  GatewayConfig c;
  CLI::App app{"dnaserve REST gateway"};
  app.add_option("--listen-address", c.listen_address, "address to bind")
      ->envname("DNASERVE_LISTEN_ADDRESS");
  app.add_option("--port", c.port, "HTTP port (0 = any free port)")
      ->envname("DNASERVE_PORT")
      ->check(CLI::Range(0, 65535));
  app.add_option("--keys-file", c.keys_file, "API keys file (SHA-256 digests only)")
      ->envname("DNASERVE_KEYS_FILE")
      ->required();
  core::AddSharedOptions(app, c);
  app.add_option("--docs-dir", c.docs_dir, "directory holding the npm docs assets")
      ->envname("DNASERVE_DOCS_DIR");
  app.add_option("--http-threads", c.http_threads, "HTTP reactor threads")
      ->envname("DNASERVE_HTTP_THREADS")
      ->check(CLI::Range(1, 64));
  app.add_option("--executor-threads", c.executor_threads, "concurrent worker calls")
      ->envname("DNASERVE_EXECUTOR_THREADS")
      ->check(CLI::Range(1, 4096));
  app.add_option("--executor-queue", c.executor_queue, "worker calls queued beyond those running")
      ->envname("DNASERVE_EXECUTOR_QUEUE")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--ip-rate", c.ip_rate_per_second, "edge per-IP requests per second")
      ->envname("DNASERVE_IP_RATE")
      ->check(CLI::PositiveNumber);
  app.add_option("--ip-burst", c.ip_burst, "edge per-IP burst")
      ->envname("DNASERVE_IP_BURST")
      ->check(CLI::PositiveNumber);
  app.add_option("--sync-timeout", c.sync_timeout_seconds, "worker call deadline in seconds")
      ->envname("DNASERVE_SYNC_TIMEOUT")
      ->check(CLI::Range(1, 86400));
  app.add_option("--trusted-proxies", c.trusted_proxies,
                 "addresses/CIDRs whose X-Forwarded-For is honoured for the per-IP limit")
      ->envname("DNASERVE_TRUSTED_PROXIES");
  app.add_option("--max-buffered-body-mb", c.max_buffered_body_mb,
                 "MiB of request bodies received at once, all connections together")
      ->envname("DNASERVE_MAX_BUFFERED_BODY_MB")
      ->check(CLI::Range(16, 65536));
  app.add_option("--drain-timeout", c.drain_timeout_seconds,
                 "seconds in-flight requests and jobs may run after SIGTERM")
      ->envname("DNASERVE_DRAIN_TIMEOUT")
      ->check(CLI::Range(0, 86400));
  if (Status parsed = ParseCommandLine(app, argc, argv, exit_now); !parsed.ok()) return parsed;
  if (*exit_now) return c;
  return c;
}

}  // namespace dnaserve::gateway
