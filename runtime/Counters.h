//===- Counters.h - process-wide counters behind tgc::stats() -------------===//
#ifndef TGC_RUNTIME_COUNTERS_H
#define TGC_RUNTIME_COUNTERS_H

#include <atomic>
#include <cstdint>

namespace tgc {

struct Counters {
  std::atomic<int64_t> graphsCompiled{0};
  std::atomic<int64_t> kernelsCompiled{0};
  std::atomic<int64_t> graphBreaks{0};
  std::atomic<int64_t> recompiles{0};
  std::atomic<int64_t> cacheHitsMemory{0};
  std::atomic<int64_t> cacheHitsDisk{0};
  std::atomic<int64_t> eagerFallbacks{0};
  std::atomic<int64_t> kernelLaunches{0};
  std::atomic<int64_t> externCalls{0}; ///< ATen calls that compute
  std::atomic<int64_t> viewCalls{0};   ///< ATen view calls (metadata only)
  std::atomic<int64_t> arenaBytes{0};    ///< arena of the graph loaded last
  std::atomic<int64_t> unsharedBytes{0}; ///< the same buffers without reuse
  std::atomic<int64_t> captures{0}; ///< times user code ran under the tracer
  std::atomic<int64_t> pipelinesRun{0}; ///< MLIR pipelines run (graph-layer misses)
  std::atomic<int64_t> trainingGraphs{0};
  std::atomic<int64_t> savedBytes{0};  ///< of the training graph built last
  std::atomic<int64_t> recomputedOps{0}; ///< of the training graph built last
};

/// The one instance, shared by the compiler and the runtime.
Counters &counters();

} // namespace tgc

#endif // TGC_RUNTIME_COUNTERS_H
