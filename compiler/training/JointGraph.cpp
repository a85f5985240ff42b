//===- JointGraph.cpp - replay a segment under autograd, record backward --===//
#include "compiler/training/JointGraph.h"

#include "compiler/capture/Tracer.h"
#include "runtime/Executor.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <torch/csrc/autograd/autograd.h>

#include <memory>

namespace tgc {

namespace {

at::Tensor metaOf(const TensorSpec &s) {
  return at::empty_strided(s.sizes, s.strides,
                           at::TensorOptions().dtype(toScalarType(s.dtype)).device(at::kMeta));
}

/// Calls node `n` through the dispatcher (so its Autograd kernel records
/// the derivative) on the tensors of `values`, and stores its results.
void replay(const SegmentNode &n, std::vector<at::Tensor> &values) {
  c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow(n.op.c_str(), n.overload.c_str());
  const auto &args = op.schema().arguments();
  TORCH_CHECK(n.args.size() <= args.size(), "tgc: ", n.op, " has more arguments than its schema");
  torch::jit::Stack stack;
  {
    UntracedScope real; // wrapped numbers are real CPU scalars, not traced ops
    for (size_t i = 0; i < n.args.size(); ++i)
      stack.push_back(argToIValue(n.args[i], args[i], values));
  }
  op.callBoxed(&stack);
  size_t k = 0;
  for (const c10::IValue &r : stack) {
    if (r.isTensor()) {
      TORCH_CHECK(k < n.outputs.size(), "tgc: ", n.op, " returned more tensors on replay");
      int id = n.outputs[k++];
      if (id >= 0)
        values[id] = r.toTensor();
    } else if (r.isTensorList()) {
      for (const at::Tensor &t : r.toTensorVector()) {
        TORCH_CHECK(k < n.outputs.size(), "tgc: ", n.op, " returned more tensors on replay");
        values[n.outputs[k++]] = t;
      }
    }
  }
  TORCH_CHECK(k == n.outputs.size(), "tgc: ", n.op, " returned fewer tensors on replay");
}

} // namespace

bool buildJointGraph(const Segment &forward, const std::vector<bool> &requiresGrad,
                     JointGraph &out, std::string &error) {
  TORCH_CHECK(requiresGrad.size() == forward.inputs.size(), "tgc: one flag per input");
  std::vector<at::Tensor> metas;
  for (int id : forward.inputs)
    metas.push_back(metaOf(forward.values[id]));
  TraceContext ctx(forward.device);
  // Tracers say "cpu" whatever the segment's device: autograd's engine then
  // runs the backward on this thread (a CUDA tensor's backward would run on
  // the engine's device thread, which does not see this capture). The ops
  // replayed are the segment's own, already specialized for its device.
  ctx.setTracerDevice("cpu");
  try {
    at::AutoGradMode grad(true);
    auto guard = std::make_unique<TraceGuard>(ctx);
    std::vector<at::Tensor> values(forward.values.size());
    std::vector<at::Tensor> primals = ctx.makeInputs(metas);
    std::vector<at::Tensor> wrt;
    for (size_t i = 0; i < primals.size(); ++i) {
      if (requiresGrad[i]) {
        primals[i].set_requires_grad(true);
        wrt.push_back(primals[i]);
        out.gradOf.push_back(i);
      }
      values[forward.inputs[i]] = primals[i];
    }
    for (const SegmentNode &n : forward.nodes)
      replay(n, values);
    out.forwardNodes = ctx.segment().nodes.size();
    std::vector<at::Tensor> outputs, differentiable, tangentMetas;
    for (size_t k = 0; k < forward.outputs.size(); ++k) {
      const at::Tensor &t = values[forward.outputs[k]];
      outputs.push_back(t);
      if (t.requires_grad()) {
        differentiable.push_back(t);
        out.tangentOf.push_back(k);
        tangentMetas.push_back(t); // its sizes and dtype; made contiguous below
      }
    }
    guard.reset(); // factories below are not part of the graph
    for (at::Tensor &m : tangentMetas)
      m = at::empty(m.sizes(), at::TensorOptions().dtype(m.scalar_type()).device(at::kMeta));
    guard = std::make_unique<TraceGuard>(ctx);
    if (differentiable.empty()) {
      error = "no output of the graph requires grad";
      return false;
    }
    std::vector<at::Tensor> tangents = ctx.addInputs(tangentMetas);
    std::vector<at::Tensor> grads =
        torch::autograd::grad(differentiable, wrt, tangents, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    std::vector<int> kept;
    for (size_t k = 0; k < grads.size(); ++k)
      if (grads[k].defined()) {
        outputs.push_back(grads[k]);
        kept.push_back(out.gradOf[k]);
      }
    out.gradOf = kept;
    ctx.finish(outputs);
    if (!ctx.lifted().empty()) {
      error = "the backward read a tensor from outside the graph";
      return false;
    }
  } catch (const GraphBreak &b) {
    error = std::string("the backward cannot be traced: ") + b.what();
    return false;
  } catch (const c10::Error &e) {
    error = std::string("autograd failed on the captured graph: ") + e.what_without_backtrace();
    return false;
  }
  out.joint = ctx.segment();
  out.numPrimals = forward.inputs.size();
  return true;
}

} // namespace tgc
