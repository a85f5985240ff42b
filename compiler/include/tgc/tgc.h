//===- tgc.h - the public API of tgc --------------------------------------===//
//
//   auto f = tgc::compile([](torch::Tensor a, torch::Tensor b) {
//     return (a * b + 1).relu();
//   });
//   torch::Tensor y = f(a, b);   // same signature as the callable
//
// The first call with new input shapes, strides, dtypes or devices captures
// the ATen ops the callable runs, compiles them into fused kernels and keeps
// the result; later calls with the same properties replay it. Anything tgc
// cannot compile runs eagerly, with the reason logged (TGC_LOG=fallbacks).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TGC_H
#define TGC_TGC_H

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include "tgc/Package.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace torch::jit {
struct Module;
} // namespace torch::jit

namespace tgc {

/// How hard to compile. ReduceOverhead (CUDA graphs) is not implemented
/// yet: it warns once per process and compiles as Default. MaxAutotune
/// measures instead of guessing where tgc has several implementations of
/// an op: each frozen convolution and linear layer (with its fused
/// epilogue) runs as ATen's call, oneDNN's fused one or MKL's packed GEMM,
/// whichever was fastest on inputs of its real shapes and matched ATen's
/// result (compiler/autotune/Autotune.h; TGC_LOG=autotune lists every
/// candidate's time, TGC_AUTOTUNE_BUDGET_S bounds a graph's tuning). The
/// choices persist in the autotune layer of the cache, so a later process
/// benchmarks nothing (Stats::autotune_benchmarks). The mode is part of the
/// graph cache key, so graphs compiled in one mode are never served to
/// another.
enum class Mode { Default, ReduceOverhead, MaxAutotune };
/// Where compiled graphs run. Auto follows the inputs' device; Cpu or Cuda
/// asks for that device, and a call whose tensors are elsewhere throws
/// std::invalid_argument naming the input and its device.
enum class Backend { Auto, Cpu, Cuda };

struct Options {
  Mode mode = Mode::Default;
  bool fullgraph = false;  ///< a capture failure or graph break throws instead of running eagerly
  /// Shapes are specialized (false). true is not implemented yet (issue 19):
  /// tgc::compile throws std::invalid_argument rather than silently specialize.
  bool dynamic = false;
  int recompile_limit = 8; ///< guard misses compiled before running eagerly
  /// This callable's cache directory (graphs and kernels it compiles are
  /// read from and written there) instead of TGC_CACHE_DIR's; the
  /// environment is left untouched.
  std::string cache_dir;
  Backend backend = Backend::Auto;
  /// Freezing of inference graphs (like Inductor's `freezing`): when no
  /// gradient is needed (grad mode off, or no input or weight requires
  /// grad), the weights a callable reads are constants of its graph:
  /// ops on weights alone run once at compile time, eval-mode batch norms
  /// fold into the convolution before them, and 2-d convolutions become
  /// oneDNN calls with prepacked weights and their activation fused. An
  /// in-place update of a weight (optimizer step, load_state_dict) is seen
  /// by its version counter and the next call freezes again. false keeps
  /// weights as plain graph inputs.
  bool freeze = true;
  /// Attention spelled out in inference graphs (q k^T, scale, masks,
  /// softmax, times v) becomes one ATen scaled-dot-product-attention call
  /// (on the CPU its flash kernel). false keeps the ops as traced.
  bool fuse_attention = true;
};

/// Process-wide counters since start (or the last reset()): one int64_t
/// field per line of <tgc/Counters.def>, which says what each counts
/// (graphs_compiled, kernel_launches, eager_fallbacks, ...).
struct Stats {
#define TGC_COUNTER(name, member, doc) int64_t name = 0;
#include "tgc/Counters.def"
  /// One "name value  (what it counts)" line per counter.
  std::string str() const;
};

Stats stats();
/// Drops every in-memory cache of compiled graphs and zeroes every counter
/// (and every TGC_PROFILE time).
void reset();

/// With TGC_PROFILE=1 set when graphs are compiled or loaded: where their
/// replays spend the time. Per graph, its runs, the time per run in its
/// steps and between them (the executor's own overhead), the steps ranked
/// by time (host wall time; on CUDA, the launches) and the time per op.
/// Printed to stderr at exit as well. Empty when nothing ran profiled.
std::string profile();

/// One graph break: why capture stopped, at which op, ending which graph.
struct GraphBreakInfo {
  std::string reason;
  std::string op;
  int segment = 0;
};

/// What tgc::explain found: how a callable splits into graphs and why.
struct Explanation {
  int graph_count = 0;
  int graph_break_count = 0;
  std::vector<GraphBreakInfo> breaks;
  std::vector<std::vector<std::string>> graph_ops; ///< ATen ops of each graph
  std::string str() const;
};

namespace detail {

/// The type-erased core of a compiled callable.
class Engine {
public:
  using Body = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor> &)>;
  explicit Engine(Options options);
  ~Engine();
  /// Runs the callable on `inputs`: replays a compiled graph when one
  /// matches (tensor properties plus `scalarKey`), else captures `body`.
  std::vector<at::Tensor> call(const std::vector<at::Tensor> &inputs,
                               const std::string &scalarKey, const Body &body);
  /// Forgets every compiled specialization (tgc::reset()).
  void clear();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Captures `body` once on `inputs` (running it, breaks included) and
/// reports the graphs and breaks; used by tgc::explain.
Explanation explainCall(const std::vector<at::Tensor> &inputs,
                        const std::function<std::vector<at::Tensor>(
                            const std::vector<at::Tensor> &)> &body);

/// Folds `v` into the hash `h` (splitmix64's finalizer): module state keys.
inline uint64_t mixKey(uint64_t h, uint64_t v) {
  uint64_t z = h + 0x9e3779b97f4a7c15ull + v;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T> struct IsTensor : std::is_same<std::decay_t<T>, at::Tensor> {};

template <class T> void appendScalar(std::string &key, const T &v) {
  using D = std::decay_t<T>;
  static_assert(std::is_arithmetic_v<D>,
                "tgc::compile: arguments must be tensors, integers, floating-point "
                "numbers or booleans");
  key += std::to_string(v);
  key += ';';
}

template <class Tuple, size_t... J>
constexpr size_t countTensors(std::index_sequence<J...>) {
  return (size_t(0) + ... + size_t(IsTensor<std::tuple_element_t<J, Tuple>>::value));
}

/// Argument I of `args`, or its replacement when it is a tensor.
template <size_t I, class Tuple>
decltype(auto) substitute(Tuple &args, const std::vector<at::Tensor> &tensors) {
  using A = std::tuple_element_t<I, Tuple>;
  if constexpr (IsTensor<A>::value) {
    return static_cast<const at::Tensor &>(
        tensors[countTensors<Tuple>(std::make_index_sequence<I>{})]);
  } else {
    return std::get<I>(args);
  }
}

template <class R> std::vector<at::Tensor> flattenResult(R &&r) {
  using D = std::decay_t<R>;
  if constexpr (std::is_same_v<D, at::Tensor>) {
    return {std::forward<R>(r)};
  } else if constexpr (std::is_same_v<D, std::vector<at::Tensor>>) {
    return std::forward<R>(r);
  } else {
    return std::apply(
        [](auto &&...t) { return std::vector<at::Tensor>{at::Tensor(t)...}; },
        std::forward<R>(r));
  }
}

template <class R, size_t... I>
R tupleFrom(std::vector<at::Tensor> &out, std::index_sequence<I...>) {
  return R{std::move(out.at(I))...};
}

template <class R> R unflattenResult(std::vector<at::Tensor> &&out) {
  if constexpr (std::is_same_v<R, at::Tensor>) {
    return std::move(out.at(0));
  } else if constexpr (std::is_same_v<R, std::vector<at::Tensor>>) {
    return std::move(out);
  } else {
    return tupleFrom<R>(out, std::make_index_sequence<std::tuple_size_v<R>>{});
  }
}

/// Splits call arguments into tensors (graph inputs) and a key of the
/// scalar arguments (specialized by value).
template <class... Args>
void collectArgs(std::vector<at::Tensor> &tensors, std::string &key, const Args &...args) {
  auto collect = [&](const auto &a) {
    if constexpr (IsTensor<decltype(a)>::value)
      tensors.push_back(a);
    else
      appendScalar(key, a);
  };
  (collect(args), ...);
}

/// Calls `fn` with `args`, tensor arguments replaced by `tensors` in order,
/// and flattens the result.
template <class F, class Tuple, size_t... I>
std::vector<at::Tensor> invokeWith(F &fn, Tuple &args, const std::vector<at::Tensor> &tensors,
                                   std::index_sequence<I...>) {
  return flattenResult(fn(substitute<I>(args, tensors)...));
}

} // namespace detail

/// A compiled callable; call it like the original.
template <class F> class Compiled {
public:
  Compiled(F fn, Options options)
      : fn_(std::make_shared<F>(std::move(fn))),
        engine_(std::make_shared<detail::Engine>(std::move(options))) {}

  template <class... Args> auto operator()(Args &&...args) const {
    using R = std::decay_t<std::invoke_result_t<F &, Args...>>;
    std::vector<at::Tensor> tensors;
    std::string key;
    detail::collectArgs(tensors, key, args...);
    auto argTuple = std::forward_as_tuple(args...);
    auto body = [&](const std::vector<at::Tensor> &replaced) {
      return detail::invokeWith(*fn_, argTuple, replaced,
                                std::make_index_sequence<sizeof...(Args)>{});
    };
    return detail::unflattenResult<R>(engine_->call(tensors, key, body));
  }

private:
  std::shared_ptr<F> fn_;
  std::shared_ptr<detail::Engine> engine_;
};

namespace detail {
template <class T, class = void> struct IsModuleHolder : std::false_type {};
template <class T>
struct IsModuleHolder<T, std::void_t<typename T::ContainedType>> : std::true_type {};
template <class T>
constexpr bool isCallable =
    !IsModuleHolder<std::decay_t<T>>::value &&
    !std::is_same_v<std::decay_t<T>, torch::jit::Module>;
} // namespace detail

/// A compiled torch::nn::Module: `net->forward(x)` like the original. The
/// module's parameters and buffers are graph inputs (captured by reference,
/// never copied), so optimizer updates and in-place buffer updates stay
/// visible; replacing a parameter tensor is a guard miss.
template <class Holder> class CompiledModule {
public:
  CompiledModule(Holder module, Options options)
      : module_(std::move(module)),
        engine_(std::make_shared<detail::Engine>(std::move(options))) {}

  const CompiledModule *operator->() const { return this; }

  template <class... Args> auto forward(Args &&...args) const {
    using R = std::decay_t<decltype(module_.ptr()->forward(args...))>;
    std::vector<at::Tensor> tensors;
    std::string key = moduleKey();
    detail::collectArgs(tensors, key, args...);
    auto argTuple = std::forward_as_tuple(args...);
    auto body = [&](const std::vector<at::Tensor> &replaced) {
      return callWith(argTuple, replaced, std::make_index_sequence<sizeof...(Args)>{});
    };
    return detail::unflattenResult<R>(engine_->call(tensors, key, body));
  }

  const Holder &module() const { return module_; }

private:
  /// Identity and training flag of every parameter and buffer, hashed
  /// (no string per tensor on every call).
  std::string moduleKey() const {
    uint64_t h = detail::mixKey(0, module_->is_training() ? 1 : 2);
    for (const auto &p : module_->parameters())
      h = detail::mixKey(h, reinterpret_cast<uintptr_t>(p.unsafeGetTensorImpl()));
    h = detail::mixKey(h, 3);
    for (const auto &b : module_->buffers())
      h = detail::mixKey(h, reinterpret_cast<uintptr_t>(b.unsafeGetTensorImpl()));
    return "m" + std::to_string(h) + "|";
  }
  template <class Tuple, size_t... I>
  std::vector<at::Tensor> callWith(Tuple &args, const std::vector<at::Tensor> &tensors,
                                   std::index_sequence<I...>) const {
    return detail::flattenResult(module_.ptr()->forward(detail::substitute<I>(args, tensors)...));
  }

  Holder module_;
  std::shared_ptr<detail::Engine> engine_;
};

/// A compiled TorchScript module: its interpreter's ATen calls are captured
/// like a C++ callable's. Inputs are tensors and int/double/bool/string
/// values; outputs a tensor or a tuple or list of tensors. The module's
/// state is part of the guard: replacing a parameter or buffer (`setattr`),
/// `train()` / `eval()` and changing a bool/int/float attribute capture
/// again; in-place updates of weights are guarded by their versions.
class CompiledScriptModule {
public:
  CompiledScriptModule(const torch::jit::Module &module, Options options);
  ~CompiledScriptModule();
  CompiledScriptModule(CompiledScriptModule &&) noexcept;
  const CompiledScriptModule *operator->() const { return this; }
  c10::IValue forward(std::vector<c10::IValue> inputs) const;

private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/// Compiles a C++ callable taking tensors (and int/double/bool arguments,
/// specialized by value) and returning a tensor, a std::tuple of tensors or
/// a std::vector of tensors.
template <class F, std::enable_if_t<detail::isCallable<F>, int> = 0>
Compiled<std::decay_t<F>> compile(F &&fn, Options options = {}) {
  return Compiled<std::decay_t<F>>(std::forward<F>(fn), std::move(options));
}

/// Compiles a torch::nn::Module held by a ModuleHolder (e.g. `Mlp model;`).
template <class Holder,
          std::enable_if_t<detail::IsModuleHolder<std::decay_t<Holder>>::value, int> = 0>
CompiledModule<std::decay_t<Holder>> compile(Holder &&module, Options options = {}) {
  return CompiledModule<std::decay_t<Holder>>(std::forward<Holder>(module), std::move(options));
}

/// Runs `fn(args...)` once under capture and explains it: the graphs it
/// splits into, the ops of each, and every graph break with its reason.
template <class F, class... Args> Explanation explain(F &&fn, Args &&...args) {
  std::vector<at::Tensor> tensors;
  auto collect = [&](auto &&a) {
    if constexpr (detail::IsTensor<decltype(a)>::value)
      tensors.push_back(a);
  };
  (collect(args), ...);
  auto argTuple = std::forward_as_tuple(args...);
  auto body = [&](const std::vector<at::Tensor> &replaced) {
    return detail::invokeWith(fn, argTuple, replaced,
                              std::make_index_sequence<sizeof...(Args)>{});
  };
  return detail::explainCall(tensors, body);
}

/// Compiles a TorchScript module (torch::jit::load or torch.jit.script).
CompiledScriptModule compile(const torch::jit::Module &module, Options options = {});

} // namespace tgc

#endif // TGC_TGC_H
