// A fresh process for the malloc policy's tests (tests/unit/worker/host_memory_test.cpp). glibc
// gives a new thread an arena from those the process already has, so what the policy does for a
// forward pass on a new thread shows only in a process nothing else has allocated in.
//
//   dnaserve-host-memory-probe MAX_ARENAS BLOCK_MIB BLOCKS
//
// Applies the policy with MAX_ARENAS, then on a new thread (as a gRPC handler) runs two passes:
// BLOCKS blocks of BLOCK_MIB written, then all freed. Prints one line:
//   applied=0|1 environment=0|1 cold_faults=N warm_faults=N pages=N
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "worker/models/host_memory.h"

namespace {

long ThreadMinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// Minor faults of one pass on the calling thread; -1 when an allocation failed.
long RunPass(size_t block_bytes, int blocks) {
  const long before = ThreadMinorFaults();
  std::vector<void*> live;
  for (int i = 0; i < blocks; ++i) {
    void* block = std::malloc(block_bytes);
    if (block == nullptr) return -1;
    std::memset(block, i + 1, block_bytes);
    live.push_back(block);
  }
  for (void* block : live) std::free(block);
  return ThreadMinorFaults() - before;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MAX_ARENAS BLOCK_MIB BLOCKS\n", argv[0]);
    return 2;
  }
  const int max_arenas = std::atoi(argv[1]);
  const size_t block_bytes = static_cast<size_t>(std::atoi(argv[2])) << 20;
  const int blocks = std::atoi(argv[3]);
  if (block_bytes == 0 || blocks <= 0) {
    std::fprintf(stderr, "BLOCK_MIB and BLOCKS must be positive\n");
    return 2;
  }
  const dnaserve::worker::MallocPolicy policy =
      dnaserve::worker::ApplyForwardPassMallocPolicy(max_arenas);
  long cold = 0, warm = 0;
  std::thread([&] {
    cold = RunPass(block_bytes, blocks);
    warm = RunPass(block_bytes, blocks);
  }).join();
  if (cold < 0 || warm < 0) {
    std::fprintf(stderr, "allocation failed\n");
    return 1;
  }
  std::printf("applied=%d environment=%d cold_faults=%ld warm_faults=%ld pages=%ld\n",
              policy.applied ? 1 : 0, policy.left_to_environment ? 1 : 0, cold, warm,
              static_cast<long>(block_bytes / 4096) * blocks);
  return 0;
}
