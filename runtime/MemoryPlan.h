//===- MemoryPlan.h - buffer reuse for a Plan's intermediates -------------===//
//
// Kernel outputs that live only inside one run of a Plan (not returned, not
// read by an ATen call that could keep an alias of them) share one arena:
// each gets an offset, and buffers whose lifetimes do not overlap reuse the
// same bytes. Plain C++: no LibTorch, no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_MEMORYPLAN_H
#define TGC_RUNTIME_MEMORYPLAN_H

#include "runtime/Plan.h"

#include <cstdint>
#include <vector>

namespace tgc {

/// Bytes spanned by a strided buffer of `s`'s layout (0 when empty).
int64_t spanBytes(const TensorSpec &s);

struct MemoryPlan {
  /// Byte offset of each value in the arena, or -1 when it is allocated on
  /// its own (inputs, outputs, results of ATen calls, buffers an ATen call
  /// might alias).
  std::vector<int64_t> offset;
  int64_t arenaBytes = 0;    ///< the arena one run allocates
  int64_t peakLiveBytes = 0; ///< most intermediate bytes alive at one step
  int64_t unsharedBytes = 0; ///< what the arena's buffers need without reuse
  /// Per step: the values it uses last (never inputs or outputs), which
  /// the executor releases once the step has run.
  std::vector<std::vector<int>> releaseAfter;
  /// Per value: whether a step reads it or the plan returns it.
  std::vector<bool> read;
};

/// How the executor runs one extern step, as far as memory is concerned.
struct ExternMemory {
  enum Kind : int8_t {
    Fresh,     ///< returns new tensors and keeps no alias of its arguments
    MayAlias,  ///< may return or keep an alias of a tensor argument
    /// A view the executor makes itself (an alias of value `base`, no ATen
    /// call): its results' uses are uses of `base`'s buffer, so that buffer
    /// may sit in the arena as long as no alias leaves the run.
    ResolvedView,
    /// Writes its first output into an arena buffer through an out= form.
    IntoArena,
  } kind = Fresh;
  int base = -1; ///< ResolvedView: the value its results alias
};

/// Plans the arena over the extern steps' `externs` kinds (one per
/// Plan::externs entry; missing ones are Fresh). Offsets are 64-byte
/// aligned; two buffers share bytes only when one's last use (or its
/// aliases' last use) comes before the other's first write. Liveness is
/// computed here once, for the arena and for releaseAfter.
MemoryPlan planMemory(const Plan &plan, const std::vector<ExternMemory> &externs);

} // namespace tgc

#endif // TGC_RUNTIME_MEMORYPLAN_H
