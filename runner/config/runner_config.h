// The runner's settings, parsed once in main(). Precedence: default < environment < flag.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "core/config/shared_settings.h"
#include "runner/vcf/vcf_types.h"

namespace dnaserve::runner {

// The shared settings (Redis, workers, admin listener, per-client bounds) come from the base:
// the same flags and variables as the gateway's.
struct RunnerConfig : core::SharedSettings {
  // DNASERVE_RUNNER_ID: this runner's consumer name in the queue; default hostname-pid. Must be
  // unique among live runners (a Kubernetes pod name is).
  std::string runner_id;
  // DNASERVE_RUNNER_SLOTS: jobs run at once. DNASERVE_RUNNER_CLIENT_SLOTS: of those, how many
  // one client may hold (default slots - 1, at least 1), so another client always finds one.
  int slots = 4;
  int client_slots = 0;
  // DNASERVE_RUNNER_CLAIM_TIMEOUT: seconds a job may go without its runner's heartbeat before
  // another runner takes it over and runs it again.
  int64_t claim_timeout_seconds = 30;
  // DNASERVE_RUNNER_MAX_ATTEMPTS: runs a job gets; a job whose runners died this many times
  // ends as 503 service_unavailable.
  int64_t max_attempts = 3;
  // DNASERVE_JOB_MAX_SECONDS: wall time of one job, queueing excluded.
  int64_t job_max_seconds = 6 * 3600;
  // DNASERVE_JOB_MAX_MODEL_CALLS: worker calls one variant job may make.
  int64_t job_max_model_calls = 200000;
  // DNASERVE_VCF_MAX_RECORDS, _MAX_ALTS, _MAX_LINE_BYTES, _MAX_HEADER_BYTES,
  // _MAX_DECOMPRESSED_BYTES: what one variant job's input may hold (defaults in VcfLimits).
  variant::VcfLimits vcf_limits;
  int64_t worker_call_timeout_seconds = 300;  // DNASERVE_WORKER_CALL_TIMEOUT
  int executor_threads = 16;  // DNASERVE_EXECUTOR_THREADS: a variant job's concurrent calls
  // DNASERVE_DRAIN_TIMEOUT: after SIGTERM, how long running jobs may still finish; the rest are
  // handed back to the queue for another runner.
  int64_t drain_timeout_seconds = 30;

  // The genomic-variant-interpretation workflow. The object store is the operator's: a request
  // names only a bucket and a key, never a host. Without an endpoint the workflow answers 503;
  // without a catalogue a GRCh37 request is 400 "no start-site catalogue".
  std::string s3_endpoint;              // DNASERVE_S3_ENDPOINT: scheme://host[:port]
  std::string s3_region = "us-east-1";  // DNASERVE_S3_REGION
  std::string s3_access_key_id;         // DNASERVE_S3_ACCESS_KEY_ID
  // DNASERVE_S3_SECRET_ACCESS_KEY_FILE (preferred: a mounted Secret) or
  // DNASERVE_S3_SECRET_ACCESS_KEY; the file's content (one trailing newline dropped) ends up here.
  std::string s3_secret_access_key;
  std::string s3_secret_access_key_file;
  std::string s3_session_token;  // DNASERVE_S3_SESSION_TOKEN: temporary credentials only
  bool s3_path_style = true;     // DNASERVE_S3_PATH_STYLE: false = virtual-hosted addressing
  // DNASERVE_S3_CLIENT_CREDENTIALS_FILE: JSON {client_id: {access_key_id, secret_access_key[,
  // session_token]}}; those clients' requests are signed with their own credentials (mode 600).
  std::string s3_client_credentials_file;
  std::string grch37_catalogue;  // DNASERVE_GRCH37_CATALOGUE: start-site catalogue file
  std::string grch37_fasta;      // DNASERVE_GRCH37_FASTA: bgzip+faidx (or plain+fai) FASTA
  // DNASERVE_VARIANT_WORK_DIR: this runner's scratch directory (input and output VCFs, up to
  // 2 GiB each); emptied at start-up, since what is there was left by a runner that died.
  std::string variant_work_dir;
  // DNASERVE_VARIANT_SCORE_CONCURRENCY: expression calls one variant job keeps in flight.
  int variant_score_concurrency = 4;
  // The answer cache of variant scores (runner/workflows/answer_cache.h), shared by every
  // runner through Redis. DNASERVE_ANSWER_CACHE_BYTES: its byte budget, kept by its own
  // accounting (Redis's maxmemory is not relied on); 0 turns it off.
  // DNASERVE_ANSWER_CACHE_TTL: seconds an answer is kept at most.
  int64_t answer_cache_bytes = 64LL << 20;
  int64_t answer_cache_ttl_seconds = 7 * 86400;
  // DNASERVE_INTERVAL_ANSWER_MAX_BYTES: an interval answer larger than this is served but not
  // cached (runner/workflows/interval_answers.h); 0: no cap.
  int64_t interval_answer_max_bytes = 4LL << 20;
};

// Parses flags (--help lists each with its environment variable). Returns a bad_request status
// naming the problem; prints help and sets `exit_now` for --help.
StatusOr<RunnerConfig> ParseRunnerConfig(int argc, char** argv, bool* exit_now);

}  // namespace dnaserve::runner
