#include "worker/service/worker_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/shutdown_signals.h"
#include "common/observability/admin_server.h"
#include "common/observability/metrics.h"
#include "worker/batching/batching_model.h"
#include "worker/batching/fixed_rows_model.h"
#include "worker/batching/pass_width.h"
#include "worker/manifest/manifest.h"
#include "worker/models/host_memory.h"
#include "worker/models/model_registry.h"
#include "worker/models/torchscript_model.h"
#include "worker/tokenize/tokenizer.h"
#include "worker/service/worker_metrics.h"
#include "worker/service/worker_service.h"

namespace dnaserve::worker {
namespace {

int Cpus() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// One concurrent forward pass per group of intra-op threads, so that a busy model keeps every
// CPU busy without oversubscribing them.
int AutoExecutors() {
  return std::max(1, Cpus() / std::max(1, TorchThreads()));
}

// The TorchScript module of a package, behind a batching queue unless batching is off. The load
// time and the batching queue are reported to `metrics`.
StatusOr<std::shared_ptr<Model>> LoadServedModel(const ModelManifest& manifest,
                                                 const BatchingConfig& batching,
                                                 WorkerMetrics* metrics) {
  const auto started = std::chrono::steady_clock::now();
  auto model = LoadTorchScriptModel(manifest.WeightsPath(), manifest.precision,
                                    manifest.id);
  metrics->ModelLoaded(
      manifest.id, model.ok(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  if (!model.ok()) return model;
  const int64_t rows_per_pass = RowsPerPassFor(manifest, batching.rows_per_pass);
  const PassWidth pass_width = PassWidthFor(manifest, batching.rows_per_pass);
  if (rows_per_pass > 0) {
    model = std::shared_ptr<Model>(
        std::make_shared<FixedRowsModel>(std::move(model).value(), pass_width));
  }
  if (!batching.enabled) return model;
  BatchingOptions options;
  options.model_id = manifest.id;
  options.bases_per_row = manifest.context_window_bp;
  options.max_batch_bases = batching.max_batch_bases;
  if (rows_per_pass > 0) {
    // A pass is one forward of the fixed shape: stacking more would only make the calls in it
    // wait for each other, and long calls queue in pieces of it. Its rows scale with their width
    // (pass_width.h); its bases stay within R serving windows.
    options.max_batch_bases = pass_width.PassBases();
    options.max_call_rows = rows_per_pass;
    options.pass_width = pass_width;
  }
  options.max_queue_bases = batching.max_queue_bases;
  options.max_wait = std::chrono::microseconds(batching.max_wait_us);
  options.max_passes = batching.executors;
  options.on_pass = [metrics, id = manifest.id](size_t calls, int64_t rows) {
    metrics->BatchPass(id, calls, rows);
  };
  auto batcher = std::make_shared<BatchingModel>(std::move(model).value(), std::move(options));
  metrics->WatchBatcher(batcher);
  return std::shared_ptr<Model>(std::move(batcher));
}

std::map<std::string, observability::AdminHandler> WorkerAdminRoutes(
    const metrics::Registry* registry) {
  return {
      {"/metrics",
       [registry] {
         return observability::AdminResponse{200, metrics::kTextFormatContentType,
                                             registry->Render()};
       }},
      // Liveness stays 200 while the process drains (gRPC health is NOT_SERVING then), so a
      // draining worker is not restarted in the middle of its calls.
      {"/live", [] { return observability::AdminResponse{200, "text/plain", "live\n"}; }},
  };
}

}  // namespace

int64_t DefaultRowsPerPass(Task task) {
  return task == Task::kSplice || task == Task::kExpression ? 1 : 4;
}

int64_t RowsPerPassFor(const ModelManifest& manifest, int64_t configured) {
  if (configured >= 0) return configured;
  return manifest.batch_rows_per_pass.value_or(DefaultRowsPerPass(manifest.task));
}

int64_t ServingWindowColumns(const ModelManifest& manifest) {
  // A BPE tokenizer's count depends on the bases; loading its tokenizer.json here would only say so.
  if (manifest.tokenizer.type == TokenizerType::kBpe || manifest.context_window_bp <= 0) return 0;
  auto tokenizer = LoadTokenizer(manifest);
  if (!tokenizer.ok() || (*tokenizer)->pad_id().has_value()) return 0;
  std::vector<int64_t> ids;
  (*tokenizer)->EncodeIds(std::string(static_cast<size_t>(manifest.context_window_bp), 'A'), &ids);
  return static_cast<int64_t>(ids.size());
}

PassWidth PassWidthFor(const ModelManifest& manifest, int64_t configured) {
  PassWidth width;
  width.rows_per_pass = std::max<int64_t>(1, RowsPerPassFor(manifest, configured));
  // An operator's explicit setting caps the rows: narrow rows then run R to a pass, as before.
  width.max_rows = configured > 0 ? configured : 0;
  width.window_columns = ServingWindowColumns(manifest);
  width.window_bases = std::max<int64_t>(1, manifest.context_window_bp);
  return width;
}

int RunWorkerServer(const WorkerConfig& config) {
  // Block the termination signals before gRPC and LibTorch start threads (they inherit the mask),
  // so that only the waiter thread below ever receives them.
  const ShutdownSignals signals;
  // Before any thread allocates: forward passes keep their freed activations mapped instead of
  // page-faulting them back in on every request (worker/models/host_memory.h says why).
  const MallocPolicy malloc_policy = ApplyForwardPassMallocPolicy(kForwardMaxArenas);

  ManifestScan scan = ScanModelsDir(config.models_dir, config.task);
  for (const auto& error : scan.errors) {
    log::Error("model_package_rejected", {{"task", TaskName(config.task)}, {"error", error}});
  }
  for (const auto& m : scan.models) {
    log::Info("model_package_found", {{"model", m.id},
                                      {"is_default", m.is_default},
                                      {"trained", m.trained},
                                      {"batch_rows_per_pass",
                                       RowsPerPassFor(m, config.batching.rows_per_pass)},
                                      {"context_window_bp", m.context_window_bp}});
  }
  if (scan.models.empty()) {
    log::Warn("no_models", {{"task", TaskName(config.task)}, {"models_dir", config.models_dir}});
  }

  SetTorchThreads(config.torch_threads);
  BatchingConfig batching = config.batching;
  if (batching.executors <= 0) batching.executors = AutoExecutors();
  metrics::Registry metrics_registry;
  metrics::AddBuildInfo(&metrics_registry);
  WorkerMetrics metrics(&metrics_registry, std::string(TaskName(config.task)));
  ModelRegistry registry(std::move(scan.models),
                         [&batching, &metrics](const ModelManifest& manifest) {
                           return LoadServedModel(manifest, batching, &metrics);
                         });
  metrics.WatchRegistry(&registry);
  WorkerService service(config.task, &registry, &metrics);

  std::optional<observability::AdminServer> admin;
  if (!config.admin_listen.empty()) {
    admin.emplace(config.admin_listen, WorkerAdminRoutes(&metrics_registry));
    if (Status started = admin->Start(); !started.ok()) {
      log::Error("admin_listen_failed", {{"error", started.message()}});
      return 1;
    }
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(config.listen_address, grpc::InsecureServerCredentials(), &bound_port);
  // gRPC binds with SO_REUSEPORT by default: a second worker given a taken address would start
  // and silently share its connections with the first (a request for one model family reaching
  // another). Without it the second fails to listen, and says so.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(config.max_message_bytes);
  // Gateways ping connections with calls open (every 10 s by default, never more often than
  // every 5 s) to notice a worker that stopped answering. gRPC's default policy calls pings more
  // frequent than every 5 minutes abuse and answers the third with GOAWAY, which would cut a
  // long call that sends no progress for a while.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  if (config.max_connection_age_seconds > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               config.max_connection_age_seconds * 1000);
    // Calls still running on an aged connection get the shutdown grace to finish.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               std::max(1, config.shutdown_grace_seconds) * 1000);
  }
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    log::Error("listen_failed", {{"address", config.listen_address}});
    return 1;
  }
  server->GetHealthCheckService()->SetServingStatus(v1::Worker::service_full_name(), true);
  log::Info("worker_listening", {{"task", TaskName(config.task)},
                                 {"address", config.listen_address},
                                 {"port", bound_port},
                                 {"admin_port", admin ? admin->port() : 0},
                                 {"models", static_cast<int64_t>(registry.manifests().size())},
                                 {"torch_threads", TorchThreads()},
                                 {"batching", batching.enabled},
                                 {"batch_max_bases", batching.max_batch_bases},
                                 {"batch_max_wait_us", batching.max_wait_us},
                                 {"batch_executors", batching.executors},
                                 {"batch_rows_per_pass", batching.rows_per_pass},
                                 {"queue_max_bases", batching.max_queue_bases},
                                 {"malloc_policy", malloc_policy.applied},
                                 {"malloc_arenas", malloc_policy.max_arenas}});

  std::thread waiter([&] {
    const int signal_number = signals.Wait();
    log::Info("shutdown_started",
              {{"signal", signal_number}, {"grace_seconds", config.shutdown_grace_seconds}});
    server->GetHealthCheckService()->Shutdown();  // report NOT_SERVING while draining
    server->Shutdown(std::chrono::system_clock::now() +
                     std::chrono::seconds(config.shutdown_grace_seconds));
  });
  server->Wait();
  waiter.join();
  if (admin) admin->Stop();
  log::Info("shutdown_complete", {{"task", TaskName(config.task)}});
  return 0;
}

}  // namespace dnaserve::worker
