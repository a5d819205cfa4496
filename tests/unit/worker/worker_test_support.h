// Shared pieces of the worker tests: the generated model packages and a scriptable fake model.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "tests/support/predict_requests.h"
#include "tests/support/service_launcher.h"
#include "tests/support/test_env.h"
#include "tests/support/test_files.h"
#include "worker/manifest/manifest.h"
#include "worker/models/model.h"

namespace dnaserve::worker::testing {

using dnaserve::testing::GeneratedModelsDir;  // tests/support/service_launcher.h

// A fake model: `fn` maps the inputs to the outputs; calls are counted.
class FakeModel : public Model {
 public:
  using Fn = std::function<StatusOr<std::vector<FloatTensor>>(const std::vector<IdTensor>&)>;
  explicit FakeModel(Fn fn) : fn_(std::move(fn)) {}
  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override {
    ++calls;
    batches.push_back(inputs.empty() ? 0 : inputs[0].shape[0]);
    return fn_(inputs);
  }
  std::atomic<int> calls{0};
  std::vector<int64_t> batches;  // batch size of each call

 private:
  Fn fn_;
};

// A manifest like the generated package of `task` (no files behind it).
ModelManifest TestManifest(Task task);

using dnaserve::testing::RandomBases;  // tests/support/predict_requests.h
using dnaserve::testing::RequestFor;

// Removes a test's scratch directory unless DNASERVE_KEEP_TEST_FILES is set.
void RemoveScratch(const std::string& dir);

using dnaserve::testing::ReadFile;  // tests/support/test_files.h
using dnaserve::testing::WriteFile;

}  // namespace dnaserve::worker::testing
