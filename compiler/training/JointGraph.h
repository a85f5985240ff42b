//===- JointGraph.h - forward + backward of a segment, from autograd ------===//
//
// A forward segment is replayed through the dispatcher on tracer tensors
// with autograd on; torch::autograd::grad then runs PyTorch's own derivative
// formulas on those tracers, so the backward ops are recorded too. The
// result is one joint segment: primals and tangents in, forward outputs and
// gradients out. No derivative is written by tgc.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_TRAINING_JOINTGRAPH_H
#define TGC_COMPILER_TRAINING_JOINTGRAPH_H

#include "compiler/capture/Segment.h"

#include <string>
#include <vector>

namespace tgc {

struct JointGraph {
  /// Inputs: the forward's inputs (primals), then one tangent per
  /// differentiable output. Outputs: the forward's outputs, then one
  /// gradient per entry of `gradOf`.
  Segment joint;
  size_t numPrimals = 0;
  size_t forwardNodes = 0;      ///< the first nodes are the forward's
  std::vector<int> tangentOf;   ///< tangent k belongs to forward output tangentOf[k]
  std::vector<int> gradOf;      ///< gradient k is d(outputs)/d(primal gradOf[k])
};

/// Builds the joint graph of `forward`, whose inputs `requiresGrad` marks.
/// Returns false with `error` set when autograd cannot run on it (an op
/// without a derivative, say); then nothing is recorded.
bool buildJointGraph(const Segment &forward, const std::vector<bool> &requiresGrad,
                     JointGraph &out, std::string &error);

} // namespace tgc

#endif // TGC_COMPILER_TRAINING_JOINTGRAPH_H
