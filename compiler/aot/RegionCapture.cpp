//===- RegionCapture.cpp - tracing one region's TorchScript nodes ---------===//
#include "compiler/aot/RegionCapture.h"

#include "compiler/capture/Tracer.h"
#include "runtime/Backend.h"

#include <ATen/ops/scalar_tensor.h>
#include <torch/csrc/jit/ir/constants.h>

#include <unordered_map>

namespace tgc {

using namespace torch::jit;

namespace {

void packList(Node *n, Stack &stack) {
  c10::impl::GenericList list(n->output()->type()->expectRef<c10::ListType>().getElementType());
  for (c10::IValue &v : stack)
    list.push_back(std::move(v));
  stack = {c10::IValue(std::move(list))};
}

void unpackList(Node *n, Stack &stack) {
  c10::List<c10::IValue> list = stack.at(0).toList();
  TORCH_CHECK(list.size() == n->outputs().size(), "tgc-aot: a list of ", list.size(),
              " values unpacked into ", n->outputs().size());
  stack.assign(list.begin(), list.end());
}

/// prim::NumToTensor as at::scalar_to_tensor computes it (a 0-d tensor of
/// the number's own type), but dispatched, so a tracer sees the factory.
void numberToTensor(Stack &stack) {
  c10::Scalar s = stack.at(0).toScalar();
  stack = {c10::IValue(at::scalar_tensor(s, at::TensorOptions().dtype(s.type())))};
}

/// Runs a region's nodes one by one on `inputs` (tracers or real tensors);
/// `at` tracks the node running, so a failure can be pinned on it.
std::vector<c10::IValue> runNodes(const Region &r, const std::vector<at::Tensor> &inputs,
                                  size_t &at) {
  std::unordered_map<Value *, c10::IValue> env;
  for (size_t i = 0; i < inputs.size(); ++i)
    env[r.inputs[i]] = inputs[i];
  auto valueOf = [&](Value *v) -> c10::IValue {
    auto it = env.find(v);
    if (it != env.end())
      return it->second;
    std::optional<c10::IValue> constant = toIValue(v);
    TORCH_CHECK(constant, "tgc-aot: internal error: region ", r.id, " reads %",
                v->debugName(), ", neither an input nor a constant");
    return *constant;
  };
  for (at = 0; at < r.nodes.size(); ++at) {
    Node *n = r.nodes[at];
    Stack stack;
    for (Value *in : n->inputs())
      stack.push_back(valueOf(in));
    // The interpreter runs list packing itself; these have no operator.
    if (n->kind() == prim::ListConstruct)
      packList(n, stack);
    else if (n->kind() == prim::ListUnpack)
      unpackList(n, stack);
    else if (n->kind() == prim::NumToTensor)
      // scalar_to_tensor, but through the dispatcher: a traced 0-d tensor
      // whose value capture knows, not a real one lifted as a graph input.
      numberToTensor(stack);
    else
      n->getOperation()(stack);
    TORCH_CHECK(stack.size() == n->outputs().size(), "tgc-aot: internal error: ",
                n->kind().toQualString(), " left ", stack.size(), " values for ",
                n->outputs().size(), " outputs");
    for (size_t o = 0; o < stack.size(); ++o)
      env[n->output(o)] = std::move(stack[o]);
  }
  std::vector<c10::IValue> outs;
  for (Value *v : r.outputs)
    outs.push_back(env.at(v));
  return outs;
}

std::string firstLine(const std::string &s) { return s.substr(0, s.find('\n')); }

} // namespace

void CaptureTable::capture(const Region &r, const std::vector<at::Tensor> &inputs,
                           CapturedRegion &out) {
  TraceContext ctx("cpu"); // no runner: a graph break throws
  // Known values here derive from graph constants and the package's static
  // shapes, which the segment guard checks: their reads need no guard.
  ctx.knownValuesAreFixed(true);
  size_t at = 0;
  std::string why;
  try {
    TraceGuard guard(ctx);
    std::vector<at::Tensor> tracers = ctx.makeInputs(inputs);
    // Tensor constants are region inputs (the package keeps them once);
    // capture knows their values (a divisor in size arithmetic, say).
    for (size_t i = 0; i < inputs.size(); ++i)
      if (r.inputs[i]->node()->kind() == prim::Constant)
        ctx.know(tracers[i], inputs[i]);
    std::vector<c10::IValue> outs = runNodes(r, tracers, at);
    std::vector<at::Tensor> tensors;
    for (const c10::IValue &v : outs)
      tensors.push_back(v.toTensor());
    ctx.finish(tensors);
  } catch (const GraphBreak &b) {
    why = b.reason + " (the tracer stopped at " + b.op + ")";
  } catch (const c10::Error &e) {
    why = "capture fails: " + firstLine(e.what_without_backtrace());
  }
  if (why.empty() && !ctx.lifted().empty())
    why = "it reads a tensor that is neither an input nor a constant";
  if (why.empty()) {
    out.state = CapturedRegion::Captured;
    out.segment = ctx.segment();
    return;
  }
  out.state = CapturedRegion::Failed;
  out.reason = why;
  if (at < r.nodes.size())
    breaks_[r.numbers[at]] = why;
}

bool CaptureTable::guard(int64_t id, const std::vector<at::Tensor> &inputs) {
  const CapturedRegion &c = captured_[id];
  if (c.state == CapturedRegion::NotReached)
    return true;
  if (c.state == CapturedRegion::Failed || inputs.size() != c.segment.inputs.size())
    return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!cpuBackend().fits(inputs[i], c.segment.values[c.segment.inputs[i]]))
      return false;
  return true;
}

std::vector<at::Tensor> CaptureTable::run(int64_t id, const std::vector<at::Tensor> &inputs) {
  const Region &r = regions_.at(id);
  CapturedRegion &c = captured_[id];
  if (c.state == CapturedRegion::NotReached)
    capture(r, inputs, c);
  size_t at = 0;
  std::vector<at::Tensor> outs;
  for (const c10::IValue &v : runNodes(r, inputs, at))
    outs.push_back(v.toTensor());
  return outs;
}

} // namespace tgc
