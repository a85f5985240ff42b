//===- Segment.cpp - printing of captured segments ------------------------===//
#include "compiler/capture/Segment.h"

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

} // namespace tgc
