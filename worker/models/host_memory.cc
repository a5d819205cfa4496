#include "worker/models/host_memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace dnaserve::worker {
namespace {

// glibc reads these at startup; an operator who set them chose a policy of their own.
bool EnvironmentTunesMalloc() {
  for (const char* name : {"MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                           "MALLOC_TOP_PAD_"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr;
}

}  // namespace

// Why: a forward pass allocates its activations (LibTorch CPU tensors, from malloc) and frees
// them all when it returns. When the freed blocks merge into the top of the malloc arena, glibc
// returns everything above its trim threshold to the kernel (madvise(MADV_DONTNEED) in a
// thread's arena, brk in the main one). With glibc's defaults that threshold follows the largest
// mmapped block freed so far (2x it, at most 64 MiB): 6 MiB in a chromatin worker, whose
// 16-window batches use about 40-45 MiB. Then every pass gave its memory back and the next mapped it
// again: up to 12,000 minor page faults (zeroed pages) and 20 ms of CPU per 10 kb chromatin
// request, which made chromatin-human and expression-human about 3x their bare forward over gRPC
// (BENCHMARKS.md, tables B and I). Whether it happened depended on what else lay on the heap, so it came
// and went between runs and processes. Fixed thresholds keep up to kForwardTrimThresholdBytes of
// free memory in each arena and serve blocks up to 32 MiB from it, so a warm pass maps nothing
// new; larger blocks are still mmapped per pass, as before. The worker caps the arenas at one
// (kForwardMaxArenas, host_memory.h says why), which also bounds what they keep. Host malloc
// only: a CUDA build's device memory goes through its own caching allocator.
MallocPolicy ApplyForwardPassMallocPolicy(int max_arenas) {
  MallocPolicy policy;
#if defined(__GLIBC__)
  if (EnvironmentTunesMalloc()) {
    policy.left_to_environment = true;
    return policy;
  }
  // Setting either threshold turns off glibc's adaptive thresholds, so both are set.
  bool ok = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kForwardMmapThresholdBytes)) == 1;
  ok = mallopt(M_TRIM_THRESHOLD, static_cast<int>(kForwardTrimThresholdBytes)) == 1 && ok;
  if (max_arenas > 0) ok = mallopt(M_ARENA_MAX, max_arenas) == 1 && ok;
  policy.applied = ok;
  policy.mmap_threshold_bytes = kForwardMmapThresholdBytes;
  policy.trim_threshold_bytes = kForwardTrimThresholdBytes;
  policy.max_arenas = max_arenas > 0 ? max_arenas : 0;
#else
  (void)max_arenas;
#endif
  return policy;
}

}  // namespace dnaserve::worker
