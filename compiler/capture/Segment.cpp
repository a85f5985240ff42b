//===- Segment.cpp - printing of captured segments ------------------------===//
#include "compiler/capture/Segment.h"

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

Segment Segment::on(const std::string &target) const {
  Segment seg = *this;
  seg.device = target;
  for (SegmentNode &n : seg.nodes)
    retargetDeviceArgs(n.args, target);
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
