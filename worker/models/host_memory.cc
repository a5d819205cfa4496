#include "worker/models/host_memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dnaserve::worker {

// Why: a forward pass allocates its activations (LibTorch CPU tensors, from malloc) and frees
// them all when it returns. On the worker's gRPC handler threads the freed blocks merge into the
// top of the thread's malloc arena, and glibc then returns everything above its trim threshold
// to the kernel (madvise(MADV_DONTNEED)). That threshold adapts to 2 x the largest mmapped block
// freed so far, never more than 64 MiB; it sat at 6 MiB in the chromatin worker, whose 16-window
// batches use about 40 MiB. So every pass gave its memory back and the next one took ~10,000
// minor page faults to map it again (zeroed pages, cgroup accounting): chromatin-human over gRPC
// took 30 ms per 10 kb request against a 9.6 ms bare forward, expression-human (which runs the
// chromatin network) 15.8 ms against 4.9 ms; BENCHMARKS.md has the measurements. Fixed
// thresholds keep up to kForwardTrimThresholdBytes of free memory in each arena and serve blocks
// up to 32 MiB from it, so a warm pass maps nothing new. Larger blocks are still mmapped per
// pass, as before. Host malloc only: a CUDA build's device memory has its own caching allocator.
MallocPolicy ApplyForwardPassMallocPolicy(int max_arenas) {
  MallocPolicy policy;
#if defined(__GLIBC__)
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
