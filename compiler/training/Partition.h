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

/// Where an input of the backward segment comes from.
struct BackwardSource {
  enum Kind { Primal, ForwardOutput, Tangent } kind;
  int index; ///< primal number, forward-segment output number, or tangent number
};

struct TrainingPartition {
  /// Inputs: the primals. Outputs: the user's outputs, then saved values.
  Segment forward;
  /// Inputs: `backwardInputs`. Outputs: the gradients (see `gradOf`).
  Segment backward;
  size_t numOutputs = 0; ///< user outputs at the front of forward.outputs
  std::vector<BackwardSource> backwardInputs;
  std::vector<int> tangentOf; ///< tangent k is the gradient of user output tangentOf[k]
  std::vector<int> gradOf;    ///< backward output k is the gradient of primal gradOf[k]
  int64_t savedBytes = 0;     ///< bytes saved beyond inputs and outputs
  int recomputedNodes = 0;    ///< forward ops the backward computes again
};

/// Splits `g` into a forward and a backward segment.
TrainingPartition partitionJoint(const JointGraph &g);

/// Whether the backward may compute op `qualified` ("aten::mul.Tensor")
/// again instead of loading its saved result.
bool isRecomputable(const std::string &op, bool mutates);

} // namespace tgc

#endif // TGC_COMPILER_TRAINING_PARTITION_H
