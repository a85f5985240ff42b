//===- TrainingGraph.h - a compiled forward/backward pair as autograd -----===//
//
// A training graph is two compiled plans: the forward (primals in, the
// user's outputs and the values saved for the backward out) and the
// backward (saved values and output gradients in, input gradients out).
// apply() runs the forward inside a torch::autograd::Function, so that
// loss.backward() runs the compiled backward.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TRAININGGRAPH_H
#define TGC_RUNTIME_TRAININGGRAPH_H

#include "runtime/Executor.h"

#include <memory>
#include <vector>

namespace tgc {

struct TrainingGraph {
  /// Where each input of the backward plan comes from.
  struct Source {
    enum Kind { Primal, ForwardOutput, Tangent } kind;
    int index;
  };
  std::shared_ptr<CompiledGraph> forward, backward;
  size_t numPrimals = 0;
  size_t numOutputs = 0; ///< the user's outputs, first among the forward's
  std::vector<Source> backwardInputs;
  std::vector<int> tangentOf; ///< tangent k: gradient of user output tangentOf[k]
  std::vector<int> gradOf;    ///< backward output k: gradient of primal gradOf[k]
  int64_t savedBytes = 0;     ///< saved activations beyond inputs and outputs
};

/// Runs `g`'s forward on `primals` as one autograd node: the outputs that
/// are differentiable get a grad_fn whose backward runs `g`'s backward.
/// Double backward (create_graph=true) raises.
std::vector<at::Tensor> applyTraining(const std::shared_ptr<const TrainingGraph> &g,
                                      const std::vector<at::Tensor> &primals);

} // namespace tgc

#endif // TGC_RUNTIME_TRAININGGRAPH_H
