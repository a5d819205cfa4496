// The worker's malloc policy (worker/models/host_memory.h): memory freed by one forward pass
// stays mapped for the next. Counted in page faults and allocator bytes, not timed.
#include "worker/models/host_memory.h"

#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"  // RunCommand

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dnaserve::worker {
namespace {

// Sets an environment variable for one scope and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

#if defined(__GLIBC__)

// A stand-in for a forward pass of the CNN packages: 100 MiB of activations in 5 MiB blocks,
// written (so mapped), then all freed. That is more than glibc's adaptive trim threshold can ever
// keep (64 MiB), so without the policy each pass hands most of it back to the kernel.
constexpr size_t kBlockBytes = size_t{5} << 20;
constexpr int kBlocks = 20;
constexpr size_t kPassBytes = kBlockBytes * kBlocks;
constexpr long kPageBytes = 4096;

struct PassFigures {
  long minor_faults = 0;   // on the pass's own thread
  size_t freed_kept = 0;   // bytes the allocator still holds as free once the pass freed its blocks
};

long ThreadMinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

PassFigures RunPass() {
  PassFigures figures;
  const long faults_before = ThreadMinorFaults();
  std::vector<void*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    void* block = std::malloc(kBlockBytes);
    CATCH_REQUIRE(block != nullptr);
    std::memset(block, i + 1, kBlockBytes);
    blocks.push_back(block);
  }
  const size_t free_while_live = mallinfo2().fordblks;
  for (void* block : blocks) std::free(block);
  figures.minor_faults = ThreadMinorFaults() - faults_before;
  const size_t free_after = mallinfo2().fordblks;
  figures.freed_kept = free_after > free_while_live ? free_after - free_while_live : 0;
  return figures;
}

CATCH_TEST_CASE("with the malloc policy a warm pass maps no new pages", "[memory]") {
  const MallocPolicy policy = ApplyForwardPassMallocPolicy(/*max_arenas=*/0);
  if (policy.left_to_environment) {
    CATCH_WARN("skipped: this process's environment sets malloc tunables of its own");
    return;
  }
  CATCH_REQUIRE(policy.applied);
  CATCH_REQUIRE(policy.trim_threshold_bytes > kPassBytes);
  CATCH_REQUIRE(policy.mmap_threshold_bytes > kBlockBytes);

  // On a thread of its own, as forward passes run on gRPC handler threads (own malloc arena).
  PassFigures cold, warm;
  std::thread([&] {
    cold = RunPass();
    warm = RunPass();
  }).join();

  const long pass_pages = static_cast<long>(kPassBytes) / kPageBytes;
  CATCH_INFO("cold pass " << cold.minor_faults << " faults, warm pass " << warm.minor_faults
                          << " faults, " << pass_pages << " pages per pass, warm pass kept "
                          << warm.freed_kept << " freed bytes");
  // The freed blocks stay with the allocator (without the policy glibc returns all but at most
  // 64 MiB of them) ...
  CATCH_CHECK(warm.freed_kept >= kPassBytes - kBlockBytes);
  // ... so the warm pass reuses mapped pages: without the policy it faults on most of its pages
  // again (about 25,000 here; 10,000 per 10 kb request in the chromatin worker).
  CATCH_CHECK(warm.minor_faults < pass_pages / 20);
}

// The probe's figures: "applied=1 environment=0 cold_faults=N warm_faults=N pages=N".
struct ProbeFigures {
  bool ran = false;
  bool applied = false;
  bool environment = false;
  long cold_faults = 0;
  long warm_faults = 0;
  long pages = 0;
  std::string output;
};

ProbeFigures RunProbe(int max_arenas, int block_mib, int blocks) {
  ProbeFigures figures;
  const std::string probe = testing::BinaryDir() + "/tests/dnaserve-host-memory-probe";
  if (testing::RunCommand({probe, std::to_string(max_arenas), std::to_string(block_mib),
                           std::to_string(blocks)},
                          &figures.output) != 0) {
    return figures;
  }
  int applied = 0, environment = 0;
  figures.ran = std::sscanf(figures.output.c_str(),
                            "applied=%d environment=%d cold_faults=%ld warm_faults=%ld pages=%ld",
                            &applied, &environment, &figures.cold_faults, &figures.warm_faults,
                            &figures.pages) == 5;
  figures.applied = applied == 1;
  figures.environment = environment == 1;
  return figures;
}

CATCH_TEST_CASE("with the worker's arena count a pass larger than a thread heap maps no new pages",
                "[memory]") {
  // 80 MiB on a new thread of a fresh process: more than one 64 MiB heap of a thread arena, which
  // glibc unmaps once it is wholly free. With the worker's single arena it is kept.
  const ProbeFigures one = RunProbe(kForwardMaxArenas, /*block_mib=*/10, /*blocks=*/8);
  CATCH_INFO("probe: " << one.output);
  CATCH_REQUIRE(one.ran);
  if (one.environment) {
    CATCH_WARN("skipped: this process's environment sets malloc tunables of its own");
    return;
  }
  CATCH_REQUIRE(one.applied);
  // For comparison only (glibc's internals, not asserted): with an arena per CPU the warm pass
  // faulted 5,121 of its 20,480 pages back in on glibc 2.36 (this check then fails).
  const ProbeFigures per_cpu = RunProbe(2, 10, 8);
  CATCH_INFO("with 2 arenas: " << per_cpu.output);
  CATCH_CHECK(one.cold_faults >= one.pages / 2);  // the pass did touch its memory
  CATCH_CHECK(one.warm_faults < one.pages / 20);
}

#endif  // __GLIBC__

CATCH_TEST_CASE("malloc settings in the environment win over the policy",
                "[memory]") {
  // glibc read its environment at startup, so setting a variable now changes only what the
  // policy sees.
  for (const char* name : {"MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}) {
    CATCH_INFO(name);
    const ScopedEnv set(name, std::strcmp(name, "GLIBC_TUNABLES") == 0
                                  ? "glibc.malloc.trim_threshold=1048576"
                                  : "4");
    const MallocPolicy policy = ApplyForwardPassMallocPolicy(/*max_arenas=*/2);
#if defined(__GLIBC__)
    CATCH_CHECK(policy.left_to_environment);
#endif
    CATCH_CHECK_FALSE(policy.applied);
  }
  // Tunables of another part of glibc leave the policy on.
  for (const char* name : {"MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                           "MALLOC_TOP_PAD_"}) {
    if (std::getenv(name) != nullptr) return;  // the environment tunes malloc itself
  }
  const ScopedEnv other("GLIBC_TUNABLES", "glibc.pthread.rseq=0");
  CATCH_CHECK_FALSE(ApplyForwardPassMallocPolicy(/*max_arenas=*/0).left_to_environment);
}

CATCH_TEST_CASE("the malloc policy reports the limits it set", "[memory]") {
  const MallocPolicy policy = ApplyForwardPassMallocPolicy(/*max_arenas=*/3);
#if defined(__GLIBC__)
  if (policy.left_to_environment) {
    CATCH_WARN("skipped: this process's environment sets malloc tunables of its own");
    return;
  }
  CATCH_CHECK(policy.applied);
  CATCH_CHECK(policy.mmap_threshold_bytes == kForwardMmapThresholdBytes);
  CATCH_CHECK(policy.trim_threshold_bytes == kForwardTrimThresholdBytes);
  CATCH_CHECK(policy.max_arenas == 3);
#else
  CATCH_CHECK_FALSE(policy.applied);
#endif
}

}  // namespace
}  // namespace dnaserve::worker
