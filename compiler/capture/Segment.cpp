//===- Segment.cpp - printing of captured segments ------------------------===//
#include "compiler/capture/Segment.h"

#include "compiler/ops/OpRegistry.h"

#include <iomanip>
#include <sstream>

namespace tgc {

std::string Segment::str() const {
  std::ostringstream os;
  os << "segment on " << device << " (";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << (i ? ", " : "") << "%" << inputs[i];
  os << ")\n";
  for (const SegmentNode &n : nodes) {
    os << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i)
      os << (i ? ", " : "") << "%" << n.outputs[i];
    os << " = " << n.op << (n.overload.empty() ? "" : ".") << n.overload << "(";
    for (size_t i = 0; i < n.args.size(); ++i) {
      const ArgValue &a = n.args[i];
      os << (i ? ", " : "");
      switch (a.kind) {
      case ArgValue::Tensor: os << "%" << a.tensors[0]; break;
      case ArgValue::Int: os << a.i; break;
      case ArgValue::Double: os << a.d; break;
      case ArgValue::Bool: os << (a.b ? "true" : "false"); break;
      case ArgValue::ScalarTensor:
        if (a.isFloat) os << a.d; else os << a.i;
        break;
      case ArgValue::None: os << "None"; break;
      default: os << "<" << int(a.kind) << ">"; break;
      }
    }
    os << ")\n";
  }
  os << "  return";
  for (int o : outputs)
    os << " %" << o;
  os << "\n";
  return os.str();
}

std::string Segment::structuralKey() const {
  std::ostringstream os;
  os << std::setprecision(17) << str();
  for (const TensorSpec &v : values) {
    os << dtypeName(v.dtype) << '[';
    for (int64_t d : v.sizes)
      os << d << ',';
    os << "]{";
    for (int64_t d : v.strides)
      os << d << ',';
    os << '}';
  }
  // str() abbreviates some arguments; add their full payloads.
  for (const SegmentNode &n : nodes)
    for (const ArgValue &a : n.args) {
      os << '|' << int(a.kind) << ':' << a.s << ':' << a.i << ':' << a.d << ':' << a.b;
      for (int64_t i : a.ints)
        os << ',' << i;
      for (double d : a.doubles)
        os << ',' << d;
      for (int t : a.tensors)
        os << ',' << t;
    }
  return os.str();
}

namespace {

std::string deviceType(const std::string &d) { return d.substr(0, d.find(':')); }

/// ATen's CPU SDPA (what capture on the CPU records below the composite
/// scaled_dot_product_attention) as the composite, which picks each
/// device's kernel, when nothing reads its logsumexp.
bool portableAttention(SegmentNode &n, const std::vector<SegmentNode> &nodes,
                       const std::vector<int> &outputs) {
  if (n.op != "aten::_scaled_dot_product_flash_attention_for_cpu" || n.outputs.size() != 2 ||
      n.args.size() != 7)
    return false;
  int lse = n.outputs[1];
  if (lse >= 0) {
    for (int o : outputs)
      if (o == lse)
        return false;
    for (const SegmentNode &m : nodes)
      for (const ArgValue &a : m.args)
        for (int t : a.tensors)
          if (t == lse)
            return false;
  }
  // (q, k, v, dropout_p, is_causal, *, attn_mask, scale) ->
  // (q, k, v, attn_mask, dropout_p, is_causal, *, scale, enable_gqa)
  ArgValue gqa;
  gqa.kind = ArgValue::Bool;
  gqa.b = false;
  std::vector<ArgValue> args = {n.args[0], n.args[1], n.args[2], n.args[5],
                                n.args[3], n.args[4], n.args[6], gqa};
  n.op = "aten::scaled_dot_product_attention";
  n.overload = "";
  n.args = std::move(args);
  n.outputs = {n.outputs[0]};
  return true;
}

} // namespace

Segment Segment::on(const std::string &target) const {
  Segment seg = *this;
  seg.device = target;
  const bool toCuda = deviceType(target) == "cuda";
  const bool typeChanges = deviceType(target) != deviceType(device);
  for (SegmentNode &n : seg.nodes) {
    retargetDeviceArgs(n.args, target);
    if (!typeChanges)
      continue;
    if (toCuda)
      portableAttention(n, seg.nodes, seg.outputs);
    // Results whose dtype ATen picks per device (layer norm's statistics).
    uint8_t floats = ops::floatOnCudaOf(n.op, n.overload);
    if (!floats || n.args.empty() || n.args[0].kind != ArgValue::Tensor)
      continue;
    DType in = seg.values[n.args[0].tensors[0]].dtype;
    if (in != DType::Float16 && in != DType::BFloat16)
      continue;
    for (size_t k = 0; k < n.outputs.size() && k < 8; ++k)
      if ((floats >> k & 1) && n.outputs[k] >= 0)
        seg.values[n.outputs[k]].dtype = toCuda ? DType::Float32 : in;
  }
  return seg;
}

Plan Segment::toExternPlan() const {
  Plan plan;
  plan.device = device;
  plan.values = values;
  plan.inputs = inputs;
  plan.outputs = outputs;
  for (const SegmentNode &n : nodes) {
    plan.steps.push_back({Step::Extern, (int)plan.externs.size()});
    plan.externs.push_back({n.op, n.overload, n.args, n.outputs});
  }
  return plan;
}

} // namespace tgc
