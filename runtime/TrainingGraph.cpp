//===- TrainingGraph.cpp - the autograd Function of a training graph ------===//
#include "runtime/TrainingGraph.h"

#include "runtime/Counters.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/autograd/custom_function.h>

namespace tgc {

namespace {

/// Keeps the training graph alive in the autograd context.
struct GraphHolder : torch::CustomClassHolder {
  explicit GraphHolder(std::shared_ptr<const TrainingGraph> g) : g(std::move(g)) {}
  std::shared_ptr<const TrainingGraph> g;
};

/// The gradient of an output as the backward plan expects it: zeros when
/// autograd passes none, and in the traced (contiguous) layout.
at::Tensor asTangent(const at::Tensor &grad, const TensorSpec &spec, const at::Device &device) {
  if (!grad.defined())
    return at::zeros(spec.sizes, at::TensorOptions().dtype(toScalarType(spec.dtype)).device(device));
  if (fitsSpec(grad, spec, device.type()))
    return grad;
  at::Tensor t = at::empty_strided(spec.sizes, spec.strides, grad.options().dtype(toScalarType(spec.dtype)));
  t.copy_(grad);
  return t;
}

struct CompiledFunction : torch::autograd::Function<CompiledFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext *ctx,
                                                at::TensorList primals,
                                                std::shared_ptr<const TrainingGraph> g) {
    std::vector<at::Tensor> outs = g->forward->run(primals.vec());
    std::vector<at::Tensor> saved;
    for (const TrainingLayout::Source &s : g->layout.backwardInputs) {
      if (s.kind == TrainingLayout::Source::Primal)
        saved.push_back(primals[s.index]);
      else if (s.kind == TrainingLayout::Source::ForwardOutput)
        saved.push_back(outs[s.index]);
    }
    ctx->save_for_backward(saved);
    ctx->saved_data["graph"] = c10::IValue::make_capsule(c10::make_intrusive<GraphHolder>(g));
    outs.resize(g->layout.numOutputs);
    return outs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(!at::GradMode::is_enabled(),
                "tgc: double backward (create_graph=true) through a compiled graph is not "
                "supported; compute higher derivatives with the callable run eagerly");
    auto holder = ctx->saved_data["graph"].toCapsule();
    std::shared_ptr<const TrainingGraph> g = static_cast<GraphHolder *>(holder.get())->g;
    // Raises autograd's own error after the graph was freed (no retain_graph).
    torch::autograd::variable_list saved = ctx->get_saved_variables();
    const Plan &plan = g->backward->plan();
    // Autograd passes at least one gradient; missing ones are zeros beside it.
    at::Device device = at::kCPU;
    for (const at::Tensor &t : grads)
      if (t.defined()) {
        device = t.device();
        break;
      }
    std::vector<at::Tensor> inputs;
    size_t next = 0;
    for (size_t i = 0; i < g->layout.backwardInputs.size(); ++i) {
      const TrainingLayout::Source &s = g->layout.backwardInputs[i];
      if (s.kind == TrainingLayout::Source::Tangent)
        inputs.push_back(asTangent(grads[g->layout.tangentOf[s.index]],
                                   plan.values[plan.inputs[i]], device));
      else
        inputs.push_back(saved[next++]);
    }
    std::vector<at::Tensor> outs = g->backward->run(inputs);
    torch::autograd::variable_list result(g->layout.numPrimals + 1); // + the graph argument
    for (size_t k = 0; k < outs.size(); ++k)
      result[g->layout.gradOf[k]] = outs[k];
    return result;
  }
};

} // namespace

std::vector<at::Tensor> applyTraining(const std::shared_ptr<const TrainingGraph> &g,
                                      const std::vector<at::Tensor> &primals) {
  return CompiledFunction::apply(at::TensorList(primals), g);
}

} // namespace tgc
