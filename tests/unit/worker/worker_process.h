// A real dnaserve-worker process driven over gRPC, and the reference data the model tests read:
// GRCh37 chr20 from Debian's vt-examples (fetched once into the build tree) and ../shared/data
// (read in place). Shared by the tests that serve real packages (bundled, DeepSTARR, OpenSpliceAI).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/support/service_launcher.h"
#include "tests/support/test_env.h"

namespace dnaserve::worker::testing {

using dnaserve::testing::WorkerBinary;  // tests/support/service_launcher.h
std::string SharedDataDir();  // <source>/../shared/data
using dnaserve::testing::ShellQuote;  // tests/support/service_launcher.h
// True when /usr/bin/python3 can import torch.
bool PythonHasTorch();

// Runs `script` with `sh -e` under an exclusive flock on `lock_dir`, so concurrent test processes
// (ctest -j) do the work once. `env` reaches the script as variables; its output goes to `log`.
bool RunLockedScript(const std::string& lock_dir, const char* script,
                     const std::map<std::string, std::string>& env, const std::string& log);

// GRCh37 chr20 (bgzip FASTA, record "20") from Debian's vt-examples package, downloaded once into
// <build>/test-data/vt-examples/20.fa.gz. nullopt, with the reason in *why, when that fails.
std::optional<std::string> Chr20Fasta(std::string* why);

// Runs `/usr/bin/python3 <args...>` with its output in `log`; true on exit status 0.
bool RunPython(const std::vector<std::string>& args, const std::string& log);

// A bedGraph track of 1 bp rows covering [0, length) in order -> one value per base; empty when
// the rows are not exactly that (flanked splice models write such tracks).
std::vector<double> PerBaseTrack(const std::string& bedgraph, size_t length);

// One line of the `.sites` file tests/unit/worker/openspliceai_genes.py writes: a splice site's
// type ("donor"/"acceptor"), its index in the gene sequence and its role ("target": a junction of
// the chosen transcript; "other": another refGene transcript's on the same strand).
struct AnnotatedSite {
  std::string type;
  int64_t index = 0;
  std::string role;
};
// The sites of such a file; empty when it cannot be read or a line does not parse.
std::vector<AnnotatedSite> ReadAnnotatedSites(const std::string& path);

struct PredictCall {
  grpc::Status status;
  std::optional<v1::PredictResult> result;
};

// One dnaserve-worker serving `task` from `models_dir` on a free loopback port (launched by
// tests/support/service_launcher.h) and a gRPC channel to it; stopped on destruction. Its log is
// `log_path`, else in a scratch directory (kept with DNASERVE_KEEP_TEST_FILES). It stops within
// 3 s of SIGTERM (--shutdown-grace-seconds), so a test never waits out the default grace.
class WorkerProcess {
 public:
  WorkerProcess() = default;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  ~WorkerProcess();

  // Starts the worker (`extra_args` appended to its command line), waits until it listens and
  // connects to it.
  bool Start(Task task, const std::string& models_dir,
             const std::vector<std::string>& extra_args = {}, const std::string& log_path = "");
  grpc::Status ListModels(v1::ListModelsResponse* out);
  PredictCall Predict(const v1::PredictRequest& request,
                      std::chrono::seconds deadline = std::chrono::seconds(300));
  // The same, for callers that want the status and the result apart.
  grpc::Status Predict(const v1::PredictRequest& request, v1::PredictResult* result,
                       std::chrono::seconds deadline = std::chrono::seconds(300));
  v1::Worker::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  dnaserve::testing::ChildProcess& process() { return worker_.process(); }
  std::string Log() const;
  // Polls the log for `text` (the worker flushes each line as it writes it).
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout) const;
  int pid() { return process().pid(); }

 private:
  std::string scratch_dir_;  // removed on destruction; "" when the caller chose the log
  dnaserve::testing::LaunchedWorker worker_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Worker::Stub> stub_;
};

}  // namespace dnaserve::worker::testing

// In a worker test case (Catch2 with CATCH_CONFIG_PREFIX_ALL): `dir` = the generated model
// packages, or the test returns with a warning when they cannot be made; fails when the
// dnaserve-worker binary has not been built.
#define REQUIRE_MODELS_OR_SKIP(dir)                                                        \
  std::string why_skipped;                                                                 \
  auto dir = ::dnaserve::testing::GeneratedModelsDir(&why_skipped);                        \
  if (!dir) {                                                                              \
    CATCH_WARN("skipped: " << why_skipped);                                                \
    return;                                                                                \
  }                                                                                        \
  CATCH_INFO("build the dnaserve-worker target first: " << ::dnaserve::testing::WorkerBinary()); \
  CATCH_REQUIRE(std::filesystem::exists(::dnaserve::testing::WorkerBinary()))
