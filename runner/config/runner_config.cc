#include "runner/config/runner_config.h"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "common/file_text.h"

namespace dnaserve::runner {
namespace {

std::string DefaultRunnerId() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "runner") + "-" + std::to_string(getpid());
}

}  // namespace

StatusOr<RunnerConfig> ParseRunnerConfig(int argc, char** argv, bool* exit_now) {
  *exit_now = false;
  RunnerConfig c;
  CLI::App app{"dnaserve job runner: runs queued jobs (async predictions, both workflows)"};
  core::AddSharedOptions(app, c);
  app.add_option("--runner-id", c.runner_id, "this runner's name in the queue (unique)")
      ->envname("DNASERVE_RUNNER_ID");
  app.add_option("--slots", c.slots, "jobs run at once")
      ->envname("DNASERVE_RUNNER_SLOTS")
      ->check(CLI::Range(1, 1024));
  app.add_option("--client-slots", c.client_slots,
                 "slots one client may hold (default slots - 1, at least 1)")
      ->envname("DNASERVE_RUNNER_CLIENT_SLOTS")
      ->check(CLI::Range(0, 1024));
  app.add_option("--claim-timeout", c.claim_timeout_seconds,
                 "seconds without a heartbeat after which another runner takes a job over")
      ->envname("DNASERVE_RUNNER_CLAIM_TIMEOUT")
      ->check(CLI::Range(2, 3600));
  app.add_option("--max-attempts", c.max_attempts,
                 "runs a job gets before it ends as 503 (its runners kept dying)")
      ->envname("DNASERVE_RUNNER_MAX_ATTEMPTS")
      ->check(CLI::Range(1, 100));
  app.add_option("--job-max-seconds", c.job_max_seconds, "wall time of one job")
      ->envname("DNASERVE_JOB_MAX_SECONDS")
      ->check(CLI::Range(1, 7 * 86400));
  app.add_option("--job-max-model-calls", c.job_max_model_calls,
                 "worker calls one variant job may make")
      ->envname("DNASERVE_JOB_MAX_MODEL_CALLS")
      ->check(CLI::Range(1, 1000000000));
  app.add_option("--vcf-max-records", c.vcf_limits.max_records,
                 "records one variant job's VCF may hold")
      ->envname("DNASERVE_VCF_MAX_RECORDS")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--vcf-max-alts", c.vcf_limits.max_alts_per_record,
                 "ALT alleles one VCF record may have (then the job fails: split multi-allelic "
                 "records)")
      ->envname("DNASERVE_VCF_MAX_ALTS")
      ->check(CLI::Range(int64_t{1}, int64_t{65535}));
  app.add_option("--vcf-max-line-bytes", c.vcf_limits.max_line_bytes,
                 "bytes of one VCF line, header or record")
      ->envname("DNASERVE_VCF_MAX_LINE_BYTES")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 31));
  app.add_option("--vcf-max-header-bytes", c.vcf_limits.max_header_bytes,
                 "bytes of one VCF's header")
      ->envname("DNASERVE_VCF_MAX_HEADER_BYTES")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 31));
  app.add_option("--vcf-max-decompressed-bytes", c.vcf_limits.max_decompressed_bytes,
                 "bytes one variant job's VCF may decompress to")
      ->envname("DNASERVE_VCF_MAX_DECOMPRESSED_BYTES")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 50));
  app.add_option("--worker-call-timeout", c.worker_call_timeout_seconds,
                 "deadline of one worker call in seconds")
      ->envname("DNASERVE_WORKER_CALL_TIMEOUT")
      ->check(CLI::Range(1, 86400));
  app.add_option("--executor-threads", c.executor_threads,
                 "threads for a variant job's concurrent expression calls")
      ->envname("DNASERVE_EXECUTOR_THREADS")
      ->check(CLI::Range(1, 4096));
  app.add_option("--drain-timeout", c.drain_timeout_seconds,
                 "seconds running jobs may still finish after SIGTERM")
      ->envname("DNASERVE_DRAIN_TIMEOUT")
      ->check(CLI::Range(0, 86400));
  app.add_option("--s3-endpoint", c.s3_endpoint,
                 "object store for the variant workflow, scheme://host[:port] (empty = the "
                 "workflow answers 503)")
      ->envname("DNASERVE_S3_ENDPOINT");
  app.add_option("--s3-region", c.s3_region, "object store region (SigV4 signing)")
      ->envname("DNASERVE_S3_REGION");
  app.add_option("--s3-access-key-id", c.s3_access_key_id, "object store access key id")
      ->envname("DNASERVE_S3_ACCESS_KEY_ID");
  auto* secret_file = app.add_option("--s3-secret-access-key-file", c.s3_secret_access_key_file,
                                     "file holding the object store secret access key (preferred)")
                          ->envname("DNASERVE_S3_SECRET_ACCESS_KEY_FILE");
  app.add_option("--s3-secret-access-key", c.s3_secret_access_key,
                 "object store secret access key (prefer the environment or the file: a flag "
                 "is visible to other local users)")
      ->envname("DNASERVE_S3_SECRET_ACCESS_KEY")
      ->excludes(secret_file);
  app.add_option("--s3-session-token", c.s3_session_token,
                 "object store session token (temporary credentials only)")
      ->envname("DNASERVE_S3_SESSION_TOKEN");
  app.add_option("--s3-path-style", c.s3_path_style,
                 "true: <endpoint>/<bucket>/<key>; false: <bucket>.<endpoint host>/<key>")
      ->envname("DNASERVE_S3_PATH_STYLE");
  app.add_option("--s3-client-credentials-file", c.s3_client_credentials_file,
                 "JSON file of per-client object store credentials {client_id: {access_key_id, "
                 "secret_access_key[, session_token]}} (mode 600; clients not in it use the "
                 "service's)")
      ->envname("DNASERVE_S3_CLIENT_CREDENTIALS_FILE");
  app.add_option("--grch37-catalogue", c.grch37_catalogue,
                 "GRCh37 start-site catalogue (scripts/build-catalogue)")
      ->envname("DNASERVE_GRCH37_CATALOGUE");
  app.add_option("--grch37-fasta", c.grch37_fasta,
                 "GRCh37 reference FASTA, bgzip with .fai and .gzi (or plain with .fai)")
      ->envname("DNASERVE_GRCH37_FASTA");
  app.add_option("--variant-work-dir", c.variant_work_dir,
                 "this runner's scratch directory for variant jobs (emptied at start-up)")
      ->envname("DNASERVE_VARIANT_WORK_DIR");
  app.add_option("--variant-score-concurrency", c.variant_score_concurrency,
                 "expression calls one variant job keeps in flight")
      ->envname("DNASERVE_VARIANT_SCORE_CONCURRENCY")
      ->check(CLI::Range(1, 256));
  app.add_option("--answer-cache-bytes", c.answer_cache_bytes,
                 "byte budget of the shared cache of variant scores in Redis (0: off)")
      ->envname("DNASERVE_ANSWER_CACHE_BYTES")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--answer-cache-ttl", c.answer_cache_ttl_seconds,
                 "seconds a cached variant score is kept at most")
      ->envname("DNASERVE_ANSWER_CACHE_TTL")
      ->check(CLI::Range(int64_t{1}, int64_t{365} * 86400));
  app.add_option("--interval-answer-max-bytes", c.interval_answer_max_bytes,
                 "largest interval answer kept in the answer cache (0: no cap)")
      ->envname("DNASERVE_INTERVAL_ANSWER_MAX_BYTES")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  if (Status parsed = ParseCommandLine(app, argc, argv, exit_now); !parsed.ok()) return parsed;
  if (*exit_now) return c;
  if (c.runner_id.empty()) c.runner_id = DefaultRunnerId();
  if (c.client_slots == 0) c.client_slots = std::max(1, c.slots - 1);
  if (c.client_slots > c.slots) c.client_slots = c.slots;
  if (!c.s3_secret_access_key_file.empty()) {
    auto secret = ReadSecretFile(c.s3_secret_access_key_file);
    if (!secret.ok()) return secret.status();
    c.s3_secret_access_key = std::move(secret).value();
  }
  if (c.grch37_catalogue.empty() != c.grch37_fasta.empty()) {
    return BadRequest(
        "--grch37-catalogue and --grch37-fasta go together: the catalogue's start sites are "
        "read from that FASTA");
  }
  return c;
}

}  // namespace dnaserve::runner
