// End-to-end worker throughput against the bare TorchScript forward, in one process.
//
// For each model package and input length:
//   1. record: the task runner (RunPrediction: tokenise, window, forward, stitch, render) runs
//      once over a RecordingModel, which keeps a copy of every forward call's input tensors;
//   2. end to end: the runner again, timed, over the model stack the worker serves (TorchScript
//      behind the dynamic-batching queue with the worker's default settings) and, for comparison,
//      over the bare TorchScript model without the queue;
//   3. bare: the same model.pt loaded with torch::jit::load runs exactly the recorded tensors, in
//      the recorded batch sizes, timed;
//   4. Python peer: tests/bench/python_peer.py runs the recorded tensors through the same model.pt
//      with Debian's python3-torch.
// Repetitions are interleaved (runner, bare, runner, bare, ...) so drift on a noisy machine hits
// both sides alike; medians are reported, and the ratio of the fastest repetitions beside them.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "common/task.h"
#include "tests/bench/bare_forward.h"
#include "tests/bench/bench_common.h"

namespace dnaserve::bench {

struct RunnerFigures {
  std::string model_id;
  Task task = Task::kPromoter;
  std::string tokenizer;  // TokenizerLabel
  int64_t bases = 0;      // bases scored
  int forward_calls = 0;  // forward passes of one request
  int64_t windows = 0;    // windows_processed of one request
  double load_s = 0;      // torch::jit::load + eval in this process
  double served_s = 0;    // median runner time over the worker's model stack (batching queue)
  double direct_s = 0;    // median runner time straight over TorchScript (no queue)
  double bare_s = 0;      // median bare forward over the recorded tensors
  double python_s = -1;   // median Python forward over the recorded tensors (-1: not run)
  std::string python_error;
  // Time spent inside the model's forward during those runner calls (medians); the rest of a
  // runner call is tokenising, windowing, stitching, rendering and (served) queueing.
  double served_model_s = 0;
  double direct_model_s = 0;
  std::vector<double> served_all, direct_all, bare_all;

  // Runner vs bare: the median over repetitions of bare time / runner time, each pair measured
  // back to back, so that the machine's slow and fast phases cancel out.
  double served_ratio() const { return PairedRatio(bare_all, served_all); }
  double direct_ratio() const { return PairedRatio(bare_all, direct_all); }
  // Best of N: fastest bare / fastest runner. On a machine shared with other work, time slices
  // lost to it only ever add time, so the fastest repetition is the closest to the undisturbed
  // cost of each side.
  double served_best_ratio() const { return BestRatio(bare_all, served_all); }
  // Python throughput relative to the C++ bare forward (1.0 = equal, < 1 = Python slower).
  double python_ratio() const { return python_s > 0 ? bare_s / python_s : 0; }
};

// Writes recorded forward calls for the Python peers: <prefix>.bin (all ids, int64
// little-endian, back to back) and <prefix>.json (model path, threads, repetitions, each call's
// input shapes and offsets in elements). False when the files cannot be written.
bool DumpCalls(const std::string& prefix, const std::string& model_path, int threads, int reps,
               const std::vector<CallInputs>& calls);

// Every (package, length) pair of the settings' model directories; a package that cannot be
// measured is reported in *errors and skipped.
std::vector<RunnerFigures> RunRunnerBench(const BenchSettings& settings,
                                          std::vector<std::string>* errors);

}  // namespace dnaserve::bench
