// How the worker's C library allocator treats the host memory of forward passes. LibTorch's CPU
// tensors come from malloc; the policy below keeps a pass's freed activations in the process for
// the next pass instead of handing them back to the kernel after every pass (the .cc says why).
#pragma once

#include <cstddef>

namespace dnaserve::worker {

// What ApplyForwardPassMallocPolicy set; applied = false when the C library is not glibc, when
// the environment already tunes malloc (left_to_environment), or when glibc refused a setting
// (the worker then runs with those settings or the library's defaults).
struct MallocPolicy {
  bool applied = false;
  bool left_to_environment = false;  // MALLOC_ARENA_MAX, MALLOC_*_THRESHOLD_ or GLIBC_TUNABLES
  size_t mmap_threshold_bytes = 0;  // blocks at least this large are mmapped, the rest pooled
  size_t trim_threshold_bytes = 0;  // free memory an arena keeps before returning the excess
  int max_arenas = 0;               // malloc arenas (each keeps its own free memory)
};

// Freed memory kept per arena: above one forward pass's activations (tens of MiB for the CNN
// packages' batches), so back-to-back passes reuse pages that are already mapped.
inline constexpr size_t kForwardTrimThresholdBytes = size_t{128} << 20;
// glibc's largest allowed mmap threshold on 64-bit (half its 64 MiB arena heap).
inline constexpr size_t kForwardMmapThresholdBytes = size_t{32} << 20;
// One arena, the main one, for every thread. A thread's own arena grows in heaps of at most
// 64 MiB, and glibc unmaps such a heap as soon as it is wholly free, whatever the trim threshold:
// a pass that needs more than one heap on a gRPC handler thread re-faulted the rest on every
// request (annotation-human at 100 kb: up to 33,000 faults, BENCHMARKS.md table I). The main
// arena grows in one piece and keeps what the trim threshold says. Threads sharing its lock
// cost nothing measurable, also with concurrent requests (table I).
inline constexpr int kForwardMaxArenas = 1;

// Sets the policy for the whole process; call once at startup, before threads allocate. An
// operator's own malloc settings in the environment win: then nothing is changed.
// max_arenas caps glibc's arenas (default 8 per CPU), which bounds the memory they keep to
// max_arenas x kForwardTrimThresholdBytes; <= 0 leaves glibc's default.
MallocPolicy ApplyForwardPassMallocPolicy(int max_arenas);

}  // namespace dnaserve::worker
