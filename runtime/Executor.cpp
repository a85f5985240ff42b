//===- Executor.cpp - Plan execution: kernel launches and ATen calls ------===//
#include "runtime/Executor.h"

#include "runtime/ContiguousStrides.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include "runtime/Counters.h"
#include "runtime/Backend.h"
#include "runtime/Log.h"

#include <ATen/ops/empty_strided.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>

namespace tgc {

at::ScalarType toScalarType(DType t) {
  switch (t) {
  case DType::Bool: return at::kBool;
  case DType::UInt8: return at::kByte;
  case DType::Int8: return at::kChar;
  case DType::Int16: return at::kShort;
  case DType::Int32: return at::kInt;
  case DType::Int64: return at::kLong;
  case DType::Float16: return at::kHalf;
  case DType::BFloat16: return at::kBFloat16;
  case DType::Float32: return at::kFloat;
  case DType::Float64: return at::kDouble;
  }
  return at::kFloat;
}

bool fromScalarType(at::ScalarType s, DType &out) {
  switch (s) {
  case at::kBool: out = DType::Bool; return true;
  case at::kByte: out = DType::UInt8; return true;
  case at::kChar: out = DType::Int8; return true;
  case at::kShort: out = DType::Int16; return true;
  case at::kInt: out = DType::Int32; return true;
  case at::kLong: out = DType::Int64; return true;
  case at::kHalf: out = DType::Float16; return true;
  case at::kBFloat16: out = DType::BFloat16; return true;
  case at::kFloat: out = DType::Float32; return true;
  case at::kDouble: out = DType::Float64; return true;
  default: return false;
  }
}

bool fitsSpec(const at::Tensor &t, const TensorSpec &spec, c10::DeviceType device) {
  DType dtype;
  if (!t.defined() || t.device().type() != device || !fromScalarType(t.scalar_type(), dtype) ||
      dtype != spec.dtype || t.sizes() != c10::IntArrayRef(spec.sizes))
    return false;
  for (size_t d = 0; d < spec.sizes.size(); ++d)
    if (spec.sizes[d] > 1 && t.stride(d) != spec.strides[d])
      return false;
  return true;
}

std::shared_ptr<CompiledGraph> CompiledGraph::load(Plan plan, std::string &error) {
  const DeviceBackend *backend = backendFor(plan.device);
  if (!backend) {
    error = "no backend runs plans on device '" + plan.device + "'";
    return nullptr;
  }
  int64_t compiled = 0;
  std::shared_ptr<CompiledGraph> g = backend->compile(std::move(plan), compiled, error);
  if (g)
    g->kernelsCompiled_ = compiled;
  return g;
}

std::shared_ptr<CompiledGraph> CompiledGraph::loadWith(Plan plan,
                                                       std::shared_ptr<SharedObject> object,
                                                       std::string &error) {
  std::shared_ptr<CompiledGraph> g(new CompiledGraph(std::move(plan)));
  const Plan &p = g->plan_;
  if (!p.kernels.empty()) {
    if (p.device != "cpu" || !object) {
      error = "the plan's kernels are for " + p.device +
              ": load it with CompiledGraph::load or loadWithLauncher";
      return nullptr;
    }
    g->object_ = std::move(object);
    for (const KernelStep &k : p.kernels) {
      auto fn = reinterpret_cast<CpuKernel>(g->object_->symbol(k.name));
      if (!fn) {
        error = "kernel " + k.name + " missing from " + g->object_->path();
        return nullptr;
      }
      g->cpuKernels_.push_back(fn);
    }
  }
  return g->prepare(error) ? g : nullptr;
}

std::shared_ptr<CompiledGraph> CompiledGraph::loadWithLauncher(Plan plan, KernelLauncher launcher,
                                                               std::string &error) {
  std::shared_ptr<CompiledGraph> g(new CompiledGraph(std::move(plan)));
  if (!g->plan_.isCuda() || g->plan_.cudaSources.size() != g->plan_.kernels.size()) {
    error = "loadWithLauncher takes a CUDA plan (one source per kernel); this one is for " +
            g->plan_.device;
    return nullptr;
  }
  g->launcher_ = std::move(launcher);
  return g->prepare(error) ? g : nullptr;
}

bool CompiledGraph::prepare(std::string &error) {
  const Plan &p = plan_;
  for (const ExternStep &e : p.externs) {
    auto op = c10::Dispatcher::singleton().findSchema({e.op, e.overload});
    if (!op) {
      error = "this LibTorch has no operator " + e.op + "." + e.overload;
      return false;
    }
    ops_.push_back(*op);
    const auto &returns = op->schema().returns();
    isView_.push_back(!returns.empty() && returns[0].alias_info() &&
                         !returns[0].alias_info()->isWrite());
  }
  // Buffer reuse: an ATen call with any alias annotation (a view, an
  // in-place or out= form) might keep an alias of its arguments.
  std::vector<bool> mayAlias;
  for (const c10::OperatorHandle &op : ops_) {
    bool alias = false;
    for (const auto &a : op.schema().arguments())
      alias |= a.alias_info() != nullptr;
    for (const auto &r : op.schema().returns())
      alias |= r.alias_info() != nullptr;
    // _unsafe_view, unsafe_split, unsafe_chunk return views without saying so.
    alias |= op.schema().name().find("unsafe") != std::string::npos;
    mayAlias.push_back(alias);
  }
  memory_ = planMemory(p, mayAlias);
  counters().arenaBytes = memory_.arenaBytes;
  counters().unsharedBytes = memory_.unsharedBytes;
  if (logEnabled("memory"))
    log("memory", "graph: arena of " + std::to_string(memory_.arenaBytes) +
                      " bytes for intermediates (" + std::to_string(memory_.unsharedBytes) +
                      " without reuse, peak live " + std::to_string(memory_.peakLiveBytes) + ")");
  return true;
}

void CompiledGraph::runKernel(const KernelStep &k,
                              std::vector<at::Tensor> &values,
                              const at::Device &device, const at::Tensor &arena) const {
  std::vector<void *> buffers;
  buffers.reserve(k.inputs.size() + k.outputs.size());
  for (int v : k.inputs) {
    // A kernel dereferences what it is given: a tensor on another device
    // (an ATen call that made a CPU tensor in a CUDA graph) is an error
    // here, not an illegal address on the GPU.
    TORCH_CHECK(values[v].device() == device, "tgc: kernel ", k.name, " runs on ", device,
                " but its input %", v, " is on ", values[v].device());
    buffers.push_back(values[v].data_ptr());
  }
  for (int v : k.outputs) {
    const TensorSpec &s = plan_.values[v];
    auto options = at::TensorOptions().dtype(toScalarType(s.dtype)).device(device);
    int64_t offset = memory_.offset[v];
    if (offset >= 0 && arena.defined())
      values[v] = at::from_blob(static_cast<uint8_t *>(arena.data_ptr()) + offset, s.sizes,
                                s.strides, [keep = arena](void *) {}, options);
    else
      values[v] = at::empty_strided(s.sizes, s.strides, options);
    buffers.push_back(values[v].data_ptr());
  }
  size_t index = &k - plan_.kernels.data();
  int64_t error[2] = {0, 0}; // check number + 1, bad index
  if (!launcher_) {
    if (!k.checks.empty())
      buffers.push_back(error);
    cpuKernels_[index](buffers.data());
    counters().kernelLaunches++;
    checkIndexError(k, error);
    return;
  }
  // The record lives where the kernel runs; reading it back waits for the
  // kernel, so only kernels with index checks pay that.
  at::Tensor record;
  if (!k.checks.empty()) {
    record = at::zeros({2}, at::TensorOptions().dtype(at::kLong).device(device));
    buffers.push_back(record.data_ptr());
  }
  std::vector<void *> args;
  for (void *&b : buffers)
    args.push_back(&b);
  launcher_(index, k, device, args.data());
  counters().kernelLaunches++;
  if (record.defined()) {
    at::Tensor host = record.cpu();
    checkIndexError(k, host.data_ptr<int64_t>());
  }
}

void CompiledGraph::checkIndexError(const KernelStep &k, const int64_t error[2]) const {
  if (error[0] > 0 && size_t(error[0]) <= k.checks.size()) {
    const IndexCheck &c = k.checks[error[0] - 1];
    TORCH_CHECK_INDEX(false, c.origin.empty() ? "" : c.origin + ": ", "index ", error[1],
                      " is out of bounds for dimension ", c.dim, " with size ", c.size);
  }
}

TensorSpec specOf(const at::Tensor &t) {
  TensorSpec s;
  s.sizes = t.sizes().vec();
  s.strides = t.layout() == at::kStrided ? t.strides().vec() : contiguousStrides(s.sizes);
  fromScalarType(t.scalar_type(), s.dtype);
  return s;
}

at::Tensor withSpecStrides(const at::Tensor &t, const TensorSpec &spec) {
  if (t.numel() <= 1 || t.strides() == c10::IntArrayRef(spec.strides))
    return t;
  at::Tensor fixed = at::empty_strided(spec.sizes, spec.strides, t.options());
  fixed.copy_(t);
  return fixed;
}

c10::IValue argToIValue(const ArgValue &a, const c10::Argument &schemaArg,
                        const std::vector<at::Tensor> &values) {
  switch (a.kind) {
  case ArgValue::None: return c10::IValue();
  case ArgValue::Bool: return a.b;
  case ArgValue::Int: return a.i;
  case ArgValue::Double: return a.d;
  case ArgValue::String: return a.s;
  case ArgValue::IntList:
  case ArgValue::DoubleList: {
    // A list of another element type (oneDNN's `Scalar?[] scalars`): a
    // list of that type, whose elements are the numbers.
    auto list = schemaArg.type()->cast<c10::ListType>();
    c10::TypeKind element = list ? list->getElementType()->kind() : c10::TypeKind::AnyType;
    if (list && element != c10::TypeKind::IntType && element != c10::TypeKind::FloatType &&
        element != c10::TypeKind::BoolType && element != c10::TypeKind::SymIntType) {
      c10::impl::GenericList out(list->getElementType());
      if (a.kind == ArgValue::IntList)
        for (int64_t v : a.ints)
          out.push_back(c10::IValue(v));
      else
        for (double v : a.doubles)
          out.push_back(c10::IValue(v));
      return out;
    }
    if (a.kind == ArgValue::IntList)
      return a.ints;
    return a.doubles;
  }
  case ArgValue::BoolList: {
    c10::List<bool> bools;
    for (int64_t v : a.ints)
      bools.push_back(v != 0);
    return bools;
  }
  case ArgValue::Device: return c10::Device(a.s);
  case ArgValue::Tensor: return values[a.tensors[0]];
  case ArgValue::ScalarTensor: {
    at::Tensor t = a.isFloat
                       ? at::scalar_tensor(a.d, at::TensorOptions().dtype(toScalarType(a.dtype)))
                       : at::scalar_tensor(a.i, at::TensorOptions().dtype(toScalarType(a.dtype)));
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return t;
  }
  case ArgValue::TensorList: {
    auto list = schemaArg.type()->cast<c10::ListType>();
    if (list && list->getElementType()->kind() == c10::TypeKind::OptionalType) {
      c10::List<std::optional<at::Tensor>> out;
      for (int v : a.tensors)
        out.push_back(v < 0 ? std::optional<at::Tensor>() : values[v]);
      return out;
    }
    std::vector<at::Tensor> out;
    for (int v : a.tensors)
      out.push_back(values[v]);
    return out;
  }
  }
  return c10::IValue();
}

void CompiledGraph::runExtern(size_t index,
                              std::vector<at::Tensor> &values) const {
  const ExternStep &e = plan_.externs[index];
  const c10::OperatorHandle &op = ops_[index];
  const auto &schemaArgs = op.schema().arguments();
  std::vector<c10::IValue> stack;
  stack.reserve(e.args.size());
  for (size_t i = 0; i < e.args.size(); ++i)
    stack.push_back(argToIValue(e.args[i], schemaArgs[i], values));
  op.callBoxed(&stack);
  if (isView_[index])
    counters().viewCalls++;
  else
    counters().externCalls++;
  // Ops returning Tensor[] (split, unbind) leave one list on the stack.
  std::vector<at::Tensor> results;
  for (const c10::IValue &v : stack) {
    if (v.isTensorList())
      for (const at::Tensor &t : v.toTensorVector())
        results.push_back(t);
    else
      results.push_back(v.toTensor());
  }
  TORCH_CHECK(results.size() == e.outputs.size(), "tgc: ", e.op,
              " returned ", results.size(), " tensors, the plan expects ",
              e.outputs.size());
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    if (e.outputs[i] < 0)
      continue; // a result the op leaves undefined (backward ops' output_mask)
    at::Tensor t = results[i];
    const TensorSpec &s = plan_.values[e.outputs[i]];
    if (!memory_.read[e.outputs[i]]) {
      // Nothing reads it (layer norm's statistics in inference): where ATen
      // and its Meta kernel disagree (empty inputs), it does not matter.
      values[e.outputs[i]] = std::move(t);
      continue;
    }
    TORCH_CHECK(t.sizes() == c10::IntArrayRef(s.sizes) &&
                    t.scalar_type() == toScalarType(s.dtype),
                "tgc: ", e.op, " produced ", t.sizes(), " ", t.scalar_type(),
                " but its Meta kernel predicted ", c10::IntArrayRef(s.sizes),
                " ", toScalarType(s.dtype));
    // Later kernels were compiled for the predicted layout.
    values[e.outputs[i]] = withSpecStrides(t, s);
  }
}

namespace {

/// Bytes of the spare arenas all graphs keep between runs.
std::atomic<int64_t> spareArenaBytes{0};

/// How many bytes of spare arenas may be kept: TGC_ARENA_CACHE_BYTES, else
/// 1 GiB (read on each return, so a program may change it).
int64_t spareArenaLimit() {
  const char *v = std::getenv("TGC_ARENA_CACHE_BYTES");
  return v && *v ? std::atoll(v) : int64_t(1) << 30;
}

} // namespace

CompiledGraph::~CompiledGraph() {
  if (spareArena_.defined())
    spareArenaBytes -= int64_t(spareArena_.nbytes());
}

at::Tensor CompiledGraph::takeArena(const at::Device &device) const {
  if (device.is_cpu()) {
    std::lock_guard<std::mutex> lock(arenaMutex_);
    if (spareArena_.defined()) {
      spareArenaBytes -= int64_t(spareArena_.nbytes());
      return std::move(spareArena_);
    }
  }
  return at::empty({memory_.arenaBytes}, at::TensorOptions().dtype(at::kByte).device(device));
}

void CompiledGraph::giveBackArena(at::Tensor arena) const {
  // Only a CPU arena no view outlived: a CUDA arena's reuse would have to
  // follow streams, which the caching allocator already does.
  if (!arena.defined() || !arena.is_cpu() || arena.use_count() != 1)
    return;
  const int64_t bytes = int64_t(arena.nbytes());
  std::lock_guard<std::mutex> lock(arenaMutex_);
  if (spareArena_.defined())
    return;
  // Within the bound over all graphs (many specializations, one arena each).
  if (spareArenaBytes.fetch_add(bytes) + bytes > spareArenaLimit()) {
    spareArenaBytes -= bytes;
    return;
  }
  spareArena_ = std::move(arena);
}

std::vector<at::Tensor>
CompiledGraph::run(const std::vector<at::Tensor> &inputs) const {
  TORCH_CHECK(inputs.size() == plan_.inputs.size(), "tgc: the graph takes ",
              plan_.inputs.size(), " inputs, got ", inputs.size());
  std::vector<at::Tensor> values(plan_.values.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    values[plan_.inputs[i]] = inputs[i];
  at::Device device = inputs.empty() ? at::Device(plan_.device) : inputs[0].device();
  at::Tensor arena;
  if (memory_.arenaBytes > 0)
    arena = takeArena(device);
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    const Step &st = plan_.steps[s];
    if (st.kind == Step::Kernel)
      runKernel(plan_.kernels[st.index], values, device, arena);
    else
      runExtern(st.index, values);
    for (int v : memory_.releaseAfter[s])
      values[v].reset();
  }
  std::vector<at::Tensor> outputs;
  outputs.reserve(plan_.outputs.size());
  for (int v : plan_.outputs)
    outputs.push_back(values[v]);
  values.clear();
  giveBackArena(std::move(arena));
  return outputs;
}

} // namespace tgc
