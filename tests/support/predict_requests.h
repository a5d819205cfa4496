// Worker requests for tests and benchmarks: one builder, so that what the tests check and what
// the benchmarks time are the same requests.
#pragma once

#include <cstdint>
#include <string>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::testing {

// `n` random bases (A/C/G/T) from a fixed seed.
std::string RandomBases(int64_t n, unsigned seed);

// The bases a request for `task` really scores at the nominal `length` (expression: its
// kExpressionWindowBp window, whatever the length).
int64_t ScoredBases(Task task, int64_t length);

// A worker request for `task` with the gateway's default options over ScoredBases(task, length)
// random bases named "chrT" (expression: a description as well).
worker::v1::PredictRequest RequestFor(Task task, int64_t length, unsigned seed = 7);

}  // namespace dnaserve::testing
