//===- Executor.cpp - Plan execution: kernel launches and ATen calls ------===//
#include "runtime/Executor.h"

#include "runtime/ContiguousStrides.h"

#include <ATen/ops/empty.h>

#include "runtime/Counters.h"
#include "runtime/Backend.h"
#include "runtime/Log.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_unsafe_view.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/as_strided.h>
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/max_pool2d_with_indices.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>

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

namespace {

/// A tensor over `storage` (shared, not copied) with `s`'s sizes, strides
/// and dtype at element offset `offset`: an arena slot or a view the
/// executor resolved, made without the dispatcher. Views share the base's
/// version counter, as ATen's do.
at::Tensor aliasTensor(const at::Tensor &owner, const TensorSpec &s, int64_t offset,
                       bool shareVersion) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::TensorImpl::VIEW, c10::Storage(owner.storage()), owner.key_set(),
      caffe2::TypeMeta::fromScalarType(toScalarType(s.dtype)));
  impl->set_sizes_and_strides(s.sizes, s.strides, offset);
  if (shareVersion && !impl->is_inference())
    impl->set_version_counter(owner.unsafeGetTensorImpl()->version_counter());
  return at::Tensor(std::move(impl));
}

/// Whether `t` can be the base of a view the executor makes: a plain
/// strided tensor (not a oneDNN-blocked weight, a sparse or nested one, or
/// one a Python subclass or functionalization wraps).
bool aliasable(const at::Tensor &t) {
  return t.defined() && t.layout() == at::kStrided && t.has_storage() &&
         !t.key_set().has_any(c10::DispatchKeySet({c10::DispatchKey::Python,
                                                   c10::DispatchKey::Functionalize,
                                                   c10::DispatchKey::PythonTLSSnapshot}));
}

/// A Meta tensor with `s`'s layout at element offset `offset` of a storage
/// large enough for offsets up to twice that.
at::Tensor metaTensor(const TensorSpec &s, int64_t offset) {
  int64_t span = 1;
  for (size_t d = 0; d < s.sizes.size(); ++d)
    span += std::max<int64_t>(s.sizes[d] - 1, 0) * std::abs(s.strides[d]);
  at::Tensor storage =
      at::empty({2 * offset + span + 1}, at::TensorOptions().dtype(toScalarType(s.dtype)).device(at::kMeta));
  return storage.as_strided(s.sizes, s.strides, offset);
}

/// Element offsets used to tell views at relative offsets from absolute ones.
constexpr int64_t kProbeOffset = 1 << 20;

} // namespace

bool CompiledGraph::resolveView(size_t index, ExternPrep &prep) const {
  const ExternStep &e = plan_.externs[index];
  const c10::FunctionSchema &schema = ops_[index].schema();
  if (e.args.size() != schema.arguments().size() || e.outputs.empty())
    return false;
  // The one argument the results alias.
  int base = -1;
  for (size_t i = 0; i < e.args.size(); ++i) {
    const c10::AliasInfo *alias = schema.arguments()[i].alias_info();
    if (alias && alias->isWrite())
      return false;
    if (e.args[i].kind == ArgValue::TensorList)
      return false;
    if (alias && base < 0 && e.args[i].kind == ArgValue::Tensor)
      base = e.args[i].tensors[0];
  }
  if (base < 0 && schema.name().find("unsafe") != std::string::npos && !e.args.empty() &&
      e.args[0].kind == ArgValue::Tensor)
    base = e.args[0].tensors[0]; // _unsafe_view: a view without the annotation
  if (base < 0)
    return false;
  const TensorSpec &baseSpec = plan_.values[base];
  for (int out : e.outputs) {
    if (out < 0 || plan_.values[out].dtype != baseSpec.dtype)
      return false;
    // A returned view stays an ATen view: autograd's view tracking and
    // in-place semantics on it are eager's.
    for (int o : plan_.outputs)
      if (o == out)
        return false;
  }
  std::vector<int64_t> offsets[2];
  const int64_t probes[2] = {0, kProbeOffset};
  for (int round = 0; round < 2; ++round) {
    std::vector<at::Tensor> metas(plan_.values.size());
    for (const ArgValue &a : e.args)
      if (a.kind == ArgValue::Tensor && a.tensors[0] >= 0 && !metas[a.tensors[0]].defined())
        metas[a.tensors[0]] =
            metaTensor(plan_.values[a.tensors[0]], a.tensors[0] == base ? probes[round] : 0);
    std::vector<c10::IValue> stack;
    try {
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (e.args[i].kind == ArgValue::ScalarTensor)
          return false; // a CPU scalar next to Meta tensors: not worth it
        stack.push_back(argToIValue(e.args[i], schema.arguments()[i], metas));
      }
      ops_[index].callBoxed(&stack);
    } catch (...) {
      return false; // no Meta kernel, or it disagrees: the dispatcher decides
    }
    std::vector<at::Tensor> results;
    if (!stackTensors(stack, results) || results.size() != e.outputs.size())
      return false;
    for (size_t i = 0; i < results.size(); ++i) {
      const at::Tensor &r = results[i];
      const TensorSpec &s = plan_.values[e.outputs[i]];
      if (!r.defined() || !r.storage().is_alias_of(metas[base].storage()) ||
          r.sizes() != c10::IntArrayRef(s.sizes) || r.scalar_type() != toScalarType(s.dtype))
        return false;
      for (size_t d = 0; d < s.sizes.size(); ++d)
        if (s.sizes[d] > 1 && r.stride(d) != s.strides[d])
          return false;
      offsets[round].push_back(r.storage_offset() - probes[round]);
    }
  }
  // Relative offsets move with the base; absolute ones (as_strided with a
  // storage offset) would not be the same alias of an arena slot.
  if (offsets[0] != offsets[1])
    return false;
  prep.kind = ExternPrep::View;
  prep.base = base;
  prep.offsetDelta = offsets[0];
  return true;
}

bool CompiledGraph::prepareTyped(size_t index, ExternPrep &prep) const {
  const ExternStep &e = plan_.externs[index];
  if (!e.overload.empty() || e.outputs.size() != 1 || e.outputs[0] < 0)
    return false;
  auto tensorAt = [&](size_t i) {
    return i < e.args.size() && e.args[i].kind == ArgValue::Tensor && e.args[i].tensors[0] >= 0;
  };
  auto scalarAt = [&](size_t i, at::Scalar &out) {
    if (i >= e.args.size())
      return false;
    if (e.args[i].kind == ArgValue::Int)
      out = e.args[i].i;
    else if (e.args[i].kind == ArgValue::Double)
      out = e.args[i].d;
    else
      return false;
    return true;
  };
  ExternPrep::Kind kind;
  size_t tensors;
  if (e.op == "aten::mm" && e.args.size() == 2)
    kind = ExternPrep::Mm, tensors = 2;
  else if (e.op == "aten::bmm" && e.args.size() == 2)
    kind = ExternPrep::Bmm, tensors = 2;
  else if (e.op == "aten::addmm" && e.args.size() == 5)
    kind = ExternPrep::Addmm, tensors = 3;
  else
    return false;
  for (size_t i = 0; i < tensors; ++i)
    if (!tensorAt(i))
      return false;
  if (kind == ExternPrep::Addmm && (!scalarAt(3, prep.beta) || !scalarAt(4, prep.alpha)))
    return false;
  prep.kind = kind;
  for (size_t i = 0; i < tensors; ++i)
    prep.operands.push_back(e.args[i].tensors[0]);
  return true;
}

namespace {

// The C++ signatures of the library ops freezing calls, as LibTorch
// registers their kernels. A LibTorch whose signature differs makes
// typed() throw when the plan is loaded: that step stays boxed.
using ConvPointwiseFn = at::Tensor(const at::Tensor &, const at::Tensor &,
                                   const std::optional<at::Tensor> &, c10::IntArrayRef,
                                   c10::IntArrayRef, c10::IntArrayRef, int64_t, std::string_view,
                                   c10::List<std::optional<at::Scalar>>,
                                   std::optional<std::string_view>);
using ConvBinaryFn = at::Tensor(const at::Tensor &, const at::Tensor &, const at::Tensor &,
                                const std::optional<at::Tensor> &, c10::IntArrayRef,
                                c10::IntArrayRef, c10::IntArrayRef, int64_t, std::string_view,
                                std::optional<at::Scalar>, std::optional<std::string_view>,
                                c10::List<std::optional<at::Scalar>>,
                                std::optional<std::string_view>);
using LinearPointwiseFn = at::Tensor(const at::Tensor &, const at::Tensor &,
                                     const std::optional<at::Tensor> &, std::string_view,
                                     c10::List<std::optional<at::Scalar>>,
                                     std::optional<std::string_view>);
using MklLinearFn = at::Tensor(const at::Tensor &, const at::Tensor &, const at::Tensor &,
                               const std::optional<at::Tensor> &, int64_t);

std::optional<at::Tensor> optionalOperand(const std::vector<at::Tensor> &values, int v) {
  return v >= 0 ? std::optional<at::Tensor>(values[v]) : std::nullopt;
}

std::optional<std::string_view> optionalView(const std::optional<std::string> &s) {
  return s ? std::optional<std::string_view>(*s) : std::nullopt;
}

} // namespace

bool CompiledGraph::prepareUnboxed(size_t index, ExternPrep &prep) const {
  const ExternStep &e = plan_.externs[index];
  const std::string name = e.op + (e.overload.empty() ? "" : "." + e.overload);
  ExternPrep::Kind kind;
  // Positions of tensor operands (optional ones may be None), int lists,
  // the int, strings.
  std::vector<size_t> tensors, optional, lists;
  int nAt = -1;
  if (name == "mkldnn::_convolution_pointwise" && e.args.size() == 10)
    kind = ExternPrep::ConvPointwise, tensors = {0, 1}, optional = {2}, lists = {3, 4, 5}, nAt = 6;
  else if (name == "mkldnn::_convolution_pointwise.binary" && e.args.size() == 13)
    kind = ExternPrep::ConvBinary, tensors = {0, 1, 2}, optional = {3}, lists = {4, 5, 6}, nAt = 7;
  else if (name == "mkldnn::_linear_pointwise" && e.args.size() == 6)
    kind = ExternPrep::LinearPointwise, tensors = {0, 1}, optional = {2};
  else if (name == "mkl::_mkl_linear" && e.args.size() == 5)
    kind = ExternPrep::MklLinear, tensors = {0, 1, 2}, optional = {3}, nAt = 4;
  else if (name == "aten::_scaled_dot_product_flash_attention_for_cpu" && e.args.size() == 7)
    kind = ExternPrep::SdpaCpu, tensors = {0, 1, 2}, optional = {5};
  else if (name == "aten::max_pool2d_with_indices" && e.args.size() == 6)
    kind = ExternPrep::MaxPool2d, tensors = {0}, lists = {1, 2, 3, 4};
  else if (name == "aten::avg_pool2d" && e.args.size() == 7)
    kind = ExternPrep::AvgPool2d, tensors = {0}, lists = {1, 2, 3};
  else if (name == "aten::convolution" && e.args.size() == 9)
    kind = ExternPrep::Convolution, tensors = {0, 1}, optional = {2}, lists = {3, 4, 5, 7}, nAt = 8;
  else if (name == "aten::view" && e.args.size() == 2)
    kind = ExternPrep::ReturnedView, tensors = {0}, lists = {1};
  else if (name == "aten::_unsafe_view" && e.args.size() == 2)
    kind = ExternPrep::ReturnedUnsafeView, tensors = {0}, lists = {1};
  else if (name == "aten::reshape" && e.args.size() == 2)
    kind = ExternPrep::ReturnedReshape, tensors = {0}, lists = {1};
  else
    return false;
  if (e.outputs.empty())
    return false;
  const auto kindOf = [&](size_t i) { return e.args[i].kind; };
  for (size_t i : tensors)
    if (kindOf(i) != ArgValue::Tensor || e.args[i].tensors[0] < 0)
      return false;
  for (size_t i : optional)
    if (kindOf(i) != ArgValue::None && (kindOf(i) != ArgValue::Tensor || e.args[i].tensors[0] < 0))
      return false;
  for (size_t i : lists)
    if (kindOf(i) != ArgValue::IntList)
      return false;
  if (nAt >= 0 && kindOf(nAt) != ArgValue::Int)
    return false;
  auto stringAt = [&](size_t i, std::string &out) {
    if (kindOf(i) != ArgValue::String)
      return false;
    out = e.args[i].s;
    return true;
  };
  auto optionalStringAt = [&](size_t i, std::optional<std::string> &out) {
    if (kindOf(i) == ArgValue::None)
      return true;
    std::string s;
    if (!stringAt(i, s))
      return false;
    out = s;
    return true;
  };
  auto emptyListAt = [&](size_t i) {
    return (kindOf(i) == ArgValue::IntList && e.args[i].ints.empty()) ||
           (kindOf(i) == ArgValue::DoubleList && e.args[i].doubles.empty());
  };
  ExternPrep q;
  q.kind = kind;
  for (size_t i : tensors)
    q.operands.push_back(e.args[i].tensors[0]);
  for (size_t i : optional)
    q.operands.push_back(kindOf(i) == ArgValue::Tensor ? e.args[i].tensors[0] : -1);
  for (size_t k = 0; k < lists.size(); ++k)
    q.ints[k] = e.args[lists[k]].ints;
  if (nAt >= 0)
    q.n = e.args[nAt].i;
  try {
    switch (kind) {
    case ExternPrep::ConvPointwise:
      if (!stringAt(7, q.attr) || !emptyListAt(8) || !optionalStringAt(9, q.algorithm))
        return false;
      (void)ops_[index].typed<ConvPointwiseFn>();
      break;
    case ExternPrep::ConvBinary:
      // Alpha None, no unary scalars (what freezing writes).
      if (!stringAt(8, q.attr) || kindOf(9) != ArgValue::None || !emptyListAt(11) ||
          kindOf(12) != ArgValue::None)
        return false;
      if (kindOf(10) != ArgValue::None) {
        if (!stringAt(10, q.unaryAttr))
          return false;
        q.hasUnary = true;
      }
      (void)ops_[index].typed<ConvBinaryFn>();
      break;
    case ExternPrep::LinearPointwise:
      if (!stringAt(3, q.attr) || !emptyListAt(4) || !optionalStringAt(5, q.algorithm))
        return false;
      (void)ops_[index].typed<LinearPointwiseFn>();
      break;
    case ExternPrep::MklLinear:
      (void)ops_[index].typed<MklLinearFn>();
      break;
    case ExternPrep::SdpaCpu:
      if (e.outputs.size() != 2 || kindOf(3) != ArgValue::Double || kindOf(4) != ArgValue::Bool)
        return false;
      q.dropout = e.args[3].d;
      q.causal = e.args[4].b;
      if (kindOf(6) == ArgValue::Double)
        q.scale = e.args[6].d;
      else if (kindOf(6) != ArgValue::None)
        return false;
      break;
    case ExternPrep::MaxPool2d:
      if (e.outputs.size() != 2 || kindOf(5) != ArgValue::Bool)
        return false;
      q.ceilMode = e.args[5].b;
      break;
    case ExternPrep::AvgPool2d:
      if (e.outputs.size() != 1 || kindOf(4) != ArgValue::Bool || kindOf(5) != ArgValue::Bool)
        return false;
      q.ceilMode = e.args[4].b;
      q.countIncludePad = e.args[5].b;
      if (kindOf(6) == ArgValue::Int)
        q.divisor = e.args[6].i;
      else if (kindOf(6) != ArgValue::None)
        return false;
      break;
    case ExternPrep::Convolution:
      if (e.outputs.size() != 1 || kindOf(6) != ArgValue::Bool)
        return false;
      q.transposed = e.args[6].b;
      break;
    case ExternPrep::ReturnedView:
    case ExternPrep::ReturnedUnsafeView:
    case ExternPrep::ReturnedReshape:
      if (e.outputs.size() != 1)
        return false;
      break;
    default:
      return false;
    }
  } catch (const std::exception &ex) {
    log("executor", name + " stays a boxed call: " + ex.what());
    return false;
  }
  prep = std::move(q);
  return true;
}

void CompiledGraph::runUnboxed(size_t index, std::vector<at::Tensor> &values) const {
  const ExternPrep &p = prep_[index];
  const c10::OperatorHandle &op = ops_[index];
  const std::vector<int> &o = p.operands;
  // Empty Scalar?[] lists: one per thread, shared by every call.
  thread_local const c10::List<std::optional<at::Scalar>> noScalars;
  if (isView_[index])
    counters().viewCalls++;
  else
    counters().externCalls++;
  switch (p.kind) {
  case ExternPrep::ConvPointwise:
    bindResult(index, 0,
               op.typed<ConvPointwiseFn>().call(
                   values[o[0]], values[o[1]], optionalOperand(values, o[2]), p.ints[0], p.ints[1],
                   p.ints[2], p.n, p.attr, noScalars, optionalView(p.algorithm)),
               values);
    return;
  case ExternPrep::ConvBinary:
    bindResult(index, 0,
               op.typed<ConvBinaryFn>().call(
                   values[o[0]], values[o[1]], values[o[2]], optionalOperand(values, o[3]),
                   p.ints[0], p.ints[1], p.ints[2], p.n, p.attr, std::nullopt,
                   p.hasUnary ? std::optional<std::string_view>(p.unaryAttr) : std::nullopt,
                   noScalars, std::nullopt),
               values);
    return;
  case ExternPrep::LinearPointwise:
    bindResult(index, 0,
               op.typed<LinearPointwiseFn>().call(values[o[0]], values[o[1]],
                                                  optionalOperand(values, o[2]), p.attr, noScalars,
                                                  optionalView(p.algorithm)),
               values);
    return;
  case ExternPrep::MklLinear:
    bindResult(index, 0,
               op.typed<MklLinearFn>().call(values[o[0]], values[o[1]], values[o[2]],
                                            optionalOperand(values, o[3]), p.n),
               values);
    return;
  case ExternPrep::SdpaCpu: {
    auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(
        values[o[0]], values[o[1]], values[o[2]], p.dropout, p.causal,
        optionalOperand(values, o[3]), p.scale);
    bindResult(index, 0, std::move(out), values);
    bindResult(index, 1, std::move(lse), values);
    return;
  }
  case ExternPrep::MaxPool2d: {
    auto [out, indices] = at::max_pool2d_with_indices(values[o[0]], p.ints[0], p.ints[1], p.ints[2],
                                                      p.ints[3], p.ceilMode);
    bindResult(index, 0, std::move(out), values);
    bindResult(index, 1, std::move(indices), values);
    return;
  }
  case ExternPrep::AvgPool2d:
    bindResult(index, 0,
               at::avg_pool2d(values[o[0]], p.ints[0], p.ints[1], p.ints[2], p.ceilMode,
                              p.countIncludePad, p.divisor),
               values);
    return;
  case ExternPrep::Convolution:
    bindResult(index, 0,
               at::convolution(values[o[0]], values[o[1]], optionalOperand(values, o[2]), p.ints[0],
                               p.ints[1], p.ints[2], p.transposed, p.ints[3], p.n),
               values);
    return;
  case ExternPrep::ReturnedView:
    bindResult(index, 0, values[o[0]].view(p.ints[0]), values);
    return;
  case ExternPrep::ReturnedUnsafeView:
    bindResult(index, 0, at::_unsafe_view(values[o[0]], p.ints[0]), values);
    return;
  case ExternPrep::ReturnedReshape:
    bindResult(index, 0, values[o[0]].reshape(p.ints[0]), values);
    return;
  default:
    TORCH_CHECK(false, "tgc: extern ", plan_.externs[index].op, " has no unboxed form");
  }
}

bool CompiledGraph::prepare(std::string &error) {
  const Plan &p = plan_;
  for (const ExternStep &e : p.externs) {
    auto op = c10::Dispatcher::singleton().findSchema({e.op, e.overload});
    if (!op) {
      error = "this LibTorch has no operator " + e.op + "." + e.overload;
      return false;
    }
    if (op->schema().arguments().size() != e.args.size()) {
      error = "the plan calls " + e.op + "." + e.overload + " with " +
              std::to_string(e.args.size()) + " arguments; this LibTorch's takes " +
              std::to_string(op->schema().arguments().size());
      return false;
    }
    ops_.push_back(*op);
    const auto &returns = op->schema().returns();
    isView_.push_back(!returns.empty() && returns[0].alias_info() &&
                         !returns[0].alias_info()->isWrite());
  }
  // How each extern runs, and what that means for buffer reuse: an ATen
  // call with any alias annotation (a view, an in-place or out= form)
  // might keep an alias of its arguments; a view the executor resolves
  // is an alias it tracks.
  std::vector<ExternMemory> externMemory(p.externs.size());
  prep_.resize(p.externs.size());
  for (size_t i = 0; i < p.externs.size(); ++i) {
    const c10::FunctionSchema &schema = ops_[i].schema();
    bool alias = false;
    for (const auto &a : schema.arguments())
      alias |= a.alias_info() != nullptr;
    for (const auto &r : schema.returns())
      alias |= r.alias_info() != nullptr;
    // _unsafe_view, unsafe_split, unsafe_chunk return views without saying so.
    alias |= schema.name().find("unsafe") != std::string::npos;
    ExternPrep &prep = prep_[i];
    if (alias && resolveView(i, prep)) {
      externMemory[i] = {ExternMemory::ResolvedView, prep.base};
      continue;
    }
    if (!alias && prepareTyped(i, prep)) {
      externMemory[i].kind = ExternMemory::IntoArena;
      continue;
    }
    if (prepareUnboxed(i, prep)) {
      externMemory[i].kind = alias ? ExternMemory::MayAlias : ExternMemory::Fresh;
      continue;
    }
    externMemory[i].kind = alias ? ExternMemory::MayAlias : ExternMemory::Fresh;
    // Boxed: constants converted once.
    const ExternStep &e = p.externs[i];
    if (logEnabled("executor"))
      log("executor", "boxed call: " + e.op + (e.overload.empty() ? "" : "." + e.overload));
    std::vector<at::Tensor> none(p.values.size());
    for (size_t a = 0; a < e.args.size(); ++a) {
      const ArgValue &arg = e.args[a];
      if (arg.kind == ArgValue::Tensor) {
        prep.tensorArgs.push_back({uint32_t(a), arg.tensors[0]});
        prep.stack.emplace_back();
      } else if (arg.kind == ArgValue::TensorList) {
        prep.listArgs.push_back(uint32_t(a));
        prep.stack.emplace_back();
      } else {
        prep.stack.push_back(argToIValue(arg, schema.arguments()[a], none));
      }
    }
  }
  memory_ = planMemory(p, externMemory);
  counters().arenaBytes = memory_.arenaBytes;
  counters().unsharedBytes = memory_.unsharedBytes;
  if (logEnabled("memory")) {
    size_t views = 0, typed = 0;
    for (const ExternPrep &x : prep_)
      views += x.kind == ExternPrep::View, typed += x.kind >= ExternPrep::Mm;
    log("memory", "graph: arena of " + std::to_string(memory_.arenaBytes) +
                      " bytes for intermediates (" + std::to_string(memory_.unsharedBytes) +
                      " without reuse, peak live " + std::to_string(memory_.peakLiveBytes) +
                      "); " + std::to_string(views) + " of " + std::to_string(prep_.size()) +
                      " ATen calls are views resolved at load, " + std::to_string(typed) +
                      " typed calls");
  }
  if (profilingEnabled())
    profile_ = registerProfile(p);
  return true;
}

void CompiledGraph::runKernel(const KernelStep &k,
                              std::vector<at::Tensor> &values,
                              const at::Device &device, const at::Tensor &arena) const {
  c10::SmallVector<void *, 16> buffers;
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
    int64_t offset = memory_.offset[v];
    if (offset >= 0 && arena.defined()) {
      values[v] = aliasTensor(arena, s, offset / int64_t(at::elementSize(toScalarType(s.dtype))),
                              false);
    } else {
      values[v] = at::empty_strided(
          s.sizes, s.strides, at::TensorOptions().dtype(toScalarType(s.dtype)).device(device));
      counters().executorAllocations++;
    }
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
  c10::SmallVector<void *, 16> args;
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
  // Strides of size-1 dimensions never index anything ([N,C,1,1] pooled
  // channels-last is also contiguous).
  bool same = t.dim() == int64_t(spec.strides.size());
  for (int64_t d = 0; same && d < t.dim(); ++d)
    same = t.size(d) <= 1 || t.stride(d) == spec.strides[d];
  if (same)
    return t;
  at::Tensor fixed = at::empty_strided(spec.sizes, spec.strides, t.options());
  fixed.copy_(t);
  return fixed;
}

bool stackTensors(const std::vector<c10::IValue> &stack, std::vector<at::Tensor> &out) {
  for (const c10::IValue &v : stack) {
    if (v.isTensorList())
      for (const at::Tensor &t : v.toTensorVector())
        out.push_back(t);
    else if (v.isTensor())
      out.push_back(v.toTensor());
    else
      return false;
  }
  return true;
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

/// Per thread and nesting depth (an ATen call may run another compiled
/// graph): the vectors one run reuses, so a replay allocates none.
struct CompiledGraph::Scratch {
  std::vector<at::Tensor> values;
  std::vector<c10::IValue> stack;
  std::vector<at::Tensor> results;
};

namespace {

struct ScratchPool {
  std::deque<CompiledGraph::Scratch> entries; // grows to the deepest nesting; never moves
  size_t depth = 0;
};
thread_local ScratchPool scratchPool;

/// One run's Scratch: the pool's entry at this depth, cleared on return.
class ScratchLease {
public:
  explicit ScratchLease(size_t values) {
    ScratchPool &p = scratchPool;
    if (p.depth == p.entries.size())
      p.entries.emplace_back();
    s_ = &p.entries[p.depth++];
    s_->values.resize(values);
  }
  ~ScratchLease() {
    s_->values.clear(); // releases the run's tensors, keeps the capacity
    s_->stack.clear();
    s_->results.clear();
    --scratchPool.depth;
  }
  CompiledGraph::Scratch &operator*() const { return *s_; }

private:
  CompiledGraph::Scratch *s_;
};

} // namespace

void CompiledGraph::bindResult(size_t index, size_t i, at::Tensor t,
                               std::vector<at::Tensor> &values) const {
  const ExternStep &e = plan_.externs[index];
  const int v = e.outputs[i];
  if (v < 0)
    return; // a result the op leaves undefined (backward ops' output_mask)
  const TensorSpec &s = plan_.values[v];
  if (!memory_.read[v]) {
    // Nothing reads it (layer norm's statistics in inference): where ATen
    // and its Meta kernel disagree (empty inputs), it does not matter.
    values[v] = std::move(t);
    return;
  }
  TORCH_CHECK(t.sizes() == c10::IntArrayRef(s.sizes) && t.scalar_type() == toScalarType(s.dtype),
              "tgc: ", e.op, " produced ", t.sizes(), " ", t.scalar_type(),
              " but its Meta kernel predicted ", c10::IntArrayRef(s.sizes), " ",
              toScalarType(s.dtype));
  // Later kernels were compiled for the predicted layout.
  at::Tensor laid = withSpecStrides(t, s);
  if (!laid.is_same(t)) {
    counters().executorAllocations++;
    if (logEnabled("executor"))
      log("executor", "copied the result of " + e.op + " to the plan's strides " +
                          c10::str(c10::IntArrayRef(s.strides)) + " from " +
                          c10::str(t.strides()));
  }
  values[v] = std::move(laid);
}

bool CompiledGraph::runView(size_t index, std::vector<at::Tensor> &values) const {
  const ExternPrep &p = prep_[index];
  const at::Tensor &base = values[p.base];
  // Under autograd (a plan of ATen calls run op by op for a segment that
  // needs gradients) a view is autograd's to make: it records the backward.
  if (!aliasable(base) || (base.requires_grad() && at::GradMode::is_enabled()))
    return false;
  const ExternStep &e = plan_.externs[index];
  const int64_t offset = base.storage_offset();
  for (size_t i = 0; i < e.outputs.size(); ++i)
    values[e.outputs[i]] =
        aliasTensor(base, plan_.values[e.outputs[i]], offset + p.offsetDelta[i], true);
  counters().viewsResolved++;
  return true;
}

void CompiledGraph::runTyped(size_t index, std::vector<at::Tensor> &values,
                             const at::Tensor &arena) const {
  const ExternPrep &p = prep_[index];
  const ExternStep &e = plan_.externs[index];
  const int out = e.outputs[0];
  const at::Tensor &a = values[p.operands[0]];
  const at::Tensor &b = values[p.operands[1]];
  counters().externCalls++;
  const int64_t offset = memory_.offset[out];
  // out= forms refuse arguments that require grad while grad mode is on (a
  // plan run outside the training path's autograd Function).
  bool grad = false;
  if (at::GradMode::is_enabled())
    for (int v : p.operands)
      grad = grad || values[v].requires_grad();
  if (offset >= 0 && arena.defined() && !grad) {
    const TensorSpec &s = plan_.values[out];
    at::Tensor slot =
        aliasTensor(arena, s, offset / int64_t(at::elementSize(toScalarType(s.dtype))), false);
    switch (p.kind) {
    case ExternPrep::Mm: at::mm_out(slot, a, b); break;
    case ExternPrep::Bmm: at::bmm_out(slot, a, b); break;
    case ExternPrep::Addmm: at::addmm_out(slot, a, b, values[p.operands[2]], p.beta, p.alpha); break;
    default: TORCH_CHECK(false, "tgc: extern ", e.op, " has no typed form");
    }
    // out= may resize a slot it disagrees with: that would be a new buffer
    // outside the arena, so say so rather than return what it holds.
    TORCH_CHECK(slot.sizes() == c10::IntArrayRef(s.sizes) && slot.strides() == c10::IntArrayRef(s.strides),
                "tgc: ", e.op, " wrote ", slot.sizes(), " but its Meta kernel predicted ",
                c10::IntArrayRef(s.sizes));
    counters().externOutCalls++;
    values[out] = std::move(slot);
    return;
  }
  at::Tensor r;
  switch (p.kind) {
  case ExternPrep::Mm: r = at::mm(a, b); break;
  case ExternPrep::Bmm: r = at::bmm(a, b); break;
  case ExternPrep::Addmm: r = at::addmm(a, b, values[p.operands[2]], p.beta, p.alpha); break;
  default: TORCH_CHECK(false, "tgc: extern ", e.op, " has no typed form");
  }
  bindResult(index, 0, std::move(r), values);
}

void CompiledGraph::runExtern(size_t index, Scratch &scratch, const at::Tensor &arena) const {
  const ExternPrep &p = prep_[index];
  std::vector<at::Tensor> &values = scratch.values;
  if (p.kind == ExternPrep::View && runView(index, values))
    return;
  if (p.kind >= ExternPrep::ConvPointwise) {
    runUnboxed(index, values);
    return;
  }
  if (p.kind >= ExternPrep::Mm) {
    runTyped(index, values, arena);
    return;
  }
  counters().boxedCalls++;
  const ExternStep &e = plan_.externs[index];
  const c10::OperatorHandle &op = ops_[index];
  std::vector<c10::IValue> &stack = scratch.stack;
  stack.clear();
  if (p.kind == ExternPrep::View) {
    // Its base is not a plain strided tensor this time: the dispatcher's view.
    const auto &schemaArgs = op.schema().arguments();
    for (size_t i = 0; i < e.args.size(); ++i)
      stack.push_back(argToIValue(e.args[i], schemaArgs[i], values));
  } else {
    stack.insert(stack.end(), p.stack.begin(), p.stack.end());
    for (auto [slot, v] : p.tensorArgs)
      stack[slot] = values[v];
    const auto &schemaArgs = op.schema().arguments();
    for (uint32_t slot : p.listArgs)
      stack[slot] = argToIValue(e.args[slot], schemaArgs[slot], values);
  }
  op.callBoxed(&stack);
  if (isView_[index])
    counters().viewCalls++;
  else
    counters().externCalls++;
  std::vector<at::Tensor> &results = scratch.results;
  results.clear();
  const bool tensors = stackTensors(stack, results);
  stack.clear();
  TORCH_CHECK(tensors && results.size() == e.outputs.size(), "tgc: ", e.op, " returned ",
              results.size(), " tensors", tensors ? "" : " and something else",
              ", the plan expects ", e.outputs.size());
  for (size_t i = 0; i < e.outputs.size(); ++i)
    bindResult(index, i, std::move(results[i]), values);
  results.clear();
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
  counters().executorAllocations++;
  return at::empty({memory_.arenaBytes}, at::TensorOptions().dtype(at::kByte).device(device));
}

void CompiledGraph::giveBackArena(at::Tensor arena) const {
  // Only a CPU arena no view outlived: a CUDA arena's reuse would have to
  // follow streams, which the caching allocator already does.
  if (!arena.defined() || !arena.is_cpu() || arena.use_count() != 1 ||
      arena.storage().use_count() != 1)
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
  counters().planRuns++;
  std::vector<at::Tensor> outputs;
  at::Tensor arena;
  {
    ScratchLease lease(plan_.values.size());
    Scratch &scratch = *lease;
    std::vector<at::Tensor> &values = scratch.values;
    for (size_t i = 0; i < inputs.size(); ++i)
      values[plan_.inputs[i]] = inputs[i];
    at::Device device = inputs.empty() ? at::Device(plan_.device) : inputs[0].device();
    if (memory_.arenaBytes > 0)
      arena = takeArena(device);
    StepProfile *profile = profile_.get();
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = profile ? Clock::now() : Clock::time_point();
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      const Step &st = plan_.steps[s];
      const Clock::time_point t0 = profile ? Clock::now() : Clock::time_point();
      if (st.kind == Step::Kernel)
        runKernel(plan_.kernels[st.index], values, device, arena);
      else
        runExtern(st.index, scratch, arena);
      if (profile)
        profile->stepNs[s].fetch_add((Clock::now() - t0).count(), std::memory_order_relaxed);
      for (int v : memory_.releaseAfter[s])
        values[v].reset();
    }
    outputs.reserve(plan_.outputs.size());
    for (int v : plan_.outputs)
      outputs.push_back(values[v]);
    if (profile) {
      profile->runNs.fetch_add((Clock::now() - start).count(), std::memory_order_relaxed);
      profile->runs.fetch_add(1, std::memory_order_relaxed);
    }
  } // the lease releases every intermediate before the arena goes back
  giveBackArena(std::move(arena));
  return outputs;
}

} // namespace tgc
