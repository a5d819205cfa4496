// dnaserve-splice-bench: the splice variant scorer's throughput against its limit (issue 25).
// A fixed-seed set of SNVs on GRCh37 chr20 is scored through the runner's own code path
// (runner::ScoreVariants, in chunks as a VCF job calls it) against a real splice-human worker
// over gRPC, in a child process of its own so that its peak RSS is the runner's for that job.
// The limit is the bare TorchScript forward of the same blocks (the minimal window: the scored
// +-distance, phase bases and the flank each side) in calls of --limit-rows rows, same threads, divided
// by the forwards the job needs per variant (an ALT block per strand, REF blocks shared). Each
// round measures the bare rate, then the job, then the bare rate again: ratios are paired within
// a round. Prints a Markdown table (BENCHMARKS.md, "Splice variant scoring against its limit").
//
//   scripts/bench-splice [--variants 10000] [--rounds 2] [--threads 1] [--rows-per-pass 8]
//                        [--limit-rows 8]   (--rows-per-pass -1: the worker gets no flag)
#include <CLI/CLI.hpp>
#include <rapidjson/document.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/sequence.h"
#include "common/task.h"
#include "core/dispatch/catalogue_refresher.h"
#include "core/dispatch/model_catalogue.h"
#include "core/dispatch/worker_client.h"
#include "runner/genome/reference_genome.h"
#include "runner/workflows/splice_batch.h"
#include "runner/workflows/variant_scoring.h"
#include "tests/bench/bare_forward.h"
#include "tests/bench/bench_common.h"
#include "tests/support/service_launcher.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"
#include "worker/models/torchscript_model.h"

namespace {

using namespace dnaserve;  // NOLINT: a main file

constexpr int64_t kFlank = 1000;  // splice-human's manifest flank_bp

struct Settings {
  int64_t variants = 10000;
  uint32_t seed = 20261128;
  int64_t chunk = 1000;
  int64_t distance = 50;
  int rounds = 2;
  int threads = 1;
  int rows_per_pass = 8;  // the worker's --batch-rows-per-pass; -1: not given (package default)
  int limit_rows = 8;     // rows of each bare-forward call (the limit's pass)
  int64_t bare_rows = 1024;
  int64_t serving_sample = 100;
  std::string fasta;
  std::string worker;  // child mode
  std::string variants_file;
};

// --------------------------------------------------------------------------- the variant set

std::vector<core::RequestedVariant> MakeSnvs(const variant::ReferenceGenome& genome,
                                             const Settings& s) {
  const int64_t length = genome.ContigLength("20").value_or(0);
  std::mt19937_64 rng(s.seed);
  std::vector<core::RequestedVariant> out;
  while (static_cast<int64_t>(out.size()) < s.variants) {
    const int64_t pos = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(length));
    auto base = genome.Fetch("20", pos - 1, pos);
    if (!base.ok() || *base == "N") continue;
    static const std::string kBases = "ACGT";
    char alt = kBases[rng() % 4];
    if (alt == (*base)[0]) alt = kBases[(kBases.find(alt) + 1) % 4];
    core::RequestedVariant v;
    v.assembly = "GRCh37";
    v.contig = "chr20";
    v.position = pos;
    v.ref = *base;
    v.alt = std::string(1, alt);
    v.input = "chr20:" + std::to_string(pos) + ":" + v.ref + ":" + v.alt;
    out.push_back(std::move(v));
  }
  return out;
}

// The forwards the job makes: per chunk, two ALT blocks per variant and two per distinct REF
// block (both strands).
int64_t PlannedForwards(const std::vector<core::RequestedVariant>& variants, const Settings& s,
                        int64_t* width) {
  int64_t forwards = 0;
  for (size_t first = 0; first < variants.size(); first += static_cast<size_t>(s.chunk)) {
    std::set<std::pair<int64_t, int64_t>> refs;
    const size_t last = std::min(variants.size(), first + static_cast<size_t>(s.chunk));
    for (size_t i = first; i < last; ++i) {
      const auto b = runner::SpliceBlockFor(variants[i], s.distance, kFlank);
      refs.insert({b.start, b.scored});
      *width = b.width();
      forwards += 2;
    }
    forwards += 2 * static_cast<int64_t>(refs.size());
  }
  return forwards;
}

// --------------------------------------------------------------------------- child: the job

struct OneReference : runner::ReferenceLookup {
  const variant::ReferenceGenome* genome = nullptr;
  const variant::ReferenceGenome* Find(const std::string& a) const override {
    return a == "GRCh37" ? genome : nullptr;
  }
  std::vector<std::string> Names() const override { return {"GRCh37"}; }
};

int64_t SelfHwmKib() { return bench::ReadProcessMemory(static_cast<int>(getpid())).hwm_kib; }

int RunJob(const Settings& s) {
  auto genome = variant::ReferenceGenome::Open(s.fasta);
  if (!genome.ok()) {
    std::fprintf(stderr, "%s\n", genome.status().message().c_str());
    return 1;
  }
  OneReference lookup;
  lookup.genome = genome->get();
  const auto variants = MakeSnvs(**genome, s);
  core::GrpcInferenceBackend::Options options;
  options.endpoints.addresses[Task::kSplice] = {s.worker};
  core::GrpcInferenceBackend backend(options);
  core::ModelCatalogue catalogue;
  core::CatalogueRefresher refresher(&backend, &catalogue);
  for (int i = 0; i < 100 && !catalogue.Known(Task::kSplice); ++i) {
    refresher.RefreshOnce();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  runner::ScoringServices services;
  services.references = &lookup;
  services.catalogue = &catalogue;
  services.backend = &backend;
  core::JobContext context;
  const int64_t hwm_before = SelfHwmKib();
  int64_t calls = 0, scored = 0;
  double max_ds = 0;
  const auto started = std::chrono::steady_clock::now();
  for (size_t first = 0; first < variants.size(); first += static_cast<size_t>(s.chunk)) {
    core::AdmittedVariantScore admitted;
    const size_t last = std::min(variants.size(), first + static_cast<size_t>(s.chunk));
    admitted.input.variants.assign(variants.begin() + static_cast<std::ptrdiff_t>(first),
                                   variants.begin() + static_cast<std::ptrdiff_t>(last));
    admitted.input.splice = true;
    admitted.input.splice_distance = s.distance;
    admitted.splice_model = "splice-human";
    auto result = runner::ScoreVariants(admitted, services, context);
    if (!result.ok()) {
      std::fprintf(stderr, "scoring failed: %s\n", result.status().message().c_str());
      return 1;
    }
    calls += result->model_calls;
    for (const auto& v : result->variants) {
      if (!v.splice_plus) continue;
      ++scored;
      max_ds = std::max({max_ds, v.splice_plus->Max(), v.splice_minus->Max()});
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("{\"seconds\": %.6f, \"scored\": %lld, \"calls\": %lld, \"max_ds\": %.6f, "
              "\"hwm_before_kib\": %lld, \"hwm_kib\": %lld}\n",
              seconds, static_cast<long long>(scored), static_cast<long long>(calls), max_ds,
              static_cast<long long>(hwm_before), static_cast<long long>(SelfHwmKib()));
  return 0;
}

// --------------------------------------------------------------------------- driver

// The model input of `n` blocks of `width` from chr20 (char ids A=1 C=2 G=3 T=4 N=5), as rows of
// the packed calls, cut into calls of `rows` rows.
std::vector<bench::CallInputs> BareCalls(const variant::ReferenceGenome& genome,
                                         const std::vector<core::RequestedVariant>& variants,
                                         int64_t n, int rows, int64_t width) {
  std::vector<bench::CallInputs> calls;
  worker::IdTensor tensor;
  for (int64_t i = 0; i < n; ++i) {
    const auto& v = variants[static_cast<size_t>(i) % variants.size()];
    const auto b = runner::SpliceBlockFor(v, 50, kFlank);
    auto bases = genome.Fetch("20", b.start - kFlank, b.start - kFlank + width);
    for (char c : *bases) {
      tensor.data.push_back(c == 'A' ? 1 : c == 'C' ? 2 : c == 'G' ? 3 : c == 'T' ? 4 : 5);
    }
    if ((i + 1) % rows == 0) {
      tensor.shape = {rows, width};
      calls.push_back({std::move(tensor)});
      tensor = {};
    }
  }
  return calls;
}

std::string LoadAverage() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f / %.1f / %.1f", load[0], load[1], load[2]);
  return buf;
}

struct Round {
  double bare_before = 0, bare_after = 0;  // rows/s of the minimal window
  double block_rate = 0;                     // rows/s of the blocks' width
  double variants_per_s = 0;
  int64_t calls = 0;
  int64_t hwm_kib = 0;
  double max_ds = 0;
  std::string load_before, load_after;
};

// Today's path for comparison, on a sample: four worker calls per variant, each the variant's
// +-(distance + flank) window, which the worker runs as its 15 kb input.
double ServingVariantsPerSecond(const variant::ReferenceGenome& genome,
                                const std::vector<core::RequestedVariant>& variants,
                                core::InferenceBackend& backend, const Settings& s) {
  const auto started = std::chrono::steady_clock::now();
  const int64_t margin = s.distance + kFlank;
  for (int64_t i = 0; i < s.serving_sample; ++i) {
    const auto& v = variants[static_cast<size_t>(i)];
    auto window = genome.Fetch("20", v.position - 1 - margin, v.position + margin);
    std::string alt = *window;
    alt[static_cast<size_t>(margin)] = v.alt[0];
    for (const std::string* bases : {&*window, &alt}) {
      for (bool minus : {false, true}) {
        worker::v1::PredictRequest request;
        request.set_model("splice-human");
        request.set_sequence(minus ? ReverseComplement(*bases) : *bases);
        request.set_result_format(worker::v1::RESULT_FORMAT_SCORES);
        request.mutable_splice()->set_threshold(0.0);
        request.mutable_splice()->add_site_types(worker::v1::SPLICE_SITE_TYPE_DONOR);
        request.mutable_splice()->add_site_types(worker::v1::SPLICE_SITE_TYPE_ACCEPTOR);
        request.mutable_splice()->set_max_sites(2 * static_cast<int64_t>(bases->size()) + 2);
        auto r = backend.Predict(Task::kSplice, request, {}, nullptr);
        if (!r.ok()) return -1;
      }
    }
  }
  return static_cast<double>(s.serving_sample) /
         std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

int Drive(Settings s, const std::string& self) {
  std::string why;
  auto built = testing::BuildCatalogue({}, &why);
  if (!built) {
    std::fprintf(stderr, "no chr20 reference: %s\n", why.c_str());
    return 1;
  }
  s.fasta = built->fasta;
  auto genome = variant::ReferenceGenome::Open(s.fasta);
  if (!genome.ok()) return 1;
  const auto variants = MakeSnvs(**genome, s);
  int64_t width = 0;
  const int64_t forwards = PlannedForwards(variants, s, &width);
  const double forwards_per_variant =
      static_cast<double>(forwards) / static_cast<double>(variants.size());

  const std::string dir = testing::MakeTempDir("dnaserve-splice-bench");
  if (std::system(("mkdir -p " + dir + "/models && cp -r " + testing::SourceDir() +
                   "/worker/packages/splice-human " + dir + "/models/")
                      .c_str()) != 0) {
    return 1;
  }
  testing::LaunchedWorker worker;
  testing::WorkerLaunch launch;
  launch.task = "splice";
  launch.models_dir = dir + "/models";
  launch.log_path = dir + "/worker.log";
  launch.extra_args = {"--threads", std::to_string(s.threads)};
  if (s.rows_per_pass >= 0) {
    launch.extra_args.push_back("--batch-rows-per-pass");
    launch.extra_args.push_back(std::to_string(s.rows_per_pass));
  }
  if (!worker.Start(std::move(launch)) || !worker.WaitUntilListening()) {
    std::fprintf(stderr, "the worker did not start; see %s/worker.log\n", dir.c_str());
    return 1;
  }
  worker::SetTorchThreads(s.threads);
  // The limit's forward: the smallest window the model needs, 2 x distance + 1 scored bases and
  // the flank each side (the blocks add a few phase and grid bases: measured beside it).
  const int64_t minimal = 2 * s.distance + 1 + 2 * kFlank;
  double load_s = 0;
  auto bare = bench::BareForward::Load(dir + "/models/splice-human/model.pt", &load_s);
  auto bare_blocks = bench::BareForward::Load(dir + "/models/splice-human/model.pt", &load_s);
  if (!bare.ok() || !bare_blocks.ok()) return 1;
  (*bare)->Prepare(BareCalls(**genome, variants, s.bare_rows, s.limit_rows, minimal));
  (*bare_blocks)->Prepare(BareCalls(**genome, variants, s.bare_rows, s.limit_rows, width));
  auto rate_of = [&](bench::BareForward& forward) {
    auto seconds = forward.RunAll();
    return seconds.ok() ? static_cast<double>(s.bare_rows) / *seconds : -1.0;
  };
  auto bare_rate = [&]() { return rate_of(**bare); };
  bare_rate();  // warm-up
  rate_of(**bare_blocks);

  std::vector<Round> rounds;
  for (int r = 0; r < s.rounds; ++r) {
    Round round;
    round.load_before = LoadAverage();
    round.bare_before = bare_rate();
    round.block_rate = rate_of(**bare_blocks);
    const std::string command =
        self + " --job --fasta " + testing::ShellQuote(s.fasta) + " --worker " +
        worker.address() + " --variants " + std::to_string(s.variants) + " --seed " +
        std::to_string(s.seed) + " --chunk " + std::to_string(s.chunk) + " --distance " +
        std::to_string(s.distance);
    rapidjson::Document out;
    FILE* pipe = popen(command.c_str(), "r");
    std::string line;
    char buf[4096];
    while (pipe && fgets(buf, sizeof buf, pipe)) line += buf;
    if (!pipe || pclose(pipe) != 0 || out.Parse(line.c_str()).HasParseError()) {
      std::fprintf(stderr, "the job failed: %s\n", line.c_str());
      return 1;
    }
    round.variants_per_s = out["scored"].GetDouble() / out["seconds"].GetDouble();
    round.calls = out["calls"].GetInt64();
    round.hwm_kib = out["hwm_kib"].GetInt64();
    round.max_ds = out["max_ds"].GetDouble();
    round.bare_after = bare_rate();
    round.load_after = LoadAverage();
    rounds.push_back(round);
    std::fprintf(stderr, "round %d: %.1f variants/s, bare %.1f / %.1f rows/s, HWM %lld KiB\n",
                 r + 1, round.variants_per_s, round.bare_before, round.bare_after,
                 static_cast<long long>(round.hwm_kib));
  }
  // Today's path on a sample, for the before/after figure: a worker as the package default runs
  // splice (one row a pass: a lone 15 kb window pays no filler), same threads.
  testing::LaunchedWorker one_row;
  testing::WorkerLaunch one_row_launch;
  one_row_launch.task = "splice";
  one_row_launch.models_dir = dir + "/models";
  one_row_launch.log_path = dir + "/worker-one-row.log";
  one_row_launch.extra_args = {"--threads", std::to_string(s.threads), "--batch-rows-per-pass",
                               "1"};
  if (!one_row.Start(std::move(one_row_launch)) || !one_row.WaitUntilListening()) return 1;
  core::GrpcInferenceBackend::Options options;
  options.endpoints.addresses[Task::kSplice] = {one_row.address()};
  core::GrpcInferenceBackend backend(options);
  const std::string serving_load = LoadAverage();
  const double serving = s.serving_sample > 0
                             ? ServingVariantsPerSecond(**genome, variants, backend, s)
                             : -1;
  const auto worker_memory = bench::ReadProcessMemory(worker.process().pid());

  std::printf("%lld SNVs on chr20 (seed %u), distance %lld, chunks of %lld variants, LibTorch "
              "threads %d (worker and bare), worker --batch-rows-per-pass %s, bare forward in "
              "calls of %d rows; block %lld bp; %.3f forwards per variant (%lld in all).\n\n",
              static_cast<long long>(s.variants), s.seed, static_cast<long long>(s.distance),
              static_cast<long long>(s.chunk), s.threads,
              s.rows_per_pass >= 0 ? std::to_string(s.rows_per_pass).c_str()
                                   : "not given (the package default)",
              s.limit_rows,
              static_cast<long long>(width), forwards_per_variant,
              static_cast<long long>(forwards));
  std::printf("| round | load avg before | bare forward, %lld bp (rows/s, before / after) | "
              "bare forward, %lld bp blocks | limit (variants/s) | scored (variants/s) | ratio | "
              "worker calls | runner peak RSS | load avg after |\n"
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
              static_cast<long long>(minimal), static_cast<long long>(width));
  for (size_t i = 0; i < rounds.size(); ++i) {
    const Round& r = rounds[i];
    const double limit = (r.bare_before + r.bare_after) / 2 / forwards_per_variant;
    std::printf("| %zu | %s | %.1f / %.1f | %.1f | %.1f | %.1f | **%.2f** | %lld | %.0f MiB | "
                "%s |\n",
                i + 1, r.load_before.c_str(), r.bare_before, r.bare_after, r.block_rate, limit,
                r.variants_per_s, r.variants_per_s / limit, static_cast<long long>(r.calls),
                static_cast<double>(r.hwm_kib) / 1024.0, r.load_after.c_str());
  }
  std::printf("\nThe serving window (the scorer before the blocks: 4 calls per variant, each a "
              "15 kb forward, on a worker of one row a pass) on the first %lld variants: %.2f variants/s (load avg %s). "
              "Worker peak RSS %.0f MiB. Largest DS seen: %.4f.\n",
              static_cast<long long>(s.serving_sample), serving, serving_load.c_str(),
              static_cast<double>(worker_memory.hwm_kib) / 1024.0,
              rounds.empty() ? 0.0 : rounds.back().max_ds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"splice variant scoring against its limit"};
  Settings s;
  bool job = false;
  app.add_flag("--job", job, "internal: run the scoring job and print its JSON line");
  app.add_option("--variants", s.variants, "SNVs scored");
  app.add_option("--seed", s.seed, "seed of the SNV set");
  app.add_option("--chunk", s.chunk, "variants per ScoreVariants call");
  app.add_option("--distance", s.distance, "the splice scorer's distance");
  app.add_option("--rounds", s.rounds, "paired rounds");
  app.add_option("--threads", s.threads, "LibTorch threads of the worker and the bare forward");
  app.add_option("--rows-per-pass", s.rows_per_pass,
                 "the worker's --batch-rows-per-pass (-1: not given, the package default)");
  app.add_option("--limit-rows", s.limit_rows, "rows of each bare-forward call (the limit)");
  app.add_option("--bare-rows", s.bare_rows, "blocks in each bare-forward measurement");
  app.add_option("--serving-sample", s.serving_sample, "variants scored the old way (0: none)");
  app.add_option("--fasta", s.fasta, "internal: the chr20 FASTA");
  app.add_option("--worker", s.worker, "internal: the worker's address");
  CLI11_PARSE(app, argc, argv);
  if (job) return RunJob(s);
  return Drive(s, argv[0]);
}
