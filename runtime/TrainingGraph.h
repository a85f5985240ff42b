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
  std::shared_ptr<CompiledGraph> forward, backward;
  TrainingLayout layout; ///< how the two plans connect
};

/// Runs `g`'s forward on `primals` as one autograd node: the outputs that
/// are differentiable get a grad_fn whose backward runs `g`'s backward.
/// Double backward (create_graph=true) raises.
std::vector<at::Tensor> applyTraining(const std::shared_ptr<const TrainingGraph> &g,
                                      const std::vector<at::Tensor> &primals);

} // namespace tgc

#endif // TGC_RUNTIME_TRAININGGRAPH_H
