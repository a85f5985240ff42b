//===- Partition.h - joint graph to forward and backward segments ---------===//
//
// A min-cut over the forward part of a joint graph decides what the
// forward saves for the backward: every value the backward reads is either
// saved (costing its bytes) or recomputed in the backward from saved values,
// and only cheap ops (pointwise, views, factories) may be recomputed. The
// cheapest cut saves the fewest bytes; primal inputs cost nothing to save
// (the caller holds them), and neither do forward outputs.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_TRAINING_PARTITION_H
#define TGC_COMPILER_TRAINING_PARTITION_H

#include "compiler/training/JointGraph.h"

#include <string>
#include <vector>

namespace tgc {

struct TrainingPartition {
  /// Inputs: the primals. Outputs: the user's outputs, then saved values.
  Segment forward;
  /// Inputs: `layout.backwardInputs`. Outputs: the gradients (`layout.gradOf`).
  Segment backward;
  TrainingLayout layout;
  int recomputedNodes = 0; ///< forward ops the backward computes again
};

/// Splits `g` into a forward and a backward segment.
TrainingPartition partitionJoint(const JointGraph &g);

/// Whether the backward may compute node `n` again instead of loading its
/// saved result: the op registry's recompute class, never for a write.
bool isRecomputable(const SegmentNode &n);

} // namespace tgc

#endif // TGC_COMPILER_TRAINING_PARTITION_H
