//===- Freeze.cpp - weights as constants of an inference graph ------------===//
#include "compiler/freeze/Freeze.h"

#include "compiler/autotune/Autotune.h"

#include "compiler/ops/OpRegistry.h"
#include "runtime/ArtifactCache.h"
#include "runtime/Executor.h"
#include "runtime/Log.h"

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/hardsigmoid.h>
#include <ATen/ops/hardswish.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

namespace tgc {

namespace {

/// NHWC strides of an NCHW-shaped 4-d tensor.
std::vector<int64_t> channelsLastStrides(const std::vector<int64_t> &sizes) {
  const int64_t c = std::max<int64_t>(sizes[1], 1), h = std::max<int64_t>(sizes[2], 1),
                w = std::max<int64_t>(sizes[3], 1);
  return {h * w * c, 1, w * c, c};
}

bool isRandom(const std::string &op) {
  for (const char *word : {"rand", "bernoulli", "dropout", "normal", "uniform", "multinomial",
                           "poisson", "exponential", "cauchy", "geometric"})
    if (op.find(word) != std::string::npos)
      return true;
  return false;
}

std::optional<c10::OperatorHandle> findOp(const std::string &op, const std::string &overload) {
  return c10::Dispatcher::singleton().findSchema({op, overload});
}

/// Tensor value ids a mutating node writes: the arguments its schema marks
/// written (all tensor arguments when the schema is not found).
std::vector<int> writtenArgs(const SegmentNode &n) {
  std::optional<c10::OperatorHandle> op = findOp(n.op, n.overload);
  if (!op || op->schema().arguments().size() != n.args.size())
    return n.tensorArgs();
  std::vector<int> ids;
  const auto &schemaArgs = op->schema().arguments();
  for (size_t k = 0; k < n.args.size(); ++k) {
    const c10::AliasInfo *alias = schemaArgs[k].alias_info();
    if (!alias || !alias->isWrite())
      continue;
    const ArgValue &a = n.args[k];
    if (a.kind == ArgValue::Tensor || a.kind == ArgValue::TensorList)
      for (int t : a.tensors)
        if (t >= 0)
          ids.push_back(t);
  }
  return ids;
}

/// Whether this CPU runs oneDNN's bf16 kernels (AVX-512 or newer; asked
/// once through mkldnn::_is_mkldnn_bf16_supported).
bool oneDnnHasBFloat16() {
  static const bool has = [] {
    std::optional<c10::OperatorHandle> op = findOp("mkldnn::_is_mkldnn_bf16_supported", "");
    if (!op)
      return false;
    try {
      std::vector<c10::IValue> stack;
      op->callBoxed(&stack);
      return !stack.empty() && stack[0].toBool();
    } catch (const std::exception &) {
      return false;
    }
  }();
  return has;
}

class Freezer {
public:
  Freezer(const Segment &seg, size_t userInputs, const std::vector<at::Tensor> &lifted,
          size_t guards, autotune::Session *session)
      : session_(session), guards_(guards), seg_(seg), userInputs_(userInputs), lifted_(lifted), known_(seg.values.size()),
        roots_(seg.values.size()) {}

  bool run(Frozen &out, std::string &why) {
    // Without grad mode no gradient is taken: weights that require grad are
    // constants of this (no-grad) specialization too.
    const bool grad = at::GradMode::is_enabled();
    for (size_t i = 0; i < lifted_.size(); ++i)
      if ((!grad || !lifted_[i].requires_grad()) && lifted_[i].layout() == at::kStrided) {
        known_[seg_.inputs[userInputs_ + i]] = lifted_[i];
        roots_[seg_.inputs[userInputs_ + i]] = {i};
        source_.push_back(i);
      }
    if (source_.empty()) {
      why = "no lifted tensor is a constant (they require grad)";
      return false;
    }
    // The guards (the last outputs) are read by the executable, never
    // returned: a guard computed from constants may fold.
    for (size_t k = 0; k + guards_ < seg_.outputs.size(); ++k)
      isOutput_.insert(seg_.outputs[k]);
    if (!fold(why))
      return false;
    countUses();
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (isConvolution(nodes_[i]))
        rewriteConvolution(i);
      else if (isLinear(nodes_[i]))
        rewriteLinear(i);
    dropDeleted();
    if (out_.foldedOps + out_.foldedBatchNorms + out_.fusedConvolutions + out_.atenConvolutions +
            out_.packedLinears ==
        0) {
      why = "nothing to compute from the weights alone";
      return false;
    }
    preferChannelsLast();
    build(out);
    return true;
  }

private:
  /// Runs every node whose tensor arguments are all constants; the others
  /// go to nodes_.
  bool fold(std::string &why) {
    std::unordered_set<int> tainted; // views of constants left in the graph
    for (const SegmentNode &n : seg_.nodes) {
      std::vector<int> args = n.tensorArgs();
      bool allKnown = !args.empty(), anyConstant = false;
      for (int t : args) {
        allKnown = allKnown && known_[t].defined();
        anyConstant = anyConstant || known_[t].defined() || tainted.count(t);
      }
      if (n.mutates) {
        for (int t : writtenArgs(n))
          if (known_[t].defined() || tainted.count(t)) {
            why = n.op + " writes a weight (or a view of one)";
            return false;
          }
        nodes_.push_back(n);
        continue;
      }
      if (allKnown && foldNode(n)) {
        out_.foldedOps++;
        continue;
      }
      if (anyConstant && ops::aliasOf(n.op, n.overload) != ops::Alias::None)
        for (int o : n.outputs)
          if (o >= 0)
            tainted.insert(o);
      nodes_.push_back(n);
    }
    return true;
  }

  bool foldNode(const SegmentNode &n) {
    if (isRandom(n.op))
      return false;
    for (int o : n.outputs)
      if (o >= 0 && isOutput_.count(o))
        return false; // a fresh tensor per call, as eager returns
    std::optional<c10::OperatorHandle> op = findOp(n.op, n.overload);
    if (!op)
      return false;
    int64_t in = 0, made = 0;
    for (int t : n.tensorArgs())
      in += known_[t].numel();
    for (int o : n.outputs)
      if (o >= 0) {
        int64_t numel = 1;
        for (int64_t d : seg_.values[o].sizes)
          numel *= d;
        made += numel;
      }
    if (made > in + 64)
      return false; // an expand or repeat: computing it per call is cheaper than keeping it
    try {
      const auto &schemaArgs = op->schema().arguments();
      if (schemaArgs.size() != n.args.size())
        return false;
      std::vector<c10::IValue> stack;
      for (size_t i = 0; i < n.args.size(); ++i)
        stack.push_back(argToIValue(n.args[i], schemaArgs[i], known_));
      op->callBoxed(&stack);
      std::vector<at::Tensor> results;
      if (!stackTensors(stack, results) || results.size() != n.outputs.size())
        return false;
      for (size_t k = 0; k < results.size(); ++k) {
        int o = n.outputs[k];
        if (o < 0)
          continue;
        const TensorSpec &s = seg_.values[o];
        if (results[k].sizes() != c10::IntArrayRef(s.sizes) ||
            results[k].scalar_type() != toScalarType(s.dtype))
          return false;
      }
      for (size_t k = 0; k < results.size(); ++k)
        if (n.outputs[k] >= 0) {
          // The graph was compiled for the recorded layout.
          known_[n.outputs[k]] = withSpecStrides(results[k], seg_.values[n.outputs[k]]);
          computed_.insert(n.outputs[k]);
          for (int t : n.tensorArgs())
            roots_[n.outputs[k]].insert(roots_[n.outputs[k]].end(), roots_[t].begin(),
                                        roots_[t].end());
        }
      return true;
    } catch (const std::exception &e) {
      log("freeze", "not folded: " + n.op + ": " + e.what());
      return false;
    }
  }

  void countUses() {
    uses_.assign(seg_.values.size(), 0);
    for (const SegmentNode &n : nodes_)
      for (int t : n.tensorArgs())
        uses_[t]++;
    for (int o : seg_.outputs)
      uses_[o]++;
  }

  bool isKnownOrNone(const ArgValue &a) const {
    return a.kind == ArgValue::None || (a.kind == ArgValue::Tensor && known_[a.tensors[0]].defined());
  }

  bool isConvolution(const SegmentNode &n) const {
    const bool full = n.op == "aten::_convolution" && n.args.size() == 13;
    const bool plain = n.op == "aten::convolution" && n.args.size() == 9;
    if (!(full || plain) || seg_.device != "cpu" || n.outputs.size() != 1 || n.outputs[0] < 0)
      return false;
    const ArgValue &x = n.args[0], &w = n.args[1], &b = n.args[2];
    if (x.kind != ArgValue::Tensor || w.kind != ArgValue::Tensor || !known_[w.tensors[0]].defined() ||
        !isKnownOrNone(b) || known_[x.tensors[0]].defined())
      return false;
    const TensorSpec &xs = seg_.values[x.tensors[0]];
    const at::Tensor &weight = known_[w.tensors[0]];
    const bool dtypeOk = (xs.dtype == DType::Float32 && weight.scalar_type() == at::kFloat) ||
                         (xs.dtype == DType::BFloat16 && weight.scalar_type() == at::kBFloat16 &&
                          oneDnnHasBFloat16());
    return xs.sizes.size() == 4 && dtypeOk && weight.dim() == 4 &&
           n.args[6].kind == ArgValue::Bool && !n.args[6].b /* transposed */ &&
           n.args[8].kind == ArgValue::Int;
  }

  /// The single node reading `v` (as any argument), or -1.
  int soleReader(int v) const {
    if (v < 0 || uses_[v] != 1 || isOutput_.count(v))
      return -1;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (!deleted_.count(i))
        for (int t : nodes_[i].tensorArgs())
          if (t == v)
            return (int)i;
    return -1;
  }

  /// A constant computed from the constants `from`.
  int addConstant(at::Tensor t, const std::vector<int> &from) {
    int id = (int)seg_.values.size();
    seg_.values.push_back(specOf(t));
    known_.push_back(std::move(t));
    uses_.push_back(0);
    roots_.emplace_back();
    for (int f : from)
      if (f >= 0)
        roots_[id].insert(roots_[id].end(), roots_[f].begin(), roots_[f].end());
    computed_.insert(id);
    return id;
  }

  /// What oneDNN fuses into a convolution (or linear layer) writing `y`:
  /// the activation reading it, else a residual add (with a relu after it).
  struct Epilogue {
    int act = -1;              ///< the activation node fused
    std::string attr = "none"; ///< its name in oneDNN's terms
    std::string algorithm;     ///< gelu's
    int add = -1, other = -1;  ///< the residual add and its other operand
    int relu = -1;             ///< a relu after the add
    std::string text() const {
      std::string t = other >= 0 ? "add" : attr;
      if (!algorithm.empty())
        t += "(" + algorithm + ")";
      return relu >= 0 ? t + "+relu" : t;
    }
  };

  Epilogue epilogueOf(size_t index, int y, bool residual) const {
    Epilogue e;
    int r = soleReader(y);
    if (activationOf(r, y, e.attr, e.algorithm)) {
      e.act = r;
      return e;
    }
    e.attr = "none";
    e.algorithm.clear();
    if (!residual || r < 0)
      return e;
    int other = residualOf(nodes_[r], y);
    for (int k = (int)index + 1; k < r && other >= 0; ++k)
      if (!deleted_.count(k) && nodes_[k].mutates)
        other = -1; // the convolution moves to the add: nothing may write in between
    if (other < 0)
      return e;
    e.add = r;
    e.other = other;
    int z = nodes_[r].outputs[0];
    int r2 = soleReader(z);
    if (r2 >= 0 && (nodes_[r2].op == "aten::relu" || nodes_[r2].op == "aten::relu_") &&
        nodes_[r2].args[0].tensors[0] == z)
      e.relu = r2;
    return e;
  }

  /// A tensor of `s`'s shape and dtype with random values (a generator of
  /// its own: the user's random state is left alone), channels-last when
  /// `channelsLast` and 4-d.
  static at::Tensor randomLike(const TensorSpec &s, bool channelsLast, uint64_t seed) {
    at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed);
    at::Tensor t = at::randn(s.sizes, g, at::TensorOptions().dtype(at::kFloat));
    if (channelsLast && s.sizes.size() == 4)
      t = t.contiguous(at::MemoryFormat::ChannelsLast);
    return t.to(toScalarType(s.dtype));
  }

  /// `y` with the epilogue `e` applied by ATen (what tgc's kernel after a
  /// plain call computes), `other` the residual operand.
  static at::Tensor applyEpilogue(at::Tensor y, const Epilogue &e, const at::Tensor &other) {
    if (e.other >= 0) {
      y.add_(other);
      if (e.relu >= 0)
        y.relu_();
      return y;
    }
    if (e.attr == "relu")
      return y.relu_();
    if (e.attr == "sigmoid")
      return y.sigmoid_();
    if (e.attr == "tanh")
      return y.tanh_();
    if (e.attr == "hardswish")
      return at::hardswish_(y);
    if (e.attr == "hardsigmoid")
      return at::hardsigmoid_(y);
    if (e.attr == "swish")
      return at::silu_(y);
    if (e.attr == "gelu")
      return at::gelu_(y, e.algorithm.empty() ? "none" : e.algorithm);
    return y;
  }

  /// The value `v` reaches the graph from outside (a user input or a
  /// lifted tensor): its recorded layout, not the one freezing prefers.
  bool fromOutside(int v) const {
    return std::find(seg_.inputs.begin(), seg_.inputs.end(), v) != seg_.inputs.end();
  }

  static std::string shapeText(const std::vector<int64_t> &sizes) {
    std::string t = "[";
    for (size_t i = 0; i < sizes.size(); ++i)
      t += (i ? "," : "") + std::to_string(sizes[i]);
    return t + "]";
  }

  void rewriteConvolution(size_t index) {
    SegmentNode &conv = nodes_[index];
    at::Tensor weight = known_[conv.args[1].tensors[0]];
    std::optional<at::Tensor> bias;
    if (conv.args[2].kind == ArgValue::Tensor)
      bias = known_[conv.args[2].tensors[0]];
    const std::vector<int64_t> stride = conv.args[3].ints, padding = conv.args[4].ints,
                               dilation = conv.args[5].ints;
    const int64_t groups = conv.args[8].i;
    if (stride.size() != 2 || padding.size() != 2 || dilation.size() != 2)
      return;
    // The constants the new weight and bias are computed from.
    std::vector<int> from = {conv.args[1].tensors[0],
                             conv.args[2].kind == ArgValue::Tensor ? conv.args[2].tensors[0] : -1};
    int y = conv.outputs[0];
    // Batch norm in eval mode after it: fold into the weight and bias.
    int r = soleReader(y);
    if (r >= 0 && foldBatchNorm(nodes_[r], y, weight, bias)) {
      for (int k = 1; k <= 4; ++k)
        if (nodes_[r].args[k].kind == ArgValue::Tensor)
          from.push_back(nodes_[r].args[k].tensors[0]);
      conv.outputs[0] = nodes_[r].outputs[0];
      deleted_.insert(r);
      y = conv.outputs[0];
      out_.foldedBatchNorms++;
    }
    std::optional<c10::OperatorHandle> fused = findOp("mkldnn::_convolution_pointwise", "");
    std::optional<c10::OperatorHandle> fusedBinary =
        findOp("mkldnn::_convolution_pointwise", "binary");
    std::optional<c10::OperatorHandle> reorder = findOp("mkldnn::_reorder_convolution_weight", "");
    const bool oneDnn = fused && fusedBinary && reorder && at::globalContext().userEnabledMkldnn();
    const TensorSpec &xs = seg_.values[conv.args[0].tensors[0]];
    const Epilogue e = epilogueOf(index, y, true);
    // The default mode's choice; max-autotune measures.
    const std::string fallback = !oneDnn ? "weights"
                                 : smallPointwise(conv, weight, stride, padding, dilation, groups)
                                     ? "aten"
                                     : "onednn";
    std::string choice = fallback;
    // oneDNN's packed weight, from tuning when its candidate was built.
    at::Tensor packed;
    auto pack = [&] {
      std::vector<c10::IValue> stack{weight, padding, stride, dilation, groups, xs.sizes};
      reorder->callBoxed(&stack);
      return stack.at(0).toTensor();
    };
    if (session_ && oneDnn) {
      const bool cl = !fromOutside(conv.args[0].tensors[0]);
      const std::string problem =
          "conv2d x" + shapeText(xs.sizes) + dtypeName(xs.dtype) + (cl ? " nhwc" : " nchw") +
          " w" + shapeText(weight.sizes().vec()) + (bias ? " bias" : "") + " s" +
          shapeText(stride) + " p" + shapeText(padding) + " d" + shapeText(dilation) + " g" +
          std::to_string(groups) + " epilogue " + e.text();
      auto make = [&, cl] {
        at::Tensor x = randomLike(xs, cl, 1);
        at::Tensor other = e.other >= 0 ? randomLike(seg_.values[e.other], cl, 2) : at::Tensor();
        std::vector<autotune::Candidate> cs;
        cs.push_back({"aten", [=] {
                        at::Tensor out = at::convolution(x, weight, bias, stride, padding, dilation,
                                                         false, {0, 0}, groups);
                        return applyEpilogue(out, e, other);
                      }});
        packed = pack();
        cs.push_back({"onednn", [=] {
                        std::vector<c10::IValue> s;
                        if (e.other >= 0) {
                          s = {x, other, packed, bias, padding, stride, dilation, groups,
                               std::string("add"), c10::IValue(),
                               e.relu >= 0 ? c10::IValue(std::string("relu")) : c10::IValue(),
                               c10::List<std::optional<c10::Scalar>>(), c10::IValue()};
                          fusedBinary->callBoxed(&s);
                        } else {
                          s = {x, packed, bias, padding, stride, dilation, groups, e.attr,
                               c10::List<std::optional<c10::Scalar>>(),
                               e.algorithm.empty() ? c10::IValue() : c10::IValue(e.algorithm)};
                          fused->callBoxed(&s);
                        }
                        return s.at(0).toTensor();
                      }});
        return cs;
      };
      const std::string what = "conv " + shapeText(weight.sizes().vec()) + " on " +
                               shapeText(xs.sizes) + " " + dtypeName(xs.dtype) + " +" + e.text();
      choice = session_->choose(problem, what, make, fallback);
      if (choice != "aten" && choice != "onednn") {
        log("autotune", what + ": no candidate '" + choice + "' here; using the default choice");
        choice = fallback;
      }
    }
    if (choice == "weights") {
      setWeights(conv, weight, bias, from);
      return;
    }
    if (choice == "aten") {
      keepAtenConvolution(conv, weight, bias, from);
      return;
    }
    try {
      if (!packed.defined())
        packed = pack();
    } catch (const std::exception &ex) {
      log("freeze", std::string("oneDNN does not take this convolution's weight: ") + ex.what());
      setWeights(conv, weight, bias, from);
      return;
    }
    // The activation after it as oneDNN's post-op, or else a residual add
    // (writing the convolution's result, or a new tensor) of a same-shaped
    // tensor, with a relu after it: oneDNN's binary post-op.
    if (e.act >= 0) {
      conv.outputs[0] = nodes_[e.act].outputs[0];
      deleted_.insert(e.act);
      out_.fusedActivations++;
    }
    if (e.add >= 0) {
      deleted_.insert(e.add);
      conv.outputs[0] = nodes_[e.add].outputs[0];
      if (e.relu >= 0) {
        conv.outputs[0] = nodes_[e.relu].outputs[0];
        deleted_.insert(e.relu);
        out_.fusedActivations++;
      }
      out_.fusedResiduals++;
    }
    SegmentNode call;
    call.op = "mkldnn::_convolution_pointwise";
    ArgValue w = ArgValue::ofTensor(addConstant(packed, from));
    ArgValue b = bias ? ArgValue::ofTensor(addConstant(*bias, from)) : ArgValue();
    if (e.other >= 0) {
      call.overload = "binary";
      call.args = {conv.args[0],
                   ArgValue::ofTensor(e.other),
                   w,
                   b,
                   ArgValue::ofInts(padding),
                   ArgValue::ofInts(stride),
                   ArgValue::ofInts(dilation),
                   conv.args[8],
                   ArgValue::ofString("add"),
                   ArgValue(),
                   e.relu < 0 ? ArgValue() : ArgValue::ofString("relu"),
                   ArgValue::ofInts({}),
                   ArgValue()};
    } else {
      call.args = {conv.args[0],
                   w,
                   b,
                   ArgValue::ofInts(padding),
                   ArgValue::ofInts(stride),
                   ArgValue::ofInts(dilation),
                   conv.args[8],
                   ArgValue::ofString(e.attr),
                   ArgValue::ofInts({}),
                   e.algorithm.empty() ? ArgValue() : ArgValue::ofString(e.algorithm)};
    }
    call.outputs = conv.outputs;
    if (e.other >= 0) {
      // At the add's place: the other operand may be computed after the
      // convolution (a downsample branch), and nothing in between reads
      // the convolution's result.
      nodes_[e.add] = std::move(call);
      deleted_.erase(e.add);
      deleted_.insert(index);
    } else {
      conv = std::move(call);
    }
    out_.fusedConvolutions++;
  }

  /// The multiply-adds below which an f32 1x1 convolution stays ATen's,
  /// and the most weights it may have.
  static constexpr int64_t kSmallPointwiseMacs = int64_t(2) * 1000 * 1000;
  static constexpr int64_t kSmallPointwiseWeights = int64_t(64) * 1024;

  /// A 1x1 f32 convolution (stride 1, no padding, one group) of fewer than
  /// kSmallPointwiseMacs multiply-adds and at most kSmallPointwiseWeights
  /// weights. oneDNN's fused call costs about 30 us whatever the size (its
  /// primitive is set up per call); ATen's convolution plus a separate
  /// activation took 8-50 us, 1.35x-3.4x faster for such layers at 2
  /// threads (tgc-bench-conv). From about 2.7M multiply-adds oneDNN's call
  /// is as fast or faster, and so it is for large weights at any size
  /// (160x1280 at 2x2, 0.8M: ATen 50 us, oneDNN 35 us; ATen re-lays the
  /// weight per call).
  bool smallPointwise(const SegmentNode &conv, const at::Tensor &weight,
                      const std::vector<int64_t> &stride, const std::vector<int64_t> &padding,
                      const std::vector<int64_t> &dilation, int64_t groups) const {
    const TensorSpec &xs = seg_.values[conv.args[0].tensors[0]];
    const TensorSpec &ys = seg_.values[conv.outputs[0]];
    if (xs.dtype != DType::Float32 || weight.size(2) != 1 || weight.size(3) != 1 || groups != 1 ||
        stride != std::vector<int64_t>{1, 1} || padding != std::vector<int64_t>{0, 0} ||
        dilation != std::vector<int64_t>{1, 1} || ys.sizes.size() != 4)
      return false;
    if (conv.op == "aten::_convolution") {
      const ArgValue &outputPadding = conv.args[7];
      if (outputPadding.kind != ArgValue::IntList ||
          std::any_of(outputPadding.ints.begin(), outputPadding.ints.end(),
                      [](int64_t v) { return v != 0; }))
        return false;
    }
    const int64_t weights = weight.size(0) * weight.size(1);
    const int64_t macs = ys.sizes[0] * ys.sizes[2] * ys.sizes[3] * weights;
    return macs > 0 && macs < kSmallPointwiseMacs && weights <= kSmallPointwiseWeights;
  }

  /// `conv` as aten::convolution (a typed call in the executor) with the
  /// folded weight and bias and its own stride, padding, dilation and
  /// groups; what reads it stays as it is.
  void keepAtenConvolution(SegmentNode &conv, const at::Tensor &weight,
                           const std::optional<at::Tensor> &bias, const std::vector<int> &from) {
    setWeights(conv, weight, bias, from);
    SegmentNode call;
    call.op = "aten::convolution";
    call.args = {conv.args[0],
                 conv.args[1],
                 conv.args[2],
                 conv.args[3],
                 conv.args[4],
                 conv.args[5],
                 ArgValue::ofBool(false),
                 ArgValue::ofInts({0, 0}),
                 conv.args[8]};
    call.outputs = conv.outputs;
    conv = std::move(call);
    out_.atenConvolutions++;
  }

  /// Node `r` applies an activation oneDNN has as a post-op to `y`: its
  /// name in oneDNN's terms (`attr`, and gelu's `algorithm`).
  bool activationOf(int r, int y, std::string &attr, std::string &algorithm) const {
    if (r < 0 || nodes_[r].args.empty() || nodes_[r].args[0].kind != ArgValue::Tensor ||
        nodes_[r].args[0].tensors[0] != y || nodes_[r].outputs.size() != 1)
      return false;
    const SegmentNode &act = nodes_[r];
    std::string op = act.op.substr(act.op.find("::") + 2);
    if (!op.empty() && op.back() == '_')
      op.pop_back();
    if (op == "relu" || op == "sigmoid" || op == "tanh" || op == "hardswish" || op == "hardsigmoid")
      attr = op;
    else if (op == "silu")
      attr = "swish";
    else if (op == "gelu" && act.args.size() == 2 && act.args[1].kind == ArgValue::String) {
      attr = "gelu";
      algorithm = act.args[1].s;
    } else {
      return false;
    }
    return act.args.size() == 1 || op == "gelu";
  }

  /// A linear layer with constant weights: `addmm(bias, x, w^T)` with beta
  /// and alpha 1, or `mm(x, w^T)`, on the CPU in f32 or bf16.
  bool isLinear(const SegmentNode &n) const {
    const bool addmm = n.op == "aten::addmm" && n.overload.empty() && n.args.size() == 5;
    const bool mm = n.op == "aten::mm" && n.overload.empty() && n.args.size() == 2;
    if (!(addmm || mm) || seg_.device != "cpu" || n.outputs.size() != 1 || n.outputs[0] < 0)
      return false;
    const int xa = addmm ? 1 : 0;
    const ArgValue &x = n.args[xa], &w = n.args[xa + 1];
    if (x.kind != ArgValue::Tensor || w.kind != ArgValue::Tensor ||
        known_[x.tensors[0]].defined() || !known_[w.tensors[0]].defined())
      return false;
    const TensorSpec &xs = seg_.values[x.tensors[0]];
    const at::Tensor &weight = known_[w.tensors[0]];
    if (xs.sizes.size() != 2 || xs.sizes[0] <= 0 || weight.dim() != 2 || weight.size(0) <= 0 ||
        weight.size(1) <= 0 || weight.scalar_type() != toScalarType(xs.dtype))
      return false;
    if (addmm) {
      auto one = [](const ArgValue &a) {
        return (a.kind == ArgValue::Int && a.i == 1) || (a.kind == ArgValue::Double && a.d == 1.0);
      };
      const ArgValue &b = n.args[0];
      if (!one(n.args[3]) || !one(n.args[4]) || b.kind != ArgValue::Tensor ||
          !known_[b.tensors[0]].defined())
        return false;
      const at::Tensor &bias = known_[b.tensors[0]];
      if (bias.numel() != weight.size(1) || bias.size(-1) != weight.size(1) ||
          bias.scalar_type() != weight.scalar_type())
        return false;
    }
    return xs.dtype == DType::Float32 || xs.dtype == DType::BFloat16;
  }

  /// The default mode's implementation of a linear layer: for f32, MKL's
  /// packed sgemm (with the bias in the call) from 1.5M multiply-adds per
  /// layer (DeiT-tiny 11% and Mixer-S 16% faster per call of the model;
  /// below that, in BERT's 32x128x128 layers, it was 5% slower in the model:
  /// addmm writes into the arena and its bias joins the next kernel, though
  /// faster alone, bench/Linear.cpp), else addmm as traced; for bf16,
  /// oneDNN with its activation fused.
  std::string defaultLinearChoice(int64_t m, const at::Tensor &weight) const {
    if (weight.scalar_type() == at::kFloat)
      return mklLinear() && m * weight.size(0) * weight.size(1) >= kPackedSgemmMacs ? "mkl" : "aten";
    return oneDnnLinear() && oneDnnHasBFloat16() ? "onednn" : "aten";
  }

  /// The multiply-adds from which f32 linear layers use MKL's packed GEMM.
  static constexpr int64_t kPackedSgemmMacs = int64_t(1536) * 1024;

  /// Whether MKL's packed GEMM (mkl::_mkl_linear) is there.
  static bool mklLinear() {
    static const bool has = at::hasMKL() && findOp("mkl::_mkl_linear", "").has_value() &&
                            findOp("mkl::_mkl_reorder_linear_weight", "").has_value();
    return has;
  }

  /// Whether oneDNN's linear (mkldnn::_linear_pointwise) is there and on.
  static bool oneDnnLinear() {
    static const bool has = findOp("mkldnn::_linear_pointwise", "").has_value() &&
                            findOp("mkldnn::_reorder_linear_weight", "").has_value();
    return has && at::globalContext().userEnabledMkldnn();
  }

  /// `weight` ([n, k]) packed for `lib` ("mkl" or "onednn") at `m` rows.
  static at::Tensor packLinear(const std::string &lib, const at::Tensor &weight, int64_t m) {
    std::vector<c10::IValue> stack;
    if (lib == "mkl") {
      stack = {weight, m};
      findOp("mkl::_mkl_reorder_linear_weight", "")->callBoxed(&stack);
    } else {
      stack = {weight, c10::IValue(m)};
      findOp("mkldnn::_reorder_linear_weight", "")->callBoxed(&stack);
    }
    return stack.at(0).toTensor();
  }

  /// The linear layer at `index` as a packed library GEMM, by default as
  /// defaultLinearChoice says; under max-autotune the fastest of addmm,
  /// MKL's packed sgemm (f32) and oneDNN with the activation fused, each
  /// with what follows it.
  void rewriteLinear(size_t index) {
    SegmentNode &lin = nodes_[index];
    const bool addmm = lin.op == "aten::addmm";
    const int xa = addmm ? 1 : 0;
    const int wId = lin.args[xa + 1].tensors[0];
    const at::Tensor traced = known_[wId];                 // [k, n], as the graph reads it
    const at::Tensor weight = traced.t().contiguous();     // [n, k], as nn.Linear holds it
    const TensorSpec &xs = seg_.values[lin.args[xa].tensors[0]];
    const int64_t m = xs.sizes[0];
    std::vector<int> from = {wId};
    std::optional<at::Tensor> bias;
    if (addmm) {
      from.push_back(lin.args[0].tensors[0]);
      bias = known_[lin.args[0].tensors[0]].reshape({-1}).contiguous();
    }
    const bool f32 = weight.scalar_type() == at::kFloat;
    std::string choice = defaultLinearChoice(m, weight);
    Epilogue e = epilogueOf(index, lin.outputs[0], false);
    std::map<std::string, at::Tensor> tunedPacked; ///< the weights tuning packed, per library
    if (session_) {
      const std::string problem = "linear x" + shapeText(xs.sizes) + dtypeName(xs.dtype) + " w" +
                                  shapeText(weight.sizes().vec()) + (bias ? " bias" : "") +
                                  " epilogue " + e.text();
      const std::string what = "linear " + std::to_string(m) + "x" +
                               std::to_string(weight.size(1)) + "x" +
                               std::to_string(weight.size(0)) + " " + dtypeName(xs.dtype) + " +" +
                               e.text();
      auto make = [&] {
        at::Tensor x = randomLike(xs, false, 1);
        tunedPacked.clear();
        std::vector<autotune::Candidate> cs;
        at::Tensor b = bias ? *bias : at::Tensor();
        cs.push_back({"aten", [=] {
                        at::Tensor out = b.defined() ? at::addmm(b, x, traced) : at::mm(x, traced);
                        return applyEpilogue(out, e, at::Tensor());
                      }});
        if (f32 && mklLinear()) {
          at::Tensor packed = tunedPacked["mkl"] = packLinear("mkl", weight, m);
          cs.push_back({"mkl", [=] {
                          std::vector<c10::IValue> s{x, packed, weight, bias, m};
                          findOp("mkl::_mkl_linear", "")->callBoxed(&s);
                          return applyEpilogue(s.at(0).toTensor(), e, at::Tensor());
                        }});
        }
        if (oneDnnLinear() && (f32 || oneDnnHasBFloat16())) {
          at::Tensor packed = tunedPacked["onednn"] = packLinear("onednn", weight, m);
          cs.push_back({"onednn", [=] {
                          std::vector<c10::IValue> s{
                              x, packed, bias, e.attr, c10::List<std::optional<c10::Scalar>>(),
                              e.algorithm.empty() ? c10::IValue() : c10::IValue(e.algorithm)};
                          findOp("mkldnn::_linear_pointwise", "")->callBoxed(&s);
                          return s.at(0).toTensor();
                        }});
        }
        return cs;
      };
      const std::string fallback = choice;
      choice = session_->choose(problem, what, make, fallback);
      if (!(choice == "aten" || (choice == "mkl" && f32 && mklLinear()) ||
            (choice == "onednn" && oneDnnLinear() && (f32 || oneDnnHasBFloat16())))) {
        log("autotune", what + ": no candidate '" + choice + "' here; using the default choice");
        choice = fallback;
      }
    }
    if (choice == "aten")
      return; // addmm or mm as traced
    at::Tensor packed = tunedPacked[choice];
    try {
      if (!packed.defined())
        packed = packLinear(choice, weight, m);
    } catch (const std::exception &ex) {
      log("freeze",
          std::string("the library does not take this linear layer's weight: ") + ex.what());
      return;
    }
    SegmentNode call;
    call.outputs = lin.outputs;
    ArgValue b = bias ? ArgValue::ofTensor(addConstant(*bias, from)) : ArgValue();
    if (choice == "mkl") {
      call.op = "mkl::_mkl_linear";
      call.args = {lin.args[xa], ArgValue::ofTensor(addConstant(packed, from)),
                   ArgValue::ofTensor(addConstant(weight, from)), b, ArgValue::ofInt(m)};
    } else {
      if (e.act >= 0) {
        call.outputs = nodes_[e.act].outputs;
        deleted_.insert(e.act);
        out_.fusedActivations++;
      }
      call.op = "mkldnn::_linear_pointwise";
      call.args = {lin.args[xa],
                   ArgValue::ofTensor(addConstant(packed, from)),
                   b,
                   ArgValue::ofString(e.attr),
                   ArgValue::ofInts({}),
                   e.algorithm.empty() ? ArgValue() : ArgValue::ofString(e.algorithm)};
    }
    lin = std::move(call);
    out_.packedLinears++;
  }

  /// The other operand of `add` when it adds a tensor of `y`'s shape and
  /// dtype to `y` with alpha 1, writing `y` or a new tensor; else -1.
  int residualOf(const SegmentNode &add, int y) const {
    const bool inPlace = add.op == "aten::add_" && add.overload == "Tensor";
    if (!(inPlace || (add.op == "aten::add" && add.overload == "Tensor")) || add.args.size() != 3 ||
        add.outputs.size() != 1 || add.args[0].kind != ArgValue::Tensor ||
        add.args[1].kind != ArgValue::Tensor)
      return -1;
    const ArgValue &alpha = add.args[2];
    if (!((alpha.kind == ArgValue::Int && alpha.i == 1) ||
          (alpha.kind == ArgValue::Double && alpha.d == 1.0)))
      return -1;
    int a = add.args[0].tensors[0], b = add.args[1].tensors[0];
    if (inPlace && a != y)
      return -1; // it writes the other operand
    int other = a == y ? b : a;
    if (other == y || known_[other].defined())
      return -1;
    const TensorSpec &ys = seg_.values[y], &os = seg_.values[other];
    return ys.sizes == os.sizes && ys.dtype == os.dtype ? other : -1;
  }

  void setWeights(SegmentNode &conv, const at::Tensor &weight, const std::optional<at::Tensor> &bias,
                  const std::vector<int> &from) {
    if (!weight.is_same(known_[conv.args[1].tensors[0]]))
      conv.args[1] = ArgValue::ofTensor(addConstant(weight, from));
    if (bias && (conv.args[2].kind != ArgValue::Tensor || !bias->is_same(known_[conv.args[2].tensors[0]])))
      conv.args[2] = ArgValue::ofTensor(addConstant(*bias, from));
  }

  /// `bn` (reading `y`, a convolution's result) in eval mode with constant
  /// parameters: folds it into `weight` and `bias`.
  bool foldBatchNorm(const SegmentNode &bn, int y, at::Tensor &weight, std::optional<at::Tensor> &bias) {
    int eps = -1;
    if (bn.op == "aten::native_batch_norm" && bn.args.size() == 8 &&
        bn.args[5].kind == ArgValue::Bool && !bn.args[5].b)
      eps = 7;
    else if (bn.op == "aten::_native_batch_norm_legit_no_training" && bn.args.size() == 7)
      eps = 6;
    if (eps < 0 || bn.args[0].kind != ArgValue::Tensor || bn.args[0].tensors[0] != y ||
        bn.args[eps].kind != ArgValue::Double)
      return false;
    for (int k = 1; k <= 4; ++k)
      if (!isKnownOrNone(bn.args[k]))
        return false;
    if (bn.args[3].kind == ArgValue::None || bn.args[4].kind == ArgValue::None)
      return false;
    for (size_t k = 1; k < bn.outputs.size(); ++k)
      if (bn.outputs[k] >= 0 && (uses_[bn.outputs[k]] > 0 || isOutput_.count(bn.outputs[k])))
        return false;
    auto param = [&](int k) -> std::optional<at::Tensor> {
      if (bn.args[k].kind == ArgValue::None)
        return std::nullopt;
      return known_[bn.args[k].tensors[0]].to(at::kDouble);
    };
    std::optional<at::Tensor> gamma = param(1), beta = param(2);
    at::Tensor mean = *param(3), var = *param(4);
    if (mean.numel() != weight.size(0))
      return false;
    at::Tensor scale = at::rsqrt(var + bn.args[eps].d);
    if (gamma)
      scale = scale * *gamma;
    at::Tensor b = bias ? bias->to(at::kDouble) : at::zeros_like(mean);
    at::Tensor shifted = (b - mean) * scale;
    if (beta)
      shifted = shifted + *beta;
    weight = (weight.to(at::kDouble) * scale.reshape({-1, 1, 1, 1})).to(weight.scalar_type()).contiguous();
    bias = shifted.to(weight.scalar_type()).contiguous();
    return true;
  }

  void dropDeleted() {
    std::vector<SegmentNode> kept;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (!deleted_.count(i))
        kept.push_back(std::move(nodes_[i]));
    nodes_ = std::move(kept);
    countUses();
  }

  /// oneDNN's convolutions return channels-last results (their blocked
  /// weights are laid out for it). Where every reader takes any layout (tgc
  /// kernels, oneDNN convolutions, pooling), the graph keeps that layout
  /// instead of copying back to NCHW, and elementwise kernels over such a
  /// value write channels-last too, so the next convolution reads it as it
  /// prefers.
  void preferChannelsLast() {
    std::vector<std::vector<int>> readers(seg_.values.size());
    for (size_t i = 0; i < nodes_.size(); ++i)
      for (int t : nodes_[i].tensorArgs())
        readers[t].push_back((int)i);
    std::unordered_set<int> channelsLast;
    // An in-place elementwise op tgc computes (relu_ after batch norm)
    // writes its input's buffer: the result it names has that layout too.
    auto inPlaceKernel = [&](const SegmentNode &n, int v) {
      std::vector<int> args = n.tensorArgs();
      return n.mutates && !args.empty() && args[0] == v && n.outputs.size() == 1 &&
             n.outputs[0] >= 0 && seg_.values[n.outputs[0]].sizes == seg_.values[v].sizes &&
             ops::loweringOf(n.op, n.overload) != ops::Lowering::Extern &&
             ops::aliasOf(n.op, n.overload) == ops::Alias::None;
    };
    std::function<bool(int)> layoutFree = [&](int v) {
      if (isOutput_.count(v) || seg_.values[v].sizes.size() != 4)
        return false;
      for (int i : readers[v]) {
        const SegmentNode &n = nodes_[i];
        if (n.op == "mkldnn::_convolution_pointwise" || n.op == "aten::max_pool2d_with_indices" ||
            n.op == "aten::adaptive_avg_pool2d" || n.op == "aten::avg_pool2d" ||
            n.op == "aten::_adaptive_avg_pool2d" || n.op == "aten::convolution")
          continue;
        if (inPlaceKernel(n, v) && layoutFree(n.outputs[0]))
          continue;
        if (n.mutates || ops::loweringOf(n.op, n.overload) == ops::Lowering::Extern ||
            ops::aliasOf(n.op, n.overload) != ops::Alias::None)
          return false;
      }
      return true;
    };
    std::function<void(int)> makeChannelsLast = [&](int v) {
      seg_.values[v].strides = channelsLastStrides(seg_.values[v].sizes);
      channelsLast.insert(v);
      for (int i : readers[v])
        if (inPlaceKernel(nodes_[i], v))
          makeChannelsLast(nodes_[i].outputs[0]);
    };
    // ATen's CPU pooling and convolution keep a channels-last input's
    // layout (pooling's indices included).
    auto isPooling = [](const SegmentNode &n) {
      return n.op == "aten::max_pool2d_with_indices" || n.op == "aten::adaptive_avg_pool2d" ||
             n.op == "aten::avg_pool2d" || n.op == "aten::_adaptive_avg_pool2d" ||
             n.op == "aten::convolution";
    };
    for (const SegmentNode &n : nodes_) {
      if (n.op == "mkldnn::_convolution_pointwise") {
        if (layoutFree(n.outputs[0]))
          makeChannelsLast(n.outputs[0]);
        continue;
      }
      // A result planned NCHW would be copied on every call.
      if (isPooling(n)) {
        std::vector<int> in = n.tensorArgs();
        if (!in.empty() && channelsLast.count(in[0]))
          for (int o : n.outputs)
            if (o >= 0 && seg_.values[o].sizes.size() == 4 && layoutFree(o))
              makeChannelsLast(o);
        continue;
      }
      if (n.mutates || ops::loweringOf(n.op, n.overload) == ops::Lowering::Extern ||
          ops::aliasOf(n.op, n.overload) != ops::Alias::None)
        continue;
      // Output 0 (batch norm's other outputs are per-channel statistics)
      // follows a channels-last input of its shape, or, for a channel
      // concatenation, inputs that are all channels-last.
      if (n.outputs.empty() || n.outputs[0] < 0)
        continue;
      const std::vector<int64_t> &out = seg_.values[n.outputs[0]].sizes;
      std::vector<int> args = n.tensorArgs();
      bool fromChannelsLast = false;
      for (int t : args)
        fromChannelsLast = fromChannelsLast || (channelsLast.count(t) && seg_.values[t].sizes == out);
      if (n.op == "aten::cat" && out.size() == 4 && !args.empty()) {
        bool all = true;
        for (int t : args) {
          const std::vector<int64_t> &in = seg_.values[t].sizes;
          all = all && channelsLast.count(t) && in.size() == 4 && in[0] == out[0] &&
                in[2] == out[2] && in[3] == out[3];
        }
        fromChannelsLast = fromChannelsLast || all;
      }
      if (fromChannelsLast && layoutFree(n.outputs[0]))
        makeChannelsLast(n.outputs[0]);
    }
  }

  void build(Frozen &out) {
    out = std::move(out_);
    Segment &s = out.segment;
    s.device = seg_.device;
    s.values = seg_.values;
    s.nodes = std::move(nodes_);
    s.outputs = seg_.outputs;
    for (size_t i = 0; i < userInputs_; ++i)
      s.inputs.push_back(seg_.inputs[i]);
    for (size_t i = 0; i < lifted_.size(); ++i) {
      int id = seg_.inputs[userInputs_ + i];
      if (!known_[id].defined()) {
        s.inputs.push_back(id);
        out.kept.push_back(lifted_[i]);
      }
    }
    // Constants the graph still reads, in first-use order.
    std::unordered_set<int> added;
    auto addIfConstant = [&](int t) {
      if (t >= 0 && known_[t].defined() && added.insert(t).second) {
        s.inputs.push_back(t);
        out.constants.push_back(known_[t]);
      }
    };
    for (const SegmentNode &n : s.nodes)
      for (int t : n.tensorArgs())
        addIfConstant(t);
    for (int o : s.outputs)
      addIfConstant(o);
    // Guarded: the lifted tensors a computed constant comes from. Lifted
    // tensors passed as they are need no guard (an update is read).
    std::set<size_t> sources;
    for (int t : s.inputs)
      if (computed_.count(t))
        sources.insert(roots_[t].begin(), roots_[t].end());
    for (size_t i : sources)
      out.sources.push_back(lifted_[i]);
  }

  autotune::Session *session_; ///< set under Mode::MaxAutotune
  size_t guards_;
  Segment seg_;
  size_t userInputs_;
  const std::vector<at::Tensor> &lifted_;
  std::vector<at::Tensor> known_; ///< constant value of each value id, if any
  std::vector<std::vector<size_t>> roots_; ///< lifted tensors each constant comes from
  std::unordered_set<int> computed_;       ///< constants computed here (not lifted as they are)
  std::vector<size_t> source_;    ///< lifted tensors that are constants
  std::unordered_set<int> isOutput_;
  std::vector<SegmentNode> nodes_;
  std::vector<int> uses_;
  std::unordered_set<size_t> deleted_;
  Frozen out_;
};

} // namespace

bool freezeSegment(const Segment &seg, size_t userInputs, const std::vector<at::Tensor> &lifted,
                   size_t guards, Frozen &out, std::string &why, const FreezeOptions &options) {
  if (seg.inputs.size() != userInputs + lifted.size()) {
    why = "the segment's inputs are not the user's and the lifted tensors";
    return false;
  }
  std::optional<autotune::Session> session;
  if (options.autotune)
    session.emplace(options.cache ? *options.cache : ArtifactCache::current());
  Freezer f(seg, userInputs, lifted, guards, session ? &*session : nullptr);
  if (!f.run(out, why))
    return false;
  if (session)
    log("autotune", std::to_string(session->benchmarked()) + " problems benchmarked, " +
                        std::to_string(session->cached()) + " answered from the cache");
  log("freeze",
      std::to_string(out.constants.size()) + " constants, " + std::to_string(out.foldedOps) +
          " ops folded, " + std::to_string(out.foldedBatchNorms) + " batch norms folded, " +
          std::to_string(out.fusedConvolutions) + " oneDNN convolutions (" +
          std::to_string(out.fusedActivations) + " activations and " +
          std::to_string(out.fusedResiduals) + " residual adds fused), " +
          std::to_string(out.atenConvolutions) + " small 1x1 convolutions left to ATen, " +
          std::to_string(out.packedLinears) + " packed linear layers");
  return true;
}

} // namespace tgc
