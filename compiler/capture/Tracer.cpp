//===- Tracer.cpp - tracer tensors and the dispatcher fallback ------------===//
#include "compiler/capture/Tracer.h"

#include "compiler/ops/OpRegistry.h"
#include "runtime/Counters.h"
#include "runtime/Executor.h"
#include "runtime/FaultInjection.h"
#include "runtime/Log.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/any.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/ne.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <mutex>
#include <optional>
#include <utility>

namespace tgc {

namespace {

constexpr c10::DispatchKey kTracerKey = c10::DispatchKey::PrivateUse2;

thread_local TraceContext *currentContext = nullptr;

/// The dispatch-key TLS as it was before the outermost capture began.
thread_local std::optional<c10::impl::LocalDispatchKeySet> outerKeys;

/// Whether the tracer is running ATen itself on this thread (Meta kernels,
/// examples, a breaking op on real tensors): a tracer tensor reaching the
/// fallback then would make it re-enter itself for the op it is running.
/// A nested capture (training's joint graph, built while a segment runs)
/// starts afresh (TraceGuard).
thread_local bool redispatching = false;

/// Restores the dispatch-key TLS of the code around the capture, so Meta
/// computations inside the tracer dispatch normally. Every call the tracer
/// makes into ATen is inside one: it is the re-entry guard too.
class OutsideTrace {
public:
  OutsideTrace() : wasRedispatching_(redispatching) {
    redispatching = true;
    if (outerKeys)
      guard_.emplace(outerKeys->included_, outerKeys->excluded_);
  }
  ~OutsideTrace() { redispatching = wasRedispatching_; }
  OutsideTrace(const OutsideTrace &) = delete;
  OutsideTrace &operator=(const OutsideTrace &) = delete;

private:
  bool wasRedispatching_;
  std::optional<c10::impl::ForceDispatchKeyGuard> guard_;
};

/// A Meta tensor with t's sizes, strides and dtype. Built with the tracer
/// key excluded, so it is a real Meta tensor even inside a capture.
at::Tensor metaLike(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                    at::ScalarType dtype) {
  OutsideTrace outside;
  return at::empty_strided(sizes, strides,
                           at::TensorOptions().dtype(dtype).device(at::kMeta));
}

at::Tensor metaLike(const at::Tensor &t) {
  return metaLike(t.sizes(), t.strides(), t.scalar_type());
}

std::string qualifiedName(const c10::FunctionSchema &s) {
  return s.overload_name().empty() ? s.name() : s.name() + "." + s.overload_name();
}

/// Ops whose values must come to the host: capture cannot continue.
bool needsHostValue(const c10::FunctionSchema &s) {
  return ops::hostUseOf(s.name(), s.overload_name()) == ops::HostUse::ReadsValue;
}

} // namespace

/// A storage-less tensor standing for value `id` of a capture.
class TracerTensorImpl final : public c10::TensorImpl {
public:
  TracerTensorImpl(TraceContext *ctx, int segment, int id, const at::Tensor &meta,
                   c10::Device device)
      : TensorImpl(c10::DispatchKeySet(kTracerKey), meta.dtype(), device),
        ctx(ctx), segment(segment), id(id) {
    setLayout(meta);
    set_storage_access_should_throw();
  }

  void setLayout(const at::Tensor &meta) {
    set_sizes_and_strides(meta.sizes(), meta.strides(), meta.storage_offset());
  }

  c10::intrusive_ptr<TensorImpl>
  shallow_copy_and_detach(const c10::VariableVersion &version,
                          bool allowMetadataChange) const override {
    return copy(version, allowMetadataChange);
  }
  c10::intrusive_ptr<TensorImpl>
  shallow_copy_and_detach(c10::VariableVersion &&version,
                          bool allowMetadataChange) const override {
    return copy(version, allowMetadataChange);
  }

  TraceContext *ctx;
  int segment; ///< the segment that produced this value
  int id;      ///< its value id there
  at::Tensor materialized; ///< set once its segment ran (after a break)
  /// Its value when capture can compute it: small values made from
  /// constants, sizes and small real tensors (a size turned into a tensor
  /// and back). Host reads of it are answered, under a guard.
  at::Tensor known;

private:
  c10::intrusive_ptr<TensorImpl> copy(const c10::VariableVersion &version,
                                      bool allowMetadataChange) const {
    auto impl = c10::make_intrusive<TracerTensorImpl>(
        ctx, segment, id, metaLike(sizes(), strides(), dtype().toScalarType()), device());
    copy_tensor_metadata(this, impl.get(), version, allowMetadataChange);
    impl->materialized = materialized;
    impl->known = known;
    return impl;
  }
  const char *tensorimpl_type_name() const override { return "tgc::TracerTensorImpl"; }
};

namespace {
/// Values capture computes alongside the graph are at most this large.
constexpr int64_t kMaxKnownElements = 64;

TracerTensorImpl *asTracer(const at::Tensor &t) {
  if (!t.defined())
    return nullptr;
  return dynamic_cast<TracerTensorImpl *>(t.unsafeGetTensorImpl());
}
} // namespace

//===----------------------------------------------------------------------===//
// TraceContext
//===----------------------------------------------------------------------===//

TraceContext *TraceContext::current() { return currentContext; }

TraceContext::TraceContext(std::string device, SegmentRunner runner)
    : runner_(std::move(runner)) {
  segment_.device = std::move(device);
}

TraceContext::~TraceContext() {
  // Tracers that outlive the capture must not point at it.
  for (auto &w : tracers_)
    if (auto t = w.lock())
      t->ctx = nullptr;
}

int TraceContext::addValue(const at::Tensor &meta) {
  TensorSpec spec;
  spec.sizes = meta.sizes().vec();
  spec.strides = meta.strides().vec();
  if (!fromScalarType(meta.scalar_type(), spec.dtype))
    throw GraphBreak("tensor", std::string("dtype ") +
                                   c10::toString(meta.scalar_type()) +
                                   " is not supported");
  segment_.values.push_back(std::move(spec));
  metas_.push_back(meta);
  return segment_.values.size() - 1;
}

at::Tensor TraceContext::makeTracer(int id, const at::Tensor &meta) {
  auto impl = c10::make_intrusive<TracerTensorImpl>(
      this, segmentIndex(), id, meta, c10::Device(tracerDevice()));
  tracers_.push_back(c10::weak_intrusive_ptr<TracerTensorImpl>(impl));
  return at::Tensor(std::move(impl));
}

std::vector<at::Tensor>
TraceContext::makeInputs(const std::vector<at::Tensor> &inputs) {
  std::vector<at::Tensor> tracers;
  for (const at::Tensor &t : inputs) {
    int id = addValue(metaLike(t));
    segment_.inputs.push_back(id);
    inputsReal_.push_back(t);
    inputAliases_.insert(id);
    tracers.push_back(makeTracer(id, metas_[id]));
  }
  userInputs_ = inputs.size();
  return tracers;
}

void TraceContext::know(const at::Tensor &t, const at::Tensor &value) {
  TracerTensorImpl *tr = asTracer(t);
  TORCH_CHECK(tr && tr->ctx == this, "tgc: internal error: know() on a tensor not traced here");
  if (value.device().is_cpu() && value.numel() <= kMaxKnownElements && !value.requires_grad() &&
      value.layout() == at::kStrided)
    tr->known = value;
}

std::vector<at::Tensor> TraceContext::addInputs(const std::vector<at::Tensor> &like) {
  TORCH_CHECK(inputsReal_.size() == userInputs_,
              "tgc: internal error: inputs added after a lifted tensor");
  std::vector<at::Tensor> tracers = makeInputs(like);
  userInputs_ = inputsReal_.size();
  return tracers;
}

int TraceContext::lift(const at::Tensor &real, const void *key) {
  auto it = liftedIds_.find(key);
  if (it != liftedIds_.end())
    return it->second;
  if (real.device().str() != segment_.device)
    throw GraphBreak("tensor", "a captured tensor on " + real.device().str() +
                                   " is used by a graph on " + segment_.device);
  int id = addValue(metaLike(real));
  segment_.inputs.push_back(id);
  inputsReal_.push_back(real);
  inputAliases_.insert(id);
  liftedIds_[key] = id;
  return id;
}

int TraceContext::valueOf(const at::Tensor &t) {
  if (TracerTensorImpl *tr = asTracer(t)) {
    if (tr->ctx != this)
      throw GraphBreak("tensor", "a tracer tensor of another capture was used");
    if (tr->segment == segmentIndex())
      return tr->id;
    if (!tr->materialized.defined())
      throw GraphBreak("tensor", "a value of an earlier segment was not kept");
    return lift(tr->materialized, tr);
  }
  return lift(t, t.unsafeGetTensorImpl());
}

at::Tensor TraceContext::realOf(const at::Tensor &t) const {
  TracerTensorImpl *tr = asTracer(t);
  if (!tr)
    return t;
  TORCH_CHECK(tr->materialized.defined(),
              "tgc: internal error: a tracer has no value after its segment ran");
  return tr->materialized;
}

const at::Tensor &TraceContext::metaOf(int id) const { return metas_[id]; }

std::vector<at::Tensor> TraceContext::lifted() const {
  return std::vector<at::Tensor>(inputsReal_.begin() + userInputs_, inputsReal_.end());
}

std::vector<Segment> TraceContext::segments() const {
  std::vector<Segment> all = finished_;
  if (!finishedAll_)
    all.push_back(segment_);
  return all;
}

/// Runs the current segment with `outputs` as results and gives every live
/// tracer of it its real value.
void TraceContext::flush(const std::vector<int> &outputs,
                         std::vector<at::Tensor> *reals) {
  segment_.outputs = outputs;
  for (const SegmentNode &n : segment_.nodes)
    ranWrites_ = ranWrites_ || n.mutates;
  std::vector<at::Tensor> values;
  {
    OutsideTrace outside; // the segment runs on real tensors
    values = runner_(segment_, inputsReal_);
  }
  std::unordered_map<int, at::Tensor> byId;
  for (size_t i = 0; i < outputs.size(); ++i)
    byId[outputs[i]] = values[i];
  std::vector<c10::weak_intrusive_ptr<TracerTensorImpl>> alive;
  for (auto &w : tracers_)
    if (auto t = w.lock()) {
      if (t->segment == segmentIndex() && byId.count(t->id))
        t->materialized = byId[t->id];
      alive.push_back(w);
    }
  tracers_ = std::move(alive);
  if (reals)
    *reals = std::move(values);
  finished_.push_back(std::move(segment_));
  segment_ = Segment();
  segment_.device = finished_.back().device;
  inputsReal_.clear();
  metas_.clear();
  liftedIds_.clear();
  userInputs_ = 0;
}

void TraceContext::abortIfPredicted(const std::string &why) {
  if (guards_.empty() && !aborted_)
    return;
  aborted_ = true;
  throw SpeculationAborted(why + " after a predicted host read");
}

void TraceContext::breakAt(const GraphBreak &why) {
  abortIfPredicted("graph break at " + why.op);
  breaks_.push_back({why.op, why.reason, segmentIndex()});
  std::vector<int> live;
  for (auto &w : tracers_)
    if (auto t = w.lock())
      if (t->segment == segmentIndex() &&
          std::find(live.begin(), live.end(), t->id) == live.end())
        live.push_back(t->id);
  flush(live, nullptr);
}

std::vector<at::Tensor> TraceContext::finish(const std::vector<at::Tensor> &outputs) {
  if (aborted_) // the program caught the abort and went on
    throw SpeculationAborted("capture was abandoned");
  std::vector<int> ids;
  for (const at::Tensor &t : outputs) {
    if (!t.defined())
      throw GraphBreak("output", "the function returned an undefined tensor");
    ids.push_back(valueOf(t));
  }
  if (!hadBreaks()) {
    if (wroteInput_)
      abortIfPredicted("the graph writes an input");
    segment_.outputs = ids;
    segment_.outputs.insert(segment_.outputs.end(), guards_.begin(), guards_.end());
    return {};
  }
  std::vector<at::Tensor> reals;
  flush(ids, &reals);
  finishedAll_ = true;
  return reals;
}

bool isTracer(const at::Tensor &t) { return asTracer(t) != nullptr; }

struct UntracedScope::Impl {
  OutsideTrace outside;
};
UntracedScope::UntracedScope() : impl_(new Impl) {}
UntracedScope::~UntracedScope() { delete impl_; }

//===----------------------------------------------------------------------===//
// TraceGuard
//===----------------------------------------------------------------------===//

/// While tracing, every op reaches the tracer: its key is included, and
/// BackendSelect (which would send factory functions straight to a backend)
/// is excluded.
struct TraceGuard::Impl {
  std::optional<c10::impl::LocalDispatchKeySet> previousOuter = outerKeys;
  bool previousRedispatching = std::exchange(redispatching, false);
  c10::impl::LocalDispatchKeySet now = c10::impl::tls_local_dispatch_key_set();
  c10::impl::ForceDispatchKeyGuard force{
      now.included_ | c10::DispatchKeySet(kTracerKey),
      now.excluded_ | c10::DispatchKeySet(c10::DispatchKey::BackendSelect)};
  Impl() {
    if (!outerKeys)
      outerKeys = now;
  }
  ~Impl() {
    outerKeys = previousOuter;
    redispatching = previousRedispatching;
  }
};

static void registerTracerKernels();

TraceGuard::TraceGuard(TraceContext &ctx)
    : previous_(currentContext), impl_(nullptr) {
  static std::once_flag once;
  std::call_once(once, registerTracerKernels);
  impl_ = new Impl;
  currentContext = &ctx;
}

TraceGuard::~TraceGuard() {
  delete impl_;
  currentContext = previous_;
}

//===----------------------------------------------------------------------===//
// The fallback
//===----------------------------------------------------------------------===//

namespace {

/// An op without tensor arguments: its device argument alone places it.
bool isFactory(const c10::FunctionSchema &schema) {
  for (const c10::Argument &arg : schema.arguments()) {
    c10::TypePtr t = arg.type();
    if (auto opt = t->cast<c10::OptionalType>())
      t = opt->getElementType();
    if (auto list = t->cast<c10::ListType>())
      t = list->getElementType();
    if (auto opt = t->cast<c10::OptionalType>())
      t = opt->getElementType();
    if (t->kind() == c10::TypeKind::TensorType)
      return false;
  }
  return true;
}

/// Records argument `v` and replaces it on the stack with its Meta stand-in.
ArgValue recordArg(TraceContext &ctx, c10::IValue &v, const c10::Argument &arg,
                   const std::string &op, bool factory) {
  ArgValue a;
  auto optional = arg.type()->cast<c10::OptionalType>();
  if (v.isNone() && optional &&
      optional->getElementType()->kind() == c10::TypeKind::DeviceObjType) {
    // An op with tensor arguments (_to_copy, zeros_like) keeps their device:
    // None stays None. A factory without a device makes CPU tensors: on a
    // CPU graph it is recorded with the graph's device, so a graph moved to
    // another device (Segment::on) makes them there, like every other value.
    if (!factory)
      return a; // None
    if (ctx.device() != "cpu" || ctx.tracerDevice() != "cpu")
      throw GraphBreak(op, "creates a CPU tensor inside a graph on " + ctx.device());
    v = c10::Device(at::kMeta);
    a.kind = ArgValue::Device;
    a.s = ctx.device();
    return a;
  }
  auto tensorRef = [&](const at::Tensor &t) -> int {
    if (!t.defined())
      return -1;
    return ctx.valueOf(t);
  };
  if (v.isNone()) {
    a.kind = ArgValue::None;
  } else if (v.isTensor()) {
    const at::Tensor &t = v.toTensor();
    if (!t.defined()) {
      a.kind = ArgValue::None;
    } else if (!asTracer(t) && t.unsafeGetTensorImpl()->is_wrapped_number()) {
      a.kind = ArgValue::ScalarTensor;
      OutsideTrace outside; // reading a real 0-d CPU tensor
      fromScalarType(t.scalar_type(), a.dtype);
      a.isFloat = at::isFloatingType(t.scalar_type());
      if (a.isFloat)
        a.d = t.item<double>();
      else
        a.i = t.item<int64_t>();
      at::Tensor m = metaLike(t);
      m.unsafeGetTensorImpl()->set_wrapped_number(true);
      v = m;
    } else {
      a.kind = ArgValue::Tensor;
      a.tensors = {tensorRef(t)};
      v = ctx.metaOf(a.tensors[0]);
    }
  } else if (v.isTensorList()) {
    a.kind = ArgValue::TensorList;
    std::vector<at::Tensor> metas;
    for (const at::Tensor &t : v.toTensorVector()) {
      a.tensors.push_back(tensorRef(t));
      metas.push_back(ctx.metaOf(a.tensors.back()));
    }
    v = metas;
  } else if (v.isOptionalTensorList()) {
    a.kind = ArgValue::TensorList;
    c10::List<std::optional<at::Tensor>> metas;
    for (const std::optional<at::Tensor> &t : v.toOptionalTensorList()) {
      int id = t ? tensorRef(*t) : -1;
      a.tensors.push_back(id);
      metas.push_back(id < 0 ? std::optional<at::Tensor>() : ctx.metaOf(id));
    }
    v = metas;
  } else if (v.isBool()) {
    a.kind = ArgValue::Bool;
    a.b = v.toBool();
  } else if (v.isInt()) {
    a.kind = ArgValue::Int;
    a.i = v.toInt();
  } else if (v.isDouble()) {
    a.kind = ArgValue::Double;
    a.d = v.toDouble();
  } else if (v.isString()) {
    a.kind = ArgValue::String;
    a.s = v.toStringRef();
  } else if (v.isIntList()) {
    a.kind = ArgValue::IntList;
    a.ints = v.toIntVector();
  } else if (v.isBoolList()) {
    a.kind = ArgValue::BoolList;
    for (bool x : v.toBoolList())
      a.ints.push_back(x);
  } else if (v.isDoubleList()) {
    a.kind = ArgValue::DoubleList;
    a.doubles = v.toDoubleVector();
  } else if (v.isDevice()) {
    a.kind = ArgValue::Device;
    a.s = v.toDevice().str();
    // The tracers' device, or the segment's (a replayed CUDA node names it).
    if (c10::Device(a.s) != c10::Device(ctx.tracerDevice()) &&
        c10::Device(a.s) != c10::Device(ctx.device()))
      throw GraphBreak(op, "moves data to " + a.s);
    a.s = ctx.device();
    v = c10::Device(at::kMeta);
  } else {
    throw GraphBreak(op, "has an argument of type " + v.tagKind() +
                             " that capture does not support");
  }
  return a;
}

/// The argument a mutating return aliases (same alias set, written).
std::optional<size_t> writtenArgument(const c10::FunctionSchema &s,
                                      size_t ret) {
  const c10::AliasInfo *r = s.returns()[ret].alias_info();
  if (!r || !r->isWrite())
    return std::nullopt;
  for (size_t i = 0; i < s.arguments().size(); ++i) {
    const c10::AliasInfo *a = s.arguments()[i].alias_info();
    if (a && a->isWrite() && a->beforeSets() == r->beforeSets())
      return i;
  }
  return std::nullopt;
}

/// Replaces every defined tensor held by `v` (a tensor, a tensor list or an
/// optional-tensor list) with f(tensor); other values are left alone.
template <class F> void mapTensors(c10::IValue &v, F f) {
  if (v.isTensor()) {
    if (v.toTensor().defined())
      v = f(v.toTensor());
  } else if (v.isTensorList()) {
    std::vector<at::Tensor> ts;
    for (const at::Tensor &t : v.toTensorVector())
      ts.push_back(t.defined() ? f(t) : t);
    v = ts;
  } else if (v.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> ts;
    for (const std::optional<at::Tensor> &t : v.toOptionalTensorList())
      ts.push_back(t && t->defined() ? std::optional<at::Tensor>(f(*t)) : t);
    v = ts;
  } else if (v.isList()) {
    c10::List<c10::IValue> ts(v.toList().elementType());
    for (const c10::IValue &e : v.toListRef())
      ts.push_back(e.isTensor() && e.toTensor().defined() ? c10::IValue(f(e.toTensor())) : e);
    v = ts;
  }
}

bool hasMetaKernel(const c10::OperatorHandle &op) {
  return op.hasKernelForDispatchKey(c10::DispatchKey::Meta) ||
         op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
}

/// Ops whose output shapes depend on tensor values: no example can stand
/// in for them.
bool isDataDependent(const c10::FunctionSchema &s) {
  return ops::hostUseOf(s.name(), s.overload_name()) == ops::HostUse::DataDependentShape;
}

/// Whether the arguments from `base` hold a boolean (or uint8) index in a
/// `Tensor?[]`: `x[mask]` selects as many elements as the mask holds true.
bool indexesByMask(const torch::jit::Stack &stack, size_t base) {
  for (size_t i = base; i < stack.size(); ++i)
    if (stack[i].isOptionalTensorList())
      for (const std::optional<at::Tensor> &t : stack[i].toOptionalTensorList())
        if (t && t->defined() &&
            (t->scalar_type() == at::kBool || t->scalar_type() == at::kByte))
          return true;
  return false;
}

/// Output metadata for an op that has no C++ Meta kernel (many pointwise ops
/// only have Python meta registrations): run its CPU kernel once on zeros of
/// the same sizes, strides and dtypes and keep only the outputs' metadata.
/// Values never matter, except for data-dependent ops and
/// boolean-mask indexing, which break instead.
void runByExample(const c10::OperatorHandle &op, torch::jit::Stack &stack,
                  const std::string &name) {
  const size_t n = op.schema().arguments().size();
  if (isDataDependent(op.schema()) || indexesByMask(stack, stack.size() - n))
    throw GraphBreak(name, "its output shape depends on tensor values");
  constexpr int64_t kMaxExampleBytes = int64_t(256) << 20;
  int64_t bytes = 0;
  auto toExample = [&](const at::Tensor &meta) {
    bytes += meta.numel() * meta.element_size();
    if (bytes > kMaxExampleBytes)
      throw GraphBreak(name, "has no Meta kernel and its inputs are too large "
                             "to infer shapes by example");
    at::Tensor t = at::empty_strided(meta.sizes(), meta.strides(),
                                     at::TensorOptions().dtype(meta.scalar_type()));
    t.zero_();
    if (meta.unsafeGetTensorImpl()->is_wrapped_number())
      t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return t;
  };
  // Statistics a CUDA graph holds in float (ops::statsArgsOf) take the CPU
  // kernel's dtype, the data argument's, in the example.
  const size_t first = stack.size() - n;
  const uint16_t stats = ops::statsArgsOf(op.schema().name(), op.schema().overload_name());
  std::optional<at::ScalarType> statsType;
  if (stats && n > 1 && stack[first + 1].isTensor())
    statsType = stack[first + 1].toTensor().scalar_type();
  for (size_t i = first; i < stack.size(); ++i) {
    if (stack[i].isDevice())
      stack[i] = c10::Device(at::kCPU);
    else if (statsType && i - first < 16 && (stats >> (i - first) & 1) && stack[i].isTensor() &&
             stack[i].toTensor().defined())
      stack[i] = toExample(metaLike(stack[i].toTensor().sizes(), stack[i].toTensor().strides(),
                                    *statsType));
    else
      mapTensors(stack[i], toExample);
  }
  op.callBoxed(&stack);
  const size_t r = op.schema().returns().size();
  for (size_t i = stack.size() - r; i < stack.size(); ++i)
    mapTensors(stack[i], [](const at::Tensor &t) { return metaLike(t); });
}

TraceContext *contextOf(const torch::jit::Stack &stack, size_t n) {
  for (size_t i = stack.size() - n; i < stack.size(); ++i)
    if (stack[i].isTensor())
      if (TracerTensorImpl *t = asTracer(stack[i].toTensor()))
        return t->ctx;
  return currentContext;
}

/// Tracks which values alias the graph's inputs and whether `node` (of
/// `schema`) writes one: a prediction's guard can only be checked after the
/// graph ran, so the graph must have left its inputs as they were.
void noteAliases(TraceContext &ctx, const c10::FunctionSchema &schema, const SegmentNode &node) {
  // Ops that write or alias without saying so in their schema: batch norm
  // in training updates its running statistics; the unsafe views alias.
  const std::string &name = schema.name();
  bool hiddenWrite = name.find("batch_norm") != std::string::npos &&
                     name.find("backward") == std::string::npos &&
                     name.find("no_training") == std::string::npos;
  for (size_t k = 0; hiddenWrite && k < node.args.size() && k < schema.arguments().size(); ++k)
    if (schema.arguments()[k].name() == "training" && node.args[k].kind == ArgValue::Bool)
      hiddenWrite = node.args[k].b; // eval mode reads the statistics only
  bool unsafeView = name.find("unsafe") != std::string::npos;
  bool fromInput = false;
  for (size_t k = 0; k < node.args.size() && k < schema.arguments().size(); ++k) {
    const c10::AliasInfo *a = schema.arguments()[k].alias_info();
    if (!a && (hiddenWrite || unsafeView))
      for (int id : node.args[k].tensors)
        if (id >= 0 && ctx.aliasesInput(id)) {
          fromInput = true;
          if (hiddenWrite)
            ctx.noteInputWrite();
        }
    if (!a)
      continue;
    for (int id : node.args[k].tensors)
      if (id >= 0 && ctx.aliasesInput(id)) {
        fromInput = true;
        if (a->isWrite())
          ctx.noteInputWrite();
      }
  }
  if (!fromInput)
    return;
  bool aliasedReturn = unsafeView;
  for (const c10::Argument &r : schema.returns())
    aliasedReturn = aliasedReturn || r.alias_info();
  if (aliasedReturn)
    for (int id : node.outputs)
      if (id >= 0)
        ctx.noteInputAlias(id);
}

/// The value of `t` as capture knows it: a small real CPU tensor's own, a
/// tracer's `known`; undefined when unknown.
at::Tensor knownValue(const at::Tensor &t) {
  if (!t.defined())
    return t;
  if (TracerTensorImpl *tr = asTracer(t))
    return tr->known;
  if (t.device().is_cpu() && t.numel() <= kMaxKnownElements && !t.requires_grad() &&
      t.layout() == at::kStrided)
    return t;
  return {};
}

/// Runs `op` for real on the known values of its arguments (`originals`,
/// as the program passed them): the results, or nullopt when an argument's
/// value is unknown, the op draws random numbers, or it fails. Real
/// arguments are copied first, so in-place ops never touch program data.
std::optional<torch::jit::Stack> runOnKnown(const c10::OperatorHandle &op,
                                            const std::vector<c10::IValue> &originals) {
  if (op.hasTag(at::Tag::nondeterministic_seeded) || op.schema().is_vararg())
    return std::nullopt;
  OutsideTrace outside;
  torch::jit::Stack stack;
  bool known = true;
  for (c10::IValue v : originals) {
    bool plainList = !v.isList() || v.isIntList() || v.isDoubleList() || v.isBoolList() ||
                     v.isTensorList() || v.isOptionalTensorList();
    if (!plainList) // a generic list may hold tracers mapTensors does not reach
      return std::nullopt;
    if (v.isDevice())
      v = c10::Device(at::kCPU);
    mapTensors(v, [&](const at::Tensor &t) {
      at::Tensor k = knownValue(t);
      known = known && k.defined();
      return k.defined() ? k.clone() : t;
    });
    stack.push_back(std::move(v));
  }
  if (!known)
    return std::nullopt;
  try {
    op.callBoxed(&stack);
  } catch (const c10::Error &) {
    return std::nullopt;
  }
  for (const c10::IValue &r : stack) {
    bool small = true;
    c10::IValue copy = r;
    mapTensors(copy, [&](const at::Tensor &t) {
      small = small && t.numel() <= kMaxKnownElements;
      return t;
    });
    if (!small)
      return std::nullopt;
  }
  return stack;
}

/// `_local_scalar_dense(t)` (item(), int(), float(), bool() of a tensor)
/// where capture knows t's value: answered from it, with a guard in the
/// graph that t still holds it (run eagerly when it does not). Replaces the
/// argument on `stack` with the answer; false when the value is unknown.
bool answerKnownRead(TraceContext &ctx, torch::jit::Stack *stack, size_t base) {
  bool fixed = ctx.knownValuesFixed();
  if (!(fixed || ctx.canSpeculate()) || stack->size() != base + 1 || !(*stack)[base].isTensor())
    return false;
  const at::Tensor t = (*stack)[base].toTensor();
  const at::Tensor value = knownValue(t);
  if (!value.defined() || value.numel() != 1)
    return false;
  c10::Scalar answer;
  {
    OutsideTrace outside;
    answer = value.item();
  }
  if (!fixed) {
    // A placeholder first: should the guard's own ops break, the capture
    // aborts before anything runs.
    ctx.addGuard(-1);
    at::Tensor differs = at::ne(t, answer).any(); // traced: the guard's ops join the graph
    ctx.setLastGuard(ctx.valueOf(differs));
  }
  stack->resize(base);
  stack->emplace_back(answer);
  return true;
}

/// `equal(a, b)` where a and b are the same traced value (eager's fast path:
/// same storage, offset, strides and dtype): true for integer types, and
/// for floating types true unless a holds a NaN, recorded as a guard.
/// Replaces the arguments on `stack` with the answer; false when the call
/// is not of that form (it breaks as usual).
bool predictEqual(TraceContext &ctx, torch::jit::Stack *stack, size_t base) {
  if (!ctx.canSpeculate() || stack->size() != base + 2 || !(*stack)[base].isTensor() ||
      !(*stack)[base + 1].isTensor())
    return false;
  const at::Tensor &a = (*stack)[base].toTensor(), &b = (*stack)[base + 1].toTensor();
  TracerTensorImpl *ta = asTracer(a), *tb = asTracer(b);
  if (!ta || !tb || ta->ctx != &ctx || tb->ctx != &ctx || ta->segment != ctx.segmentIndex() ||
      tb->segment != ctx.segmentIndex() || ta->id != tb->id || a.sizes() != b.sizes() ||
      a.strides() != b.strides() || a.storage_offset() != b.storage_offset() ||
      a.scalar_type() != b.scalar_type())
    return false;
  if (at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type())) {
    // A placeholder first: should the guard's own ops break, the capture
    // aborts before anything runs.
    ctx.addGuard(-1);
    at::Tensor nan = at::isnan(a).any(); // traced: the guard's ops join the graph
    ctx.setLastGuard(ctx.valueOf(nan));
  }
  stack->resize(base);
  stack->emplace_back(true);
  return true;
}

/// Records the op on `stack` (arguments from `base`) into the current
/// segment and leaves tracer results on the stack. Throws GraphBreak, before
/// changing any tracer, when the op cannot be traced.
void traceOp(TraceContext &ctx, const c10::OperatorHandle &op,
             torch::jit::Stack *stack, size_t base,
             const std::vector<c10::IValue> &originals) {
  const c10::FunctionSchema &schema = op.schema();
  const std::string name = qualifiedName(schema);
  if (schema.name() == "aten::equal" && predictEqual(ctx, stack, base))
    return;
  if (schema.name() == "aten::_local_scalar_dense" && answerKnownRead(ctx, stack, base))
    return;
  if (needsHostValue(schema))
    throw GraphBreak(name, "needs a tensor's value on the host (item(), bool "
                           "conversion or a comparison read on the CPU)");
  SegmentNode node;
  node.op = schema.name();
  node.overload = schema.overload_name();
  node.mutates = schema.is_mutable();
  const bool factory = isFactory(schema);
  for (size_t i = base, k = 0; i < stack->size(); ++i, ++k)
    node.args.push_back(recordArg(ctx, (*stack)[i], schema.arguments()[k], name, factory));

  try {
    OutsideTrace outside;
    bool done = false;
    if (hasMetaKernel(op)) {
      // A composite Meta kernel may still reach an op without one.
      std::vector<c10::IValue> metaArgs(stack->begin() + base, stack->end());
      try {
        op.callBoxed(stack);
        done = true;
      } catch (const c10::NotImplementedError &) {
        stack->resize(base);
        stack->insert(stack->end(), metaArgs.begin(), metaArgs.end());
      }
    }
    if (!done)
      runByExample(op, *stack, name);
  } catch (const GraphBreak &) {
    throw;
  } catch (const c10::Error &e) {
    // Known values give the shapes where an example of zeros cannot (an
    // integer division of sizes, say).
    std::optional<torch::jit::Stack> real = runOnKnown(op, originals);
    if (!real)
      throw GraphBreak(name, std::string("its Meta kernel failed (no Meta kernel "
                                         "or a data-dependent shape): ") +
                                 e.what_without_backtrace());
    stack->resize(base);
    for (c10::IValue r : *real) {
      mapTensors(r, [](const at::Tensor &t) { return metaLike(t); });
      stack->push_back(std::move(r));
    }
  }
  // The results' values, when capture knows every argument's.
  std::optional<torch::jit::Stack> knownResults;
  {
    bool allKnown = true; // and every result small (by its Meta stand-in)
    for (size_t i = base; i < stack->size(); ++i) {
      c10::IValue copy = (*stack)[i];
      mapTensors(copy, [&](const at::Tensor &t) {
        allKnown = allKnown && t.numel() <= kMaxKnownElements;
        return t;
      });
    }
    for (const c10::IValue &v : originals) {
      c10::IValue copy = v;
      mapTensors(copy, [&](const at::Tensor &t) {
        allKnown = allKnown && knownValue(t).defined();
        return t;
      });
    }
    if (allKnown)
      knownResults = runOnKnown(op, originals);
    if (knownResults && knownResults->size() != stack->size() - base)
      knownResults.reset();
  }
  auto knownOf = [&](size_t j) -> const c10::IValue * {
    return knownResults ? &(*knownResults)[j] : nullptr;
  };

  for (size_t i = base; i < stack->size(); ++i)
    if (!(*stack)[i].isTensor() && !(*stack)[i].isTensorList())
      throw GraphBreak(name, "returns a " + (*stack)[i].tagKind() +
                                 ", a value the host must read");
  // Shapes inferred on the CPU carry its dtypes; where ATen's CUDA kernel
  // returns float statistics for half inputs, a CUDA graph gets those.
  if (uint8_t floats = ops::floatOnCudaOf(node.op, node.overload);
      floats && c10::Device(ctx.device()).is_cuda() && !originals.empty() &&
      originals[0].isTensor()) {
    at::ScalarType in = originals[0].toTensor().scalar_type();
    for (size_t j = 0, i = base; i < stack->size() && j < 8; ++j, ++i)
      if ((floats >> j & 1) && (in == at::kHalf || in == at::kBFloat16) &&
          (*stack)[i].isTensor() && (*stack)[i].toTensor().defined()) {
        const at::Tensor &r = (*stack)[i].toTensor();
        (*stack)[i] = metaLike(r.sizes(), r.strides(), at::kFloat);
      }
  }
  for (size_t j = 0, i = base; i < stack->size(); ++j, ++i) {
    c10::IValue &r = (*stack)[i];
    if (r.isTensor() && !r.toTensor().defined()) {
      node.outputs.push_back(-1); // a result the op leaves undefined (output_mask)
      continue;
    }
    if (r.isTensor()) {
      at::Tensor meta = r.toTensor();
      int id = ctx.addValue(meta);
      node.outputs.push_back(id);
      if (auto arg = writtenArgument(schema, j)) {
        // In-place/out= ops return the argument itself, now a new version.
        at::Tensor self = originals[*arg].toTensor();
        if (TracerTensorImpl *t = asTracer(self)) {
          t->segment = ctx.segmentIndex();
          t->id = id;
          t->materialized.reset();
          t->known.reset();
          t->setLayout(meta);
        }
        r = self;
      } else {
        r = ctx.makeTracer(id, meta);
      }
      const c10::IValue *k = knownOf(j);
      if (TracerTensorImpl *t = asTracer(r.toTensor()); t && k && k->isTensor())
        t->known = k->toTensor();
    } else {
      std::vector<at::Tensor> outs;
      const c10::IValue *k = knownOf(j);
      std::vector<at::Tensor> values;
      if (k && k->isTensorList())
        values = k->toTensorVector();
      for (const at::Tensor &meta : r.toTensorVector()) {
        int id = ctx.addValue(meta);
        node.outputs.push_back(id);
        outs.push_back(ctx.makeTracer(id, meta));
        if (values.size() > outs.size() - 1)
          asTracer(outs.back())->known = values[outs.size() - 1];
      }
      r = outs;
    }
  }
  noteAliases(ctx, schema, node);
  ctx.addNode(std::move(node));
}

/// At a graph break: run the pending segment, then the breaking op eagerly
/// on real tensors; capture resumes with the next op.
void runAtBreak(TraceContext &ctx, const c10::OperatorHandle &op,
                torch::jit::Stack *stack, size_t base, const GraphBreak &why) {
  ctx.abortIfPredicted("graph break at " + why.op); // before anything is counted or run
  counters().graphBreaks++;
  log("graph_breaks", "segment " + std::to_string(ctx.segmentIndex()) +
                          " ends at " + why.op + ": " + why.reason);
  ctx.breakAt(why);
  for (size_t i = base; i < stack->size(); ++i)
    mapTensors((*stack)[i], [&](const at::Tensor &t) { return ctx.realOf(t); });
  if (op.schema().is_mutable())
    ctx.noteRanWrite();
  OutsideTrace outside;
  op.callBoxed(stack);
}

/// TorchScript hands a `Tensor?[]` argument (index's indices) over as the
/// generic list prim::ListConstruct builds, not as the typed list C++
/// callers pass; recording and the eager run at a break read the typed one.
void typeOptionalTensorLists(const c10::FunctionSchema &schema, torch::jit::Stack &stack,
                             size_t base) {
  for (size_t i = base; i < stack.size(); ++i) {
    c10::IValue &v = stack[i];
    if (!v.isList() || v.isOptionalTensorList() ||
        *schema.arguments()[i - base].type() != *c10::ListType::ofOptionalTensors())
      continue;
    c10::List<std::optional<at::Tensor>> typed;
    for (const c10::IValue &e : v.toListRef())
      typed.push_back(e.isTensor() ? e.toTensor() : std::optional<at::Tensor>());
    v = typed;
  }
}

void tracerFallback(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
  // The tracer runs ATen only on Meta and real tensors; a tracer tensor
  // among them would bring it back here for the op it is running, and
  // again, until the stack overflows. Fail this capture instead.
  TORCH_CHECK(!redispatching, "tgc: internal error: capture re-entered itself at ",
              qualifiedName(op.schema()),
              " (a tracer tensor reached an op the tracer runs on Meta or real tensors)");
  if (faultInjected(FaultStage::Capture))
    throw std::runtime_error(injectedFaultMessage(FaultStage::Capture));
  const size_t nArgs = op.schema().arguments().size();
  TraceContext *ctx = contextOf(*stack, nArgs);
  TORCH_CHECK(ctx, "tgc: a tracer tensor reached ", qualifiedName(op.schema()),
              " outside of capture; tracer tensors must not escape tgc::compile");
  const size_t base = stack->size() - nArgs;
  typeOptionalTensorLists(op.schema(), *stack, base);
  std::vector<c10::IValue> originals(stack->begin() + base, stack->end());
  try {
    traceOp(*ctx, op, stack, base, originals);
  } catch (const GraphBreak &b) {
    if (!ctx->canBreak())
      throw;
    stack->resize(base);
    stack->insert(stack->end(), originals.begin(), originals.end());
    runAtBreak(*ctx, op, stack, base, b);
  }
}

} // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse2, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&tracerFallback>());
}

/// Routes to the tracer the ATen ops whose generic (composite) kernels
/// would otherwise run on tracer tensors and fail: structured ops (their
/// CompositeExplicitAutogradNonFunctional kernels build a TensorIterator over
/// data) and every composite-explicit op. CompositeImplicitAutograd ops
/// still decompose above the tracer, as they do for any backend.
static void registerTracerKernels() {
  static torch::Library *lib = nullptr;
  if (lib)
    return;
  lib = new torch::Library(torch::Library::IMPL, "aten", kTracerKey, __FILE__,
                           __LINE__);
  auto &dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName &name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0)
      continue;
    auto op = dispatcher.findOp(name);
    if (!op || !op->hasSchema() || op->hasKernelForDispatchKey(kTracerKey))
      continue;
    const c10::FunctionSchema &schema = op->schema();
    bool structured = op->hasKernelForDispatchKey(
        c10::DispatchKey::CompositeExplicitAutogradNonFunctional);
    bool view = op->hasKernelForDispatchKey(
                    c10::DispatchKey::CompositeExplicitAutograd) &&
                !schema.returns().empty() && schema.returns()[0].alias_info() &&
                !schema.returns()[0].alias_info()->isWrite();
    // Every other composite-explicit op is captured whole too: their
    // generic kernels may touch storage (_unsafe_view, copy_, fill_), and
    // where a backend has a dedicated kernel (native_layer_norm) that is
    // what eager runs. Their Meta computation still uses the generic kernel.
    bool composite =
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
    if (!structured && !view && !composite)
      continue;
    std::string qualified = name.name.substr(6);
    if (!name.overload_name.empty())
      qualified += "." + name.overload_name;
    lib->impl(qualified.c_str(),
              torch::CppFunction::makeFromBoxedFunction<&tracerFallback>());
  }
}

} // namespace tgc
