//===- Plan.cpp - printing of Plans ---------------------------------------===//
#include "runtime/Plan.h"

#include <sstream>

namespace tgc {

const char *dtypeName(DType t) {
  static const char *names[] = {"bool", "u8",  "i8",   "i16", "i32",
                                "i64",  "f16", "bf16", "f32", "f64"};
  return names[static_cast<int>(t)];
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

std::string guardText(const TensorSpec &s) {
  std::string t = std::string(dtypeName(s.dtype)) + "[";
  for (size_t i = 0; i < s.sizes.size(); ++i)
    t += (i ? "," : "") + std::to_string(s.sizes[i]);
  t += "] strides [";
  for (size_t i = 0; i < s.strides.size(); ++i)
    t += (i ? "," : "") + std::to_string(s.strides[i]);
  return t + "]";
}

void retargetDeviceArgs(std::vector<ArgValue> &args, const std::string &device) {
  auto type = [](const std::string &d) { return d.substr(0, d.find(':')); };
  for (ArgValue &a : args)
    if (a.kind == ArgValue::Device && type(a.s) != type(device))
      a.s = device;
}

static void printSpec(std::ostream &os, const TensorSpec &s) {
  os << dtypeName(s.dtype) << "[";
  for (size_t i = 0; i < s.sizes.size(); ++i)
    os << (i ? "," : "") << s.sizes[i];
  os << "]";
}

std::string Plan::stepStr(size_t s) const {
  std::ostringstream os;
  const Step &st = steps[s];
  if (st.kind == Step::Kernel) {
    const KernelStep &k = kernels[st.index];
    os << "kernel " << k.name << " (";
    for (size_t i = 0; i < k.inputs.size(); ++i)
      os << (i ? ", " : "") << "%" << k.inputs[i];
    os << ") -> ";
    for (size_t i = 0; i < k.outputs.size(); ++i) {
      os << (i ? ", " : "") << "%" << k.outputs[i] << ":";
      printSpec(os, values[k.outputs[i]]);
    }
    if (isCuda())
      os << " <<<" << k.grid << ", " << k.block << ">>>";
  } else {
    const ExternStep &e = externs[st.index];
    os << "extern " << e.op << (e.overload.empty() ? "" : ".") << e.overload << " -> ";
    for (size_t i = 0; i < e.outputs.size(); ++i) {
      os << (i ? ", " : "") << "%" << e.outputs[i];
      if (e.outputs[i] < 0)
        continue;
      os << ":";
      printSpec(os, values[e.outputs[i]]);
    }
  }
  return os.str();
}

std::string Plan::str() const {
  std::ostringstream os;
  os << "plan on " << device << ": " << inputs.size() << " inputs, "
     << kernels.size() << " kernels, " << externs.size() << " extern calls\n";
  for (size_t s = 0; s < steps.size(); ++s)
    os << "  " << stepStr(s) << "\n";
  os << "  return";
  for (int o : outputs)
    os << " %" << o;
  os << "\n";
  return os.str();
}

} // namespace tgc
