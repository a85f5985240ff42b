//===- Executor.h - runs a Plan on ATen tensors ---------------------------===//
#ifndef TGC_RUNTIME_EXECUTOR_H
#define TGC_RUNTIME_EXECUTOR_H

#include "runtime/HostCompiler.h"
#include "runtime/MemoryPlan.h"
#include "runtime/Plan.h"
#include "runtime/Profile.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace tgc {

at::ScalarType toScalarType(DType t);
/// Fails (returns false) for dtypes tgc does not model (complex, fp8, ...).
bool fromScalarType(at::ScalarType s, DType &out);

/// The guard of a compiled graph's input, the one check the JIT (lifted
/// tensors), AOT capture, packages and training share: `t` is a tensor on
/// a `device` device with `spec`'s dtype and sizes whose strides match
/// wherever a dimension has more than one element (the others never index
/// anything). DeviceBackend::fits supplies the backend's device.
bool fitsSpec(const at::Tensor &t, const TensorSpec &spec, c10::DeviceType device);

/// `t`'s sizes, strides and dtype (contiguous strides for layouts without
/// strides, such as oneDNN's blocked weights, which only ATen calls read).
TensorSpec specOf(const at::Tensor &t);

/// `t` in `spec`'s strides: itself when they match (or nothing is indexed),
/// else a copy laid out so, for code compiled for that layout.
at::Tensor withSpecStrides(const at::Tensor &t, const TensorSpec &spec);

/// The IValue of argument `a` of a recorded ATen call, tensors taken from
/// `values` by value id (shared by the executor and training's replay).
c10::IValue argToIValue(const ArgValue &a, const c10::Argument &schemaArg,
                        const std::vector<at::Tensor> &values);

/// The tensors a boxed call left on `stack`, Tensor[] results flattened
/// (split, unbind), appended to `out`; false when an entry is not a tensor.
bool stackTensors(const std::vector<c10::IValue> &stack, std::vector<at::Tensor> &out);

/// Launches kernel `index` of a CUDA plan on `device`. `args` holds one
/// pointer per kernel parameter, as cuLaunchKernel takes them: to each
/// buffer's address (inputs, then outputs), then to the index-error
/// record's when the step has checks.
using KernelLauncher =
    std::function<void(size_t index, const KernelStep &k, const at::Device &device, void **args)>;

/// A Plan with its kernels compiled and loaded, ready to run many times.
class CompiledGraph {
public:
  /// Compiles (or loads from the cache) every kernel of `plan` through its
  /// device's DeviceBackend (runtime/Backend.h). Returns null with `error` set
  /// when a kernel cannot be built or an extern op is unknown to this
  /// LibTorch.
  static std::shared_ptr<CompiledGraph> load(Plan plan, std::string &error);
  /// The same with the plan's CPU kernels already built into `object` (an
  /// AOT package's shared object): nothing is compiled.
  static std::shared_ptr<CompiledGraph> loadWith(Plan plan, std::shared_ptr<SharedObject> object,
                                                 std::string &error);
  /// A CUDA plan whose kernels `launcher` runs: the CUDA driver's (see
  /// CudaModules.h) or, in tests, the CPU emulator's. Buffers live on the
  /// inputs' device; extern steps run through ATen there.
  static std::shared_ptr<CompiledGraph> loadWithLauncher(Plan plan, KernelLauncher launcher,
                                                         std::string &error);

  /// Runs the plan. `inputs` must match the plan's input specs (the caller
  /// checks guards); outputs have exactly the specs' layouts.
  std::vector<at::Tensor> run(const std::vector<at::Tensor> &inputs) const;

  const Plan &plan() const { return plan_; }
  /// Kernels compiled by this load (0 when all came from the disk cache).
  int64_t kernelsCompiled() const { return kernelsCompiled_; }
  /// Where the plan's intermediates live: one arena per run, reused slots.
  /// On the CPU the arena of a finished run is kept for the next one (its
  /// pages stay mapped: no page faults per call), up to 1 GiB of kept
  /// arenas over all graphs (TGC_ARENA_CACHE_BYTES); concurrent runs each
  /// allocate their own.
  const MemoryPlan &memoryPlan() const { return memory_; }

private:
  using CpuKernel = void (*)(void *const *);
  explicit CompiledGraph(Plan plan) : plan_(std::move(plan)) {}

public:
  ~CompiledGraph();

private:
  /// How one extern step runs, decided once when the plan is loaded.
  struct ExternPrep {
    enum Kind : int8_t {
      Boxed, ///< through the dispatcher's boxed call, arguments prebuilt
      View,  ///< an alias of `base` the executor makes (no ATen call)
      Mm,
      Addmm,
      Bmm, ///< typed calls, out= into the arena where it has a slot
      /// Unboxed calls of the library ops freezing and the attention
      /// rewrite make (no out= form: they return a fresh tensor).
      ConvPointwise,
      ConvBinary,
      LinearPointwise,
      MklLinear,
      SdpaCpu,
      MaxPool2d,
      Convolution, ///< aten::convolution (small 1x1 convolutions freezing leaves to ATen)
      AvgPool2d,
      /// A view (aten::view, _unsafe_view, reshape) the graph returns: a
      /// typed ATen call, so that the result is the dispatcher's view.
      ReturnedView,
      ReturnedUnsafeView,
      ReturnedReshape,
    } kind = Boxed;
    /// Boxed: the arguments as IValues, constants converted once; tensor
    /// arguments are filled in per call from (stack slot, value id), tensor
    /// lists rebuilt per call.
    std::vector<c10::IValue> stack;
    std::vector<std::pair<uint32_t, int>> tensorArgs;
    std::vector<uint32_t> listArgs;
    /// View: the aliased value and each result's storage offset relative
    /// to its own.
    int base = -1;
    std::vector<int64_t> offsetDelta;
    /// Typed: tensor operands by value id, then beta and alpha (Addmm).
    std::vector<int> operands;
    at::Scalar beta = 1, alpha = 1;
    /// Unboxed: operands as above (-1: an absent optional tensor), then
    /// padding, stride, dilation (max pooling: kernel, stride, padding,
    /// dilation; average pooling: kernel, stride, padding;
    /// aten::convolution: stride, padding, dilation, output
    /// padding); groups (or MKL's batch size); the attr
    /// strings; SDPA's dropout, causal flag and scale.
    std::vector<int64_t> ints[4];
    int64_t n = 0;
    std::string attr, unaryAttr;
    std::optional<std::string> algorithm;
    bool hasUnary = false, causal = false, ceilMode = false, transposed = false;
    bool countIncludePad = true;
    std::optional<int64_t> divisor;
    double dropout = 0;
    std::optional<double> scale;
  };

public:
  /// The vectors one run reuses (Executor.cpp keeps one per thread and
  /// nesting depth).
  struct Scratch;

private:
  /// Resolves extern ops, decides how each runs (ExternPrep) and plans
  /// memory (arena slots and, from the same liveness, when each
  /// intermediate is released).
  bool prepare(std::string &error);
  /// A view step's layouts, computed on Meta tensors of the plan's specs:
  /// false when the op does not return plain aliases of one argument at
  /// offsets relative to its own (then it stays a dispatcher call).
  bool resolveView(size_t index, ExternPrep &prep) const;
  bool prepareTyped(size_t index, ExternPrep &prep) const;
  bool prepareUnboxed(size_t index, ExternPrep &prep) const;
  void checkIndexError(const KernelStep &k, const int64_t error[2]) const;
  void runKernel(const KernelStep &k, std::vector<at::Tensor> &values,
                 const at::Device &device, const at::Tensor &arena) const;
  void runExtern(size_t index, Scratch &scratch, const at::Tensor &arena) const;
  bool runView(size_t index, std::vector<at::Tensor> &values) const;
  void runTyped(size_t index, std::vector<at::Tensor> &values, const at::Tensor &arena) const;
  void runUnboxed(size_t index, std::vector<at::Tensor> &values) const;
  /// Binds result `i` of extern `index` to its value, laid out as the plan
  /// says (later kernels were compiled for that layout).
  void bindResult(size_t index, size_t i, at::Tensor t, std::vector<at::Tensor> &values) const;

  Plan plan_;
  std::shared_ptr<SharedObject> object_;
  std::vector<CpuKernel> cpuKernels_;
  KernelLauncher launcher_; ///< CUDA plans
  std::vector<c10::OperatorHandle> ops_;
  std::vector<bool> isView_; ///< the op returns an alias of an input (no work)
  std::vector<ExternPrep> prep_;
  /// An arena for this run: the spare one on the CPU, else a new one.
  at::Tensor takeArena(const at::Device &device) const;
  /// Keeps `arena` as the spare when nothing else holds it.
  void giveBackArena(at::Tensor arena) const;

  int64_t kernelsCompiled_ = 0;
  MemoryPlan memory_;
  mutable std::mutex arenaMutex_;
  mutable at::Tensor spareArena_;
  /// TGC_PROFILE: per-step times (null when not profiling).
  std::shared_ptr<StepProfile> profile_;
};

} // namespace tgc

#endif // TGC_RUNTIME_EXECUTOR_H
