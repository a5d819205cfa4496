// dnaserve-precision-drift: one package's scores in fp32, bf16 and int8 on the same real sequence
// (worker/README.md, "Reduced precision"; figures in BENCHMARKS.md). Not a test: a measurement.
//
//   dnaserve-precision-drift --package DIR --sequence FILE [--windows N] [--rounds R]
//                            [--threads T] [--save-dir OUT]
//
// The sequence file holds bases only (no header). It is cut into N non-overlapping windows of the
// package's context_window_bp, each window tokenised by the package's tokenizer and run one
// window per forward call through LoadTorchScriptModel with each precision (the worker's own load
// path). Every output value of every window is a "per-position score". Printed per precision:
// max |score - fp32 score|, Spearman rank correlation with fp32, and the median time of one pass
// over the N windows; the precisions run interleaved in each round (paired on a shared machine).
// --save-dir writes the converted TorchScript modules (model.bf16.pt, model.int8.pt) so that the
// Python evaluation (scripts/evaluate-models) can score them.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "worker/manifest/manifest.h"
#include "worker/models/reduced_precision.h"
#include "worker/models/torchscript_model.h"
#include "worker/tokenize/tokenizer.h"

namespace dw = dnaserve::worker;

namespace {

std::vector<double> Ranks(const std::vector<float>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    double rank = (i + j) / 2.0;  // ties share their mean rank
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

double Spearman(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double n = static_cast<double>(ra.size());
  double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fp32 / bf16 / int8 drift and speed of one package on a real sequence"};
  std::string package, sequence_file, save_dir;
  int windows = 16, rounds = 5, threads = 2;
  app.add_option("--package", package, "package directory")->required();
  app.add_option("--sequence", sequence_file, "file of bases")->required();
  app.add_option("--windows", windows, "windows per pass");
  app.add_option("--rounds", rounds, "timed rounds (precisions interleaved in each)");
  app.add_option("--threads", threads, "LibTorch intra-op threads");
  app.add_option("--save-dir", save_dir, "write model.bf16.pt and model.int8.pt here");
  CLI11_PARSE(app, argc, argv);
  dw::SetTorchThreads(threads);

  auto manifest = dw::LoadManifest(package);
  if (!manifest.ok()) return std::cerr << manifest.status().message() << "\n", 1;
  auto tokenizer = dw::LoadTokenizer(*manifest);
  if (!tokenizer.ok()) return std::cerr << tokenizer.status().message() << "\n", 1;
  std::ifstream in(sequence_file);
  std::stringstream text;
  text << in.rdbuf();
  std::string bases;
  for (char c : text.str()) {
    if (std::isalpha(static_cast<unsigned char>(c))) bases += static_cast<char>(std::toupper(c));
  }
  const int64_t window = manifest->context_window_bp;
  windows = static_cast<int>(std::min<int64_t>(windows, static_cast<int64_t>(bases.size()) / window));
  if (windows < 1) return std::cerr << "sequence shorter than one window\n", 1;
  std::vector<dw::IdTensor> inputs;
  for (int w = 0; w < windows; ++w) {
    std::string_view piece(bases.data() + w * window, window);
    const auto& t = **tokenizer;
    dw::IdTensor ids;
    ids.data = t.prefix_ids();
    t.EncodeIds(piece, &ids.data);
    ids.data.insert(ids.data.end(), t.suffix_ids().begin(), t.suffix_ids().end());
    ids.shape = {1, static_cast<int64_t>(ids.data.size())};
    inputs.push_back(std::move(ids));
  }

  const dw::Precision precisions[] = {dw::Precision::kFp32, dw::Precision::kBf16,
                                      dw::Precision::kInt8};
  std::vector<std::shared_ptr<dw::Model>> models;
  for (auto p : precisions) {
    auto model = dw::LoadTorchScriptModel(manifest->WeightsPath(), p, manifest->id);
    if (!model.ok()) {
      std::cerr << dw::PrecisionName(p) << ": " << model.status().message() << "\n";
      models.push_back(nullptr);
      continue;
    }
    models.push_back(*model);
    if (!save_dir.empty() && p != dw::Precision::kFp32) {
      torch::jit::Module module = torch::jit::load(manifest->WeightsPath());
      module.eval();
      auto applied = dw::ApplyReducedPrecision(&module, p, dw::DetectPrecisionSupport(), "");
      if (applied.ok()) module.save(save_dir + "/model." + dw::PrecisionName(p) + ".pt");
    }
  }

  std::vector<std::vector<float>> scores(models.size());
  std::vector<std::vector<double>> seconds(models.size());
  for (int round = -1; round < rounds; ++round) {  // round -1 warms up and records the scores
    for (size_t m = 0; m < models.size(); ++m) {
      if (!models[m]) continue;
      auto started = std::chrono::steady_clock::now();
      for (const auto& input : inputs) {
        auto out = models[m]->Forward({input});
        if (!out.ok()) return std::cerr << out.status().message() << "\n", 1;
        if (round < 0) {
          scores[m].insert(scores[m].end(), (*out)[0].data.begin(), (*out)[0].data.end());
        }
      }
      if (round >= 0) {
        seconds[m].push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      }
    }
  }
  std::printf("package %s: %d windows of %lld bp, %zu scores, %d threads, %d paired rounds\n",
              manifest->id.c_str(), windows, static_cast<long long>(window), scores[0].size(),
              threads, rounds);
  std::printf("%-6s %12s %10s %10s %8s\n", "prec", "max_abs_diff", "spearman", "median_ms",
              "speedup");
  for (size_t m = 0; m < models.size(); ++m) {
    if (!models[m]) continue;
    float max_diff = 0;
    for (size_t i = 0; i < scores[m].size() && i < scores[0].size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(scores[m][i] - scores[0][i]));
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("%-6s %12.6f %10.6f %10.1f %8.2f\n", dw::PrecisionName(precisions[m]), max_diff,
                Spearman(scores[0], scores[m]), median(seconds[m]) * 1000,
                median(seconds[0]) / median(seconds[m]));
  }
  return 0;
}
