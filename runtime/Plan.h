//===- Plan.h - the executable form of one compiled graph (plain C++) -----===//
//
// A Plan is what the compiler hands the runtime and what caches and AOT
// packages store: buffers with their layouts, then steps (launch kernel K,
// call ATen op X) over them. This header has no LibTorch and no MLIR types,
// so both halves of tgc can include it.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_PLAN_H
#define TGC_RUNTIME_PLAN_H

#include "runtime/KernelDescriptor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

/// Element types tgc compiles; the order is part of cache keys.
enum class DType : int8_t {
  Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64
};
const char *dtypeName(DType t);

/// Sizes, strides (in elements) and element type of one buffer.
struct TensorSpec {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  DType dtype = DType::Float32;
  int64_t numel() const;
};

/// `f32[2,3] strides [3,1]`: a guarded input as guards name it (the JIT's
/// guard keys and logs, a package's meta.json).
std::string guardText(const TensorSpec &s);

struct ArgValue;
/// Moves the device arguments of recorded ATen calls (factories' `device=`)
/// that name a device of another type than `device` onto `device`: the one
/// retargeting of captured code to another backend (Segment::on, the eager
/// plans of the GPU tests, the emulator's CPU-side extern calls).
void retargetDeviceArgs(std::vector<ArgValue> &args, const std::string &device);

/// One argument of an ATen call, as plain data.
struct ArgValue {
  enum Kind : int8_t {
    None, Bool, Int, Double, String, IntList, DoubleList, Device,
    Tensor,       ///< `tensors[0]` is a value id
    TensorList,   ///< `tensors` are value ids; -1 is None (optional lists)
    ScalarTensor, ///< a wrapped number: `d` or `i` (per `isFloat`) of `dtype`
    BoolList,     ///< `ints` holds 0/1 (bool[3] output masks of backward ops)
  } kind = None;
  bool b = false;
  bool isFloat = false;
  int64_t i = 0;
  double d = 0;
  DType dtype = DType::Float32;
  std::string s; ///< String and Device payloads
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::vector<int> tensors;

  /// Arguments built by passes that write ATen calls.
  // clang-format off
  static ArgValue ofTensor(int id) { ArgValue a; a.kind = Tensor; a.tensors = {id}; return a; }
  static ArgValue ofInt(int64_t v) { ArgValue a; a.kind = Int; a.i = v; return a; }
  static ArgValue ofInts(std::vector<int64_t> v) { ArgValue a; a.kind = IntList; a.ints = std::move(v); return a; }
  static ArgValue ofDouble(double v) { ArgValue a; a.kind = Double; a.d = v; return a; }
  static ArgValue ofBool(bool v) { ArgValue a; a.kind = Bool; a.b = v; return a; }
  static ArgValue ofString(std::string v) { ArgValue a; a.kind = String; a.s = std::move(v); return a; }
  static ArgValue ofDevice(std::string v) { ArgValue a; a.kind = Device; a.s = std::move(v); return a; }
  // clang-format on
};

/// Launch of one generated kernel over buffers `inputs` then `outputs`.
/// A kernel with `checks` also takes an index-error record after them.
/// `block`, `vector`, `grid` and `checks` are copies of the kernel's
/// descriptor (codegen::describeKernel), made by the pipeline's PlanBuilder.
struct KernelStep {
  std::string name;
  std::vector<int> inputs, outputs;
  int64_t numel = 0;
  int64_t block = 256;
  int64_t vector = 1;
  /// CUDA: blocks that give every thread one trip through the kernel's
  /// grid-stride loop (LaunchConfig::grid); a launcher may cap it.
  int64_t grid = 1;
  std::vector<IndexCheck> checks;
};

/// How the two plans of a training graph connect: built by
/// compiler/training/Partition.cpp, run by runtime/TrainingGraph.cpp.
struct TrainingLayout {
  /// Where an input of the backward plan comes from.
  struct Source {
    enum Kind : int8_t { Primal, ForwardOutput, Tangent } kind;
    int index; ///< primal number, forward-plan output number, or tangent number
  };
  size_t numPrimals = 0;
  size_t numOutputs = 0; ///< the user's outputs, first among the forward's
  std::vector<Source> backwardInputs;
  std::vector<int> tangentOf; ///< tangent k: gradient of user output tangentOf[k]
  std::vector<int> gradOf;    ///< backward output k: gradient of primal gradOf[k]
  int64_t savedBytes = 0;     ///< saved activations beyond inputs and outputs
};

/// A call of an ATen operator through the dispatcher.
struct ExternStep {
  std::string op;       ///< "aten::mm"
  std::string overload; ///< "" or "Tensor"
  std::vector<ArgValue> args;
  std::vector<int> outputs;
};

struct Step {
  enum Kind : int8_t { Kernel, Extern } kind;
  int index; ///< into Plan::kernels or Plan::externs
};

struct Plan {
  std::string device = "cpu";      ///< "cpu", or "cuda" (any "cuda:N")
  std::vector<TensorSpec> values;  ///< every buffer the plan touches
  std::vector<int> inputs;         ///< value ids bound to the graph inputs
  std::vector<int> outputs;        ///< value ids returned
  std::vector<Step> steps;
  std::vector<KernelStep> kernels;
  std::vector<ExternStep> externs;
  std::string cpuSource;               ///< one C++ TU with every kernel
  std::vector<std::string> cudaSources; ///< one CUDA TU per kernel

  /// Whether the kernels are CUDA sources (device "cuda" or "cuda:N").
  bool isCuda() const { return device.rfind("cuda", 0) == 0; }

  /// Human-readable listing (TGC_DEBUG_DIR, explain()).
  std::string str() const;
  /// Step `s` as str() lists it: "kernel k3 (%1, %2) -> %5:f32[8,64]" or
  /// "extern aten::mm -> %6:f32[8,8]".
  std::string stepStr(size_t s) const;
};

/// Binary form of a Plan, as the graph cache and AOT packages store it.
std::string serializePlan(const Plan &plan);
/// Parses serializePlan's output; false (with `error`) on malformed input:
/// every count, index and size is checked, nothing is trusted.
bool deserializePlan(const std::string &data, Plan &plan, std::string &error);

} // namespace tgc

#endif // TGC_RUNTIME_PLAN_H
