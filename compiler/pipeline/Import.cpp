//===- Import.cpp - Segment to the `tg` dialect ---------------------------===//
#include "compiler/pipeline/Import.h"

#include "dialects/TG/IR/TGOps.h"
#include "mlir/IR/Builders.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

using namespace mlir;

namespace tgc {

Type elementType(MLIRContext *ctx, DType dtype) {
  Builder b(ctx);
  switch (dtype) {
  case DType::Bool: return b.getI1Type();
  case DType::Int8: return b.getI8Type();
  case DType::Int16: return b.getI16Type();
  case DType::Int32: return b.getI32Type();
  case DType::Int64: return b.getI64Type();
  case DType::Float16: return b.getF16Type();
  case DType::BFloat16: return b.getBF16Type();
  case DType::Float32: return b.getF32Type();
  case DType::Float64: return b.getF64Type();
  case DType::UInt8: return b.getIntegerType(8, /*isSigned=*/false); // extern calls only
  }
  return {};
}

DType dtypeOf(Type t) {
  if (t.isF16()) return DType::Float16;
  if (t.isBF16()) return DType::BFloat16;
  if (t.isF32()) return DType::Float32;
  if (t.isF64()) return DType::Float64;
  if (t.isUnsignedInteger(8)) return DType::UInt8;
  switch (t.getIntOrFloatBitWidth()) {
  case 1: return DType::Bool;
  case 8: return DType::Int8;
  case 16: return DType::Int16;
  case 32: return DType::Int32;
  default: return DType::Int64;
  }
}

static AffineMap reshapeMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out, MLIRContext *ctx);

namespace {

/// Builds the body of one segment function.
class Importer {
public:
  Importer(const Segment &seg, OpBuilder &b, std::string &error)
      : seg(seg), b(b), error(error), loc(b.getUnknownLoc()) {
    planFunctionalization();
    // A segment that still writes through a buffer keeps every view a real
    // ATen alias, so the writes stay visible where the program expects them.
    viewsAsRemaps = true;
    for (size_t i = 0; i < seg.nodes.size(); ++i)
      viewsAsRemaps &= !seg.nodes[i].mutates || functional.count(i);
  }

  LogicalResult importNode(const SegmentNode &node);
  DenseMap<int, Value> values;

private:
  RankedTensorType typeOf(int id) {
    const TensorSpec &s = seg.values[id];
    return RankedTensorType::get(s.sizes, elementType(b.getContext(), s.dtype));
  }
  void setStrides(Operation *op, int id);
  /// Operand `a` as a tensor of `type` (cast, then broadcast).
  FailureOr<Value> operand(const ArgValue &a, RankedTensorType type);
  LogicalResult importPointwise(const SegmentNode &node);
  /// Reductions, softmax and layer_norm over trailing dims; returns false
  /// (nothing built) when the node has another form (then it is extern).
  bool importRowOp(const SegmentNode &node);
  /// Pointwise ops built from several tg ops (comparisons, where, clamp,
  /// silu, softplus, ...); false when the node has another form.
  bool importComposite(const SegmentNode &node);
  /// ATen view ops (and flip) as tg.remap; false for other forms.
  bool importLayout(const SegmentNode &node);
  Value remap(Value x, RankedTensorType to, AffineMap map);
  /// bernoulli_(x, p) on a fresh buffer: 1 with probability p, from
  /// tgc's counter-based RNG (see tg.uniform).
  bool importBernoulli(const SegmentNode &node);
  /// A 0-d i64 seed drawn from ATen's default generator at each call.
  Value drawSeed();
  /// split / split_with_sizes / unbind: one slice or select remap per part.
  bool importSplit(const SegmentNode &node);
  Type computeTypeOf(ArrayRef<const ArgValue *> args);
  Value reduce(Value x, StringRef kind, int64_t count);
  /// `x` with the dims `dims` (all when empty) moved last, in order, by a
  /// remap when they are not already trailing; and their number.
  std::pair<Value, int64_t> toRows(Value x, std::vector<int64_t> dims);
  /// The number of elements in one row of `rows`' last `count` dims.
  double rowSize(Value rows, int64_t count);
  Value divide(Value v, double by);
  Value bcast(Value v, RankedTensorType to);
  Value scalar(double v, RankedTensorType like);
  Value castTo(Value v, Type elt);
  Value finish(Value v, int id);
  LogicalResult importExtern(const SegmentNode &node);
  FailureOr<Attribute> externArg(const ArgValue &a, SmallVector<Value> &ins);

  const Segment &seg;
  OpBuilder &b;
  std::string &error;
  Location loc;
  bool viewsAsRemaps = true;
  /// Indices of in-place nodes imported as their functional form: the
  /// buffer they write has no other alias that anyone reads afterwards.
  std::set<size_t> functional;
  void planFunctionalization();

public:
  /// Imports node `index`: an in-place node in `functional` as its
  /// out-of-place form, whose result then stands for the written buffer.
  LogicalResult importAt(size_t index);
};

} // namespace

void Importer::setStrides(Operation *op, int id) {
  const TensorSpec &s = seg.values[id];
  op->setAttr("tg.strides", b.getDenseI64ArrayAttr(s.strides));
}

FailureOr<Value> Importer::operand(const ArgValue &a, RankedTensorType type) {
  Type elt = type.getElementType();
  Value v;
  if (a.kind == ArgValue::Tensor) {
    v = values.lookup(a.tensors[0]);
    if (cast<ShapedType>(v.getType()).getElementType() != elt) {
      auto to = RankedTensorType::get(cast<ShapedType>(v.getType()).getShape(), elt);
      v = b.create<tg::CastOp>(loc, to, v);
    }
  } else if (a.kind == ArgValue::ScalarTensor || a.kind == ArgValue::Int ||
             a.kind == ArgValue::Double || a.kind == ArgValue::Bool) {
    bool isFloat = a.kind == ArgValue::Double ||
                   (a.kind == ArgValue::ScalarTensor && a.isFloat);
    double dv = isFloat ? a.d : (a.kind == ArgValue::Bool ? a.b : (double)a.i);
    int64_t iv = isFloat ? (int64_t)a.d : (a.kind == ArgValue::Bool ? a.b : a.i);
    auto scalarType = RankedTensorType::get({}, elt);
    Attribute value;
    if (auto ft = dyn_cast<FloatType>(elt))
      value = b.getFloatAttr(ft, dv);
    else if (elt.isInteger(1))
      value = b.getBoolAttr(isFloat ? dv != 0 : iv != 0);
    else
      value = b.getIntegerAttr(elt, iv);
    v = b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(scalarType, value));
  } else {
    error = "unsupported pointwise operand kind";
    return failure();
  }
  if (cast<ShapedType>(v.getType()).getShape() != type.getShape())
    v = b.create<tg::BroadcastOp>(loc, type, v);
  return v;
}

using PointwiseBuilder =
    std::function<Value(OpBuilder &, Location, RankedTensorType, ValueRange,
                        const SegmentNode &)>;

template <class OpT>
static PointwiseBuilder simple() {
  return [](OpBuilder &b, Location loc, RankedTensorType t, ValueRange v,
            const SegmentNode &) -> Value {
    return b.create<OpT>(loc, t, v).getResult();
  };
}

/// ATen ops lowered to tg pointwise ops: name -> (tensor arity, builder).
static const std::map<std::string, std::pair<int, PointwiseBuilder>> &
pointwiseTable() {
  static const std::map<std::string, std::pair<int, PointwiseBuilder>> table = {
      {"aten::mul.Tensor", {2, simple<tg::MulOp>()}},
      {"aten::div.Tensor", {2, simple<tg::DivOp>()}},
      {"aten::maximum", {2, simple<tg::MaximumOp>()}},
      {"aten::minimum", {2, simple<tg::MinimumOp>()}},
      {"aten::add.Tensor", {2, simple<tg::AddOp>()}},
      {"aten::add.Scalar", {2, simple<tg::AddOp>()}},
      {"aten::sub.Scalar", {2, simple<tg::SubOp>()}},
      {"aten::mul.Scalar", {2, simple<tg::MulOp>()}},
      {"aten::div.Scalar", {2, simple<tg::DivOp>()}},
      {"aten::sub.Tensor", {2, simple<tg::SubOp>()}},
      {"aten::relu", {1, simple<tg::ReluOp>()}},
      {"aten::neg", {1, simple<tg::NegOp>()}},
      {"aten::exp", {1, simple<tg::ExpOp>()}},
      {"aten::log", {1, simple<tg::LogOp>()}},
      {"aten::tanh", {1, simple<tg::TanhOp>()}},
      {"aten::sigmoid", {1, simple<tg::SigmoidOp>()}},
      {"aten::sqrt", {1, simple<tg::SqrtOp>()}},
      {"aten::rsqrt", {1, simple<tg::RsqrtOp>()}},
      {"aten::abs", {1, simple<tg::AbsOp>()}},
      {"aten::erf", {1, simple<tg::ErfOp>()}},
      {"aten::log1p", {1, simple<tg::Log1pOp>()}},
      {"aten::expm1", {1, simple<tg::Expm1Op>()}},
      {"aten::sin", {1, simple<tg::SinOp>()}},
      {"aten::cos", {1, simple<tg::CosOp>()}},
      {"aten::pow.Tensor_Tensor", {2, simple<tg::PowOp>()}},
      {"aten::floor", {1, simple<tg::FloorOp>()}},
      {"aten::ceil", {1, simple<tg::CeilOp>()}},
      {"aten::round", {1, simple<tg::RoundOp>()}},
      {"aten::trunc", {1, simple<tg::TruncOp>()}},
      {"aten::fmod.Tensor", {2, simple<tg::RemOp>()}},
      {"aten::fmod.Scalar", {2, simple<tg::RemOp>()}},
      {"aten::bitwise_and.Tensor", {2, simple<tg::AndOp>()}},
      {"aten::bitwise_and.Scalar", {2, simple<tg::AndOp>()}},
      {"aten::bitwise_or.Tensor", {2, simple<tg::OrOp>()}},
      {"aten::bitwise_or.Scalar", {2, simple<tg::OrOp>()}},
      {"aten::bitwise_xor.Tensor", {2, simple<tg::XorOp>()}},
      {"aten::bitwise_xor.Scalar", {2, simple<tg::XorOp>()}},
      {"aten::bitwise_left_shift.Tensor", {2, simple<tg::ShlOp>()}},
      {"aten::bitwise_left_shift.Tensor_Scalar", {2, simple<tg::ShlOp>()}},
      {"aten::bitwise_right_shift.Tensor", {2, simple<tg::ShrOp>()}},
      {"aten::bitwise_right_shift.Tensor_Scalar", {2, simple<tg::ShrOp>()}},
      {"aten::__lshift__.Tensor", {2, simple<tg::ShlOp>()}},
      {"aten::__lshift__.Scalar", {2, simple<tg::ShlOp>()}},
      {"aten::__rshift__.Tensor", {2, simple<tg::ShrOp>()}},
      {"aten::__rshift__.Scalar", {2, simple<tg::ShrOp>()}},
      // logical_*: operands cast to the bool result first (x != 0).
      {"aten::logical_and", {2, simple<tg::AndOp>()}},
      {"aten::logical_or", {2, simple<tg::OrOp>()}},
      {"aten::logical_xor", {2, simple<tg::XorOp>()}},
      {"aten::gelu",
       {1,
        [](OpBuilder &b, Location loc, RankedTensorType t, ValueRange v,
           const SegmentNode &n) -> Value {
          std::string approx = n.args.size() > 1 ? n.args[1].s : "none";
          return b.create<tg::GeluOp>(loc, t, v[0], b.getStringAttr(approx))
              .getResult();
        }}},
  };
  return table;
}

static std::string qualified(const SegmentNode &n) {
  return n.overload.empty() ? n.op : n.op + "." + n.overload;
}

LogicalResult Importer::importPointwise(const SegmentNode &node) {
  auto &[arity, build] = pointwiseTable().at(qualified(node));
  RankedTensorType outType = typeOf(node.outputs[0]);
  // Division and transcendental ops compute in the (float) result type;
  // arithmetic ops too, since ATen's result dtype is the promoted dtype.
  SmallVector<Value> operands;
  for (int i = 0; i < arity; ++i) {
    auto v = operand(node.args[i], outType);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  // alpha of add/sub scales the second operand.
  std::string q = qualified(node);
  if ((q == "aten::add.Tensor" || q == "aten::sub.Tensor" || q == "aten::add.Scalar" ||
       q == "aten::sub.Scalar") &&
      node.args.size() > 2) {
    const ArgValue &alpha = node.args[2];
    bool one = (alpha.kind == ArgValue::Int && alpha.i == 1) ||
               (alpha.kind == ArgValue::Double && alpha.d == 1.0);
    if (!one) {
      auto a = operand(alpha, outType);
      if (failed(a))
        return failure();
      operands[1] = b.create<tg::MulOp>(loc, outType, operands[1], *a);
    }
  }
  Value r = build(b, loc, outType, operands, node);
  setStrides(r.getDefiningOp(), node.outputs[0]);
  values[node.outputs[0]] = r;
  return success();
}

FailureOr<Attribute> Importer::externArg(const ArgValue &a,
                                         SmallVector<Value> &ins) {
  auto ref = [&](int id) -> Attribute {
    if (id < 0)
      return b.getUnitAttr();
    ins.push_back(values.lookup(id));
    return tg::OperandRefAttr::get(b.getContext(), ins.size() - 1);
  };
  switch (a.kind) {
  case ArgValue::None: return Attribute(b.getUnitAttr());
  case ArgValue::Bool: return Attribute(b.getBoolAttr(a.b));
  case ArgValue::Int: return Attribute(b.getI64IntegerAttr(a.i));
  case ArgValue::Double: return Attribute(b.getF64FloatAttr(a.d));
  case ArgValue::String: return Attribute(b.getStringAttr(a.s));
  case ArgValue::IntList: return Attribute(b.getDenseI64ArrayAttr(a.ints));
  case ArgValue::DoubleList: return Attribute(b.getDenseF64ArrayAttr(a.doubles));
  case ArgValue::Device: return Attribute(tg::DeviceAttr::get(b.getContext(), a.s));
  case ArgValue::Tensor: return ref(a.tensors[0]);
  case ArgValue::TensorList: {
    SmallVector<Attribute> refs;
    for (int id : a.tensors)
      refs.push_back(ref(id));
    return Attribute(b.getArrayAttr(refs));
  }
  case ArgValue::ScalarTensor: {
    Type t = elementType(b.getContext(), a.dtype);
    if (!t) {
      error = "unsupported wrapped-number dtype";
      return failure();
    }
    Attribute v = isa<FloatType>(t) ? Attribute(b.getFloatAttr(t, a.d))
                                    : Attribute(b.getIntegerAttr(t, a.i));
    return Attribute(b.getDictionaryAttr(b.getNamedAttr("wrapped_number", v)));
  }
  }
  error = "unsupported argument kind";
  return failure();
}

LogicalResult Importer::importExtern(const SegmentNode &node) {
  SmallVector<Value> ins;
  SmallVector<Attribute> args;
  for (const ArgValue &a : node.args) {
    auto attr = externArg(a, ins);
    if (failed(attr))
      return failure();
    args.push_back(*attr);
  }
  SmallVector<Type> types;
  SmallVector<Attribute> strides;
  for (int id : node.outputs) {
    types.push_back(typeOf(id));
    strides.push_back(b.getDenseI64ArrayAttr(seg.values[id].strides));
  }
  auto op = b.create<tg::ExternOp>(loc, types, b.getStringAttr(qualified(node)),
                                   ins, b.getArrayAttr(args),
                                   b.getArrayAttr(strides));
  if (node.mutates)
    op->setAttr("mutates", b.getUnitAttr());
  for (auto [id, r] : llvm::zip(node.outputs, op.getResults()))
    values[id] = r;
  return success();
}

static bool computable(const Segment &seg, const SegmentNode &node) {
  auto ok = [&](int id) {
    DType t = seg.values[id].dtype;
    return t != DType::UInt8;
  };
  for (int id : node.outputs)
    if (!ok(id))
      return false;
  for (const ArgValue &a : node.args)
    for (int id : a.tensors)
      if (id >= 0 && !ok(id))
        return false;
  return !node.mutates;
}

/// Pointwise-table ops whose tg op is float-only: integer forms stay ATen
/// calls (integer fmod raises on a zero divisor, which a kernel cannot).
static bool floatOnlyEntry(const std::string &q) {
  return q == "aten::floor" || q == "aten::ceil" || q == "aten::round" ||
         q == "aten::trunc" || q == "aten::fmod.Tensor" || q == "aten::fmod.Scalar";
}

/// In-place ATen ops whose out-of-place form is the name without `_` with
/// the same overload and arguments (pow_ is not: pow_.Scalar's functional
/// twin is pow.Tensor_Scalar, while pow.Scalar takes a Scalar base).
static bool functionalizable(const SegmentNode &n) {
  static const std::set<std::string> names = {
      "aten::add_", "aten::sub_", "aten::mul_", "aten::div_", "aten::relu_", "aten::clamp_",
      "aten::clamp_min_", "aten::clamp_max_", "aten::masked_fill_", "aten::exp_", "aten::tanh_",
      "aten::sigmoid_", "aten::neg_", "aten::gelu_", "aten::silu_", "aten::hardtanh_",
      "aten::leaky_relu_", "aten::sqrt_", "aten::rsqrt_", "aten::abs_",
      "aten::bernoulli_"};
  if (n.op == "aten::bernoulli_" &&
      (n.overload != "float" || n.args.size() < 2 || n.args[1].kind != ArgValue::Double ||
       (n.args.size() > 2 && n.args[2].kind != ArgValue::None)))
    return false; // only a float probability with the default generator
  return names.count(n.op) && n.outputs.size() == 1 && !n.args.empty() &&
         n.args[0].kind == ArgValue::Tensor;
}

/// Ops whose result aliases their first argument.
static bool isAliasing(const SegmentNode &n) {
  static const std::set<std::string> names = {
      "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::alias",
      "aten::unsqueeze", "aten::squeeze", "aten::permute", "aten::transpose", "aten::t",
      "aten::expand", "aten::slice", "aten::select", "aten::split", "aten::split_with_sizes",
      "aten::unbind", "aten::as_strided", "aten::diagonal", "aten::unfold", "aten::detach",
      "aten::narrow", "aten::view_as_real", "aten::view_as_complex", "aten::chunk",
      "aten::unflatten", "aten::movedim", "aten::swapaxes", "aten::lift_fresh",
      "aten::unsafe_split", "aten::unsafe_split_with_sizes", "aten::unsafe_chunk"};
  return names.count(n.op) || (n.mutates && !n.outputs.empty());
}

void Importer::planFunctionalization() {
  // Alias classes over value ids (union-find).
  std::vector<int> parent(seg.values.size());
  for (size_t i = 0; i < parent.size(); ++i)
    parent[i] = i;
  std::function<int(int)> find = [&](int v) { return parent[v] == v ? v : parent[v] = find(parent[v]); };
  // The parts of a split are disjoint: each overlaps its base, not its
  // siblings. They get their own classes, linked to the base's.
  static const std::set<std::string> splits = {
      "aten::split", "aten::split_with_sizes", "aten::unbind", "aten::unsafe_split",
      "aten::unsafe_split_with_sizes", "aten::chunk", "aten::unsafe_chunk"};
  std::vector<std::pair<int, int>> partOf; // (part, base)
  for (const SegmentNode &n : seg.nodes)
    if (isAliasing(n) && !n.args.empty() && n.args[0].kind == ArgValue::Tensor)
      for (int out : n.outputs) {
        if (splits.count(n.op))
          partOf.push_back({out, n.args[0].tensors[0]});
        else
          parent[find(out)] = find(n.args[0].tensors[0]);
      }
  // Classes a write to `x` is visible through: its own and its bases'.
  auto watchedBy = [&](int x) {
    std::set<int> watched{find(x)};
    for (bool grew = true; grew;) {
      grew = false;
      for (auto [part, base] : partOf)
        if (watched.count(find(part)) && watched.insert(find(base)).second)
          grew = true;
    }
    return watched;
  };
  // Where each value is defined: -1 for inputs, else its node's index.
  std::vector<int64_t> defined(seg.values.size(), -1);
  for (size_t i = 0; i < seg.nodes.size(); ++i)
    for (int out : seg.nodes[i].outputs)
      defined[out] = i;
  for (size_t i = 0; i < seg.nodes.size(); ++i) {
    const SegmentNode &n = seg.nodes[i];
    if (!n.mutates || !functionalizable(n))
      continue;
    int x = n.args[0].tensors[0];
    // An alias made before the write (other than the written value itself)
    // would see the write in eager: none may be an input, an output or read
    // afterwards. Aliases made later derive from the new value.
    std::set<int> watched = watchedBy(x);
    auto stale = [&](int id) {
      return id >= 0 && id != x && id != n.outputs[0] && watched.count(find(id)) &&
             defined[id] <= (int64_t)i;
    };
    bool ok = defined[x] >= 0;
    for (int id : seg.inputs)
      ok &= !watched.count(find(id));
    for (int id : seg.outputs)
      ok &= !stale(id);
    for (size_t j = i + 1; j < seg.nodes.size() && ok; ++j)
      for (const ArgValue &a : seg.nodes[j].args)
        for (int id : a.tensors)
          ok &= !stale(id);
    if (ok)
      functional.insert(i);
  }
}

/// Whether value `id` is read by a node or returned. `overwrites` are nodes
/// that only replace the value's contents (functionalized bernoulli_): they
/// do not read it.
static bool isUsed(const Segment &seg, int id, const std::set<size_t> &overwrites) {
  if (std::count(seg.outputs.begin(), seg.outputs.end(), id))
    return true;
  for (size_t i = 0; i < seg.nodes.size(); ++i) {
    if (overwrites.count(i))
      continue;
    for (const ArgValue &a : seg.nodes[i].args)
      if (std::count(a.tensors.begin(), a.tensors.end(), id))
        return true;
  }
  return false;
}

LogicalResult Importer::importAt(size_t index) {
  const SegmentNode &node = seg.nodes[index];
  // Allocations nobody reads (ATen's batch_norm makes some) cost a call.
  static const std::set<std::string> allocations = {"aten::empty", "aten::empty_like",
                                                    "aten::empty_strided", "aten::new_empty"};
  std::set<size_t> overwrites;
  for (size_t i : functional)
    if (seg.nodes[i].op == "aten::bernoulli_")
      overwrites.insert(i);
  if (allocations.count(node.op) &&
      std::none_of(node.outputs.begin(), node.outputs.end(),
                   [&](int id) { return isUsed(seg, id, overwrites); }))
    return success();
  if (node.op == "aten::bernoulli_" && functional.count(index)) {
    if (!importBernoulli(node))
      return importExtern(node); // (unreachable for the float overload)
    values[node.args[0].tensors[0]] = values.lookup(node.outputs[0]);
    return success();
  }
  if (!functional.count(index))
    return importNode(node);
  SegmentNode f = node;
  f.op.pop_back(); // aten::add_ -> aten::add
  f.mutates = false;
  if (failed(importNode(f)))
    return failure();
  // The written buffer now holds the result.
  values[node.args[0].tensors[0]] = values.lookup(node.outputs[0]);
  return success();
}

LogicalResult Importer::importNode(const SegmentNode &node) {
  if (!computable(seg, node))
    return importExtern(node);
  if (floatOnlyEntry(qualified(node)) && !isa<FloatType>(typeOf(node.outputs[0]).getElementType()))
    return importExtern(node);
  if (pointwiseTable().count(qualified(node)) && node.outputs.size() == 1)
    return importPointwise(node);
  if (importLayout(node) || importRowOp(node) || importComposite(node))
    return success();
  return importExtern(node);
}

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

/// The map of a row-major reshape from `in` to `out` (equal numel): dims
/// are grouped where their products meet, so splitting or merging dims
/// costs a multiply or a floordiv/mod inside its group only.
static AffineMap reshapeMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs(in.size(), getAffineConstantExpr(0, ctx));
  int64_t numel = 1;
  for (int64_t s : in)
    numel *= s;
  if (numel == 0)
    return AffineMap::get(out.size(), 0, exprs, ctx);
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    // One group: the shortest runs of dims with equal products.
    size_t i0 = i, j0 = j;
    int64_t pi = 1, po = 1;
    do {
      if (pi <= po && i < in.size())
        pi *= in[i++];
      else if (j < out.size())
        po *= out[j++];
      else
        pi *= in[i++];
    } while (pi != po || (i < in.size() && in[i] == 1 && j == out.size()) ||
             (j < out.size() && out[j] == 1 && i == in.size()));
    AffineExpr linear = getAffineConstantExpr(0, ctx);
    int64_t suffix = 1;
    for (size_t d = j; d-- > j0;) {
      if (out[d] != 1)
        linear = linear + getAffineDimExpr(d, ctx) * suffix;
      suffix *= out[d];
    }
    suffix = 1;
    for (size_t d = i; d-- > i0;) {
      if (in[d] != 1) {
        AffineExpr e = suffix == 1 ? linear : linear.floorDiv(suffix);
        bool first = true; // the outermost non-1 dim needs no mod
        for (size_t k = i0; k < d; ++k)
          first &= in[k] == 1;
        exprs[d] = first ? e : e % in[d];
      }
      suffix *= in[d];
    }
  }
  return AffineMap::get(out.size(), 0, exprs, ctx);
}

Value Importer::remap(Value x, RankedTensorType to, AffineMap map) {
  return b.create<tg::RemapOp>(loc, to, x, AffineMapAttr::get(map), StringAttr(), ArrayAttr());
}

Value Importer::drawSeed() {
  auto seedType = RankedTensorType::get({}, b.getI64Type());
  auto draw = b.create<tg::ExternOp>(
      loc, TypeRange{seedType}, b.getStringAttr("aten::randint.low"), ValueRange{},
      b.getArrayAttr({b.getI64IntegerAttr(0), b.getI64IntegerAttr(int64_t(1) << 62),
                      b.getDenseI64ArrayAttr({}), b.getI64IntegerAttr(4) /* Long */,
                      b.getUnitAttr(), tg::DeviceAttr::get(b.getContext(), seg.device),
                      b.getUnitAttr()}),
      b.getArrayAttr({b.getDenseI64ArrayAttr({})}));
  return draw.getResult(0);
}

bool Importer::importBernoulli(const SegmentNode &node) {
  if (node.overload != "float" || node.args.size() < 2 || node.args[1].kind != ArgValue::Double ||
      (node.args.size() > 2 && node.args[2].kind != ArgValue::None))
    return false; // a tensor of probabilities, or a user's generator
  RankedTensorType out = typeOf(node.outputs[0]);
  auto ft = RankedTensorType::get(out.getShape(), b.getF32Type());
  Value u = b.create<tg::UniformOp>(loc, ft, drawSeed());
  auto i1 = RankedTensorType::get(out.getShape(), b.getI1Type());
  Value hit = b.create<tg::CompareOp>(loc, i1, u, scalar(node.args[1].d, ft), b.getStringAttr("lt"));
  finish(castTo(hit, out.getElementType()), node.outputs[0]);
  return true;
}

bool Importer::importSplit(const SegmentNode &node) {
  MLIRContext *ctx = b.getContext();
  Value x = values.lookup(node.args[0].tensors[0]);
  auto in = cast<RankedTensorType>(x.getType());
  int64_t rank = in.getRank();
  if (rank == 0)
    return false;
  bool unbind = node.op == "aten::unbind";
  int64_t d = node.args.size() > (unbind ? 1u : 2u) ? node.args[unbind ? 1 : 2].i : 0;
  d = d < 0 ? d + rank : d;
  int64_t start = 0;
  for (int id : node.outputs) {
    RankedTensorType out = typeOf(id);
    SmallVector<AffineExpr> exprs;
    SmallVector<Attribute> args{tg::OperandRefAttr::get(ctx, 0), b.getI64IntegerAttr(d)};
    for (int64_t k = 0; k < rank; ++k) {
      if (unbind)
        exprs.push_back(k == d ? getAffineConstantExpr(start, ctx)
                               : getAffineDimExpr(k < d ? k : k - 1, ctx));
      else
        exprs.push_back(k == d ? getAffineDimExpr(k, ctx) + start : getAffineDimExpr(k, ctx));
    }
    int64_t length = unbind ? 1 : out.getDimSize(d);
    if (unbind)
      args.push_back(b.getI64IntegerAttr(start));
    else
      args.append({b.getI64IntegerAttr(start), b.getI64IntegerAttr(start + length),
                   b.getI64IntegerAttr(1)});
    auto op = b.create<tg::RemapOp>(
        loc, out, x, AffineMapAttr::get(AffineMap::get(out.getRank(), 0, exprs, ctx)),
        b.getStringAttr(unbind ? "aten::select.int" : "aten::slice.Tensor"), b.getArrayAttr(args));
    setStrides(op, id);
    values[id] = op.getResult();
    start += length;
  }
  return true;
}

bool Importer::importLayout(const SegmentNode &node) {
  static const std::set<std::string> views = {
      "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::alias",
      "aten::unsqueeze", "aten::squeeze", "aten::squeeze.dim", "aten::squeeze.dims",
      "aten::permute", "aten::transpose.int", "aten::t", "aten::expand",
      "aten::slice.Tensor", "aten::select.int", "aten::flip", "aten::clone"};
  std::string q = qualified(node);
  if (node.args.empty() || node.args[0].kind != ArgValue::Tensor)
    return false;
  if ((q == "aten::split.Tensor" || q == "aten::split_with_sizes" || q == "aten::unbind.int" ||
       q == "aten::unsafe_split.Tensor" || q == "aten::unsafe_split_with_sizes") &&
      viewsAsRemaps)
    return importSplit(node);
  if (!views.count(q) || node.outputs.size() != 1)
    return false;
  // flip and clone copy: with no ATen view to fall back to, a remap of
  // theirs that no kernel absorbs is materialized by a copy kernel.
  bool isView = q != "aten::flip" && q != "aten::clone";
  if (q == "aten::clone" && !viewsAsRemaps)
    return false;
  if (isView && !viewsAsRemaps)
    return false;
  MLIRContext *ctx = b.getContext();
  Value x = values.lookup(node.args[0].tensors[0]);
  auto in = cast<RankedTensorType>(x.getType());
  RankedTensorType out = typeOf(node.outputs[0]);
  if (in.getElementType() != out.getElementType())
    return false;
  ArrayRef<int64_t> is = in.getShape(), os = out.getShape();
  int64_t rank = is.size();
  auto norm = [&](int64_t d, int64_t r) { return d < 0 ? d + r : d; };
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  SmallVector<AffineExpr> exprs;
  if (q == "aten::permute" || q == "aten::transpose.int" || q == "aten::t") {
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      perm.push_back(d);
    if (q == "aten::permute") {
      for (int64_t d = 0; d < rank; ++d)
        perm[d] = norm(node.args[1].ints[d], rank);
    } else if (rank == 2) {
      int64_t a = q == "aten::t" ? 0 : norm(node.args[1].i, rank);
      int64_t c = q == "aten::t" ? 1 : norm(node.args[2].i, rank);
      std::swap(perm[a], perm[c]);
    } else if (q == "aten::transpose.int" && rank > 0) {
      std::swap(perm[norm(node.args[1].i, rank)], perm[norm(node.args[2].i, rank)]);
    }
    exprs.assign(rank, getAffineConstantExpr(0, ctx));
    for (int64_t d = 0; d < rank; ++d)
      exprs[perm[d]] = dim(d);
  } else if (q == "aten::expand") {
    int64_t lead = os.size() - rank;
    for (int64_t k = 0; k < rank; ++k)
      exprs.push_back(is[k] == 1 && os[lead + k] != 1 ? getAffineConstantExpr(0, ctx)
                                                      : dim(lead + k));
  } else if (q == "aten::slice.Tensor") {
    int64_t d = norm(node.args[1].i, rank);
    int64_t start = node.args[2].kind == ArgValue::Int ? node.args[2].i : 0;
    int64_t step = node.args.size() > 4 ? node.args[4].i : 1;
    start = std::clamp<int64_t>(start < 0 ? start + is[d] : start, 0, is[d]);
    for (int64_t k = 0; k < rank; ++k)
      exprs.push_back(k == d ? dim(k) * step + start : dim(k));
  } else if (q == "aten::select.int") {
    int64_t d = norm(node.args[1].i, rank);
    int64_t index = norm(node.args[2].i, is[d]);
    for (int64_t k = 0; k < rank; ++k)
      exprs.push_back(k == d ? getAffineConstantExpr(index, ctx) : dim(k < d ? k : k - 1));
  } else if (q == "aten::flip") {
    std::set<int64_t> flipped;
    for (int64_t d : node.args[1].ints)
      flipped.insert(norm(d, rank));
    for (int64_t k = 0; k < rank; ++k)
      exprs.push_back(flipped.count(k) && is[k] > 1 ? (is[k] - 1) - dim(k) : dim(k));
  } else {
    // view, reshape, squeeze, unsqueeze, alias, clone: row-major order is kept.
    AffineMap m = reshapeMap(is, os, ctx);
    exprs.assign(m.getResults().begin(), m.getResults().end());
  }
  AffineMap map = AffineMap::get(os.size(), 0, exprs, ctx);
  StringAttr callee;
  ArrayAttr viewArgs;
  if (isView) {
    SmallVector<Value> ins;
    SmallVector<Attribute> args;
    for (const ArgValue &a : node.args) {
      auto attr = externArg(a, ins);
      if (failed(attr))
        return false;
      args.push_back(*attr);
    }
    if (ins.size() != 1)
      return false;
    callee = b.getStringAttr(q);
    viewArgs = b.getArrayAttr(args);
  }
  auto op = b.create<tg::RemapOp>(loc, out, x, AffineMapAttr::get(map), callee, viewArgs);
  setStrides(op, node.outputs[0]);
  values[node.outputs[0]] = op.getResult();
  return true;
}

//===----------------------------------------------------------------------===//
// Row ops: reductions over trailing dims, softmax, log_softmax, layer_norm
//===----------------------------------------------------------------------===//

Value Importer::castTo(Value v, Type elt) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getElementType() == elt)
    return v;
  return b.create<tg::CastOp>(loc, RankedTensorType::get(t.getShape(), elt), v);
}

Value Importer::reduce(Value x, StringRef kind, int64_t count) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(t.getShape());
  for (int64_t d = shape.size() - count; d < (int64_t)shape.size(); ++d)
    shape[d] = 1;
  return b.create<tg::ReduceOp>(loc, RankedTensorType::get(shape, t.getElementType()), x,
                                b.getStringAttr(kind), b.getI64IntegerAttr(count));
}

std::pair<Value, int64_t> Importer::toRows(Value x, std::vector<int64_t> dims) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (dims.empty())
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  for (int64_t &d : dims)
    d = d < 0 ? d + rank : d;
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  SmallVector<int64_t> order;
  for (int64_t d = 0; d < rank; ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d))
      order.push_back(d);
  order.append(dims.begin(), dims.end());
  bool identity = true;
  for (int64_t d = 0; d < rank; ++d)
    identity &= order[d] == d;
  if (identity)
    return {x, (int64_t)dims.size()};
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> exprs(rank, getAffineConstantExpr(0, b.getContext()));
  for (int64_t d = 0; d < rank; ++d) {
    shape.push_back(t.getDimSize(order[d]));
    exprs[order[d]] = getAffineDimExpr(d, b.getContext());
  }
  auto to = RankedTensorType::get(shape, t.getElementType());
  return {remap(x, to, AffineMap::get(rank, 0, exprs, b.getContext())), (int64_t)dims.size()};
}

double Importer::rowSize(Value rows, int64_t count) {
  auto t = cast<RankedTensorType>(rows.getType());
  double n = 1;
  for (int64_t d = t.getRank() - count; d < t.getRank(); ++d)
    n *= t.getDimSize(d);
  return n;
}

Value Importer::divide(Value v, double by) {
  auto t = cast<RankedTensorType>(v.getType());
  return b.create<tg::DivOp>(loc, t, v, scalar(by, t));
}

Value Importer::bcast(Value v, RankedTensorType to) {
  if (cast<RankedTensorType>(v.getType()).getShape() == to.getShape())
    return v;
  auto t = RankedTensorType::get(to.getShape(), cast<RankedTensorType>(v.getType()).getElementType());
  return b.create<tg::BroadcastOp>(loc, t, v);
}

Value Importer::scalar(double v, RankedTensorType like) {
  auto t = RankedTensorType::get({}, like.getElementType());
  Attribute a = isa<FloatType>(like.getElementType())
                    ? Attribute(b.getFloatAttr(like.getElementType(), v))
                    : Attribute(b.getIntegerAttr(like.getElementType(), (int64_t)v));
  return bcast(b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(t, a)), like);
}

/// Binds value `id` to `v`, cast to its dtype and, when its shape differs
/// (a reduction without keepdim), viewed into it by an ATen view.
Value Importer::finish(Value v, int id) {
  RankedTensorType want = typeOf(id);
  v = castTo(v, want.getElementType());
  auto have = cast<RankedTensorType>(v.getType());
  if (have.getShape() != want.getShape()) {
    // Same elements in row-major order (a reduction's kept dims): a reshape
    // that kernels absorb, or an ATen view of the contiguous result.
    auto op = b.create<tg::RemapOp>(
        loc, want, v, AffineMapAttr::get(reshapeMap(have.getShape(), want.getShape(), b.getContext())),
        b.getStringAttr("aten::view"),
        b.getArrayAttr({tg::OperandRefAttr::get(b.getContext(), 0),
                        b.getDenseI64ArrayAttr(want.getShape())}));
    setStrides(op, id);
    v = op.getResult();
  }
  values[id] = v;
  return v;
}

/// The number of trailing dims `dims` names, or -1 if they are not exactly
/// the trailing ones. An empty list means all dims.
static int64_t trailingCount(std::vector<int64_t> dims, int64_t rank) {
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  }
  for (int64_t &d : dims)
    d = d < 0 ? d + rank : d;
  std::sort(dims.begin(), dims.end());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != rank - (int64_t)dims.size() + (int64_t)i)
      return -1;
  return dims.size();
}

/// ATen's type promotion for the operands of one op: categories
/// bool < integer < float; a 0-d or scalar operand only raises the category
/// (to int64 or the default float32), never the width within one.
Type Importer::computeTypeOf(ArrayRef<const ArgValue *> args) {
  auto rankOf = [](Type t) { return t.isInteger(1) ? 0 : isa<FloatType>(t) ? 2 : 1; };
  Type best;
  int scalarCategory = -1;
  for (const ArgValue *a : args) {
    if (a->kind == ArgValue::Tensor) {
      Type t = cast<RankedTensorType>(values.lookup(a->tensors[0]).getType()).getElementType();
      bool zeroDim = seg.values[a->tensors[0]].sizes.empty();
      if (zeroDim) {
        scalarCategory = std::max(scalarCategory, rankOf(t));
        continue;
      }
      if (!best || rankOf(t) > rankOf(best) ||
          (rankOf(t) == rankOf(best) && t.getIntOrFloatBitWidth() > best.getIntOrFloatBitWidth()))
        best = t;
      else if (rankOf(t) == 2 && best != t && t.getIntOrFloatBitWidth() == best.getIntOrFloatBitWidth())
        best = b.getF32Type(); // f16 with bf16
    } else if (a->kind == ArgValue::Double || (a->kind == ArgValue::ScalarTensor && a->isFloat)) {
      scalarCategory = std::max(scalarCategory, 2);
    } else if (a->kind == ArgValue::Int || a->kind == ArgValue::ScalarTensor) {
      scalarCategory = std::max(scalarCategory, 1);
    } else if (a->kind == ArgValue::Bool) {
      scalarCategory = std::max(scalarCategory, 0);
    }
  }
  if (!best)
    return scalarCategory == 2 ? Type(b.getF32Type())
                               : scalarCategory == 1 ? Type(b.getI64Type()) : Type(b.getI1Type());
  if (scalarCategory > rankOf(best))
    return scalarCategory == 2 ? Type(b.getF32Type()) : Type(b.getI64Type());
  return best;
}

bool Importer::importComposite(const SegmentNode &node) {
  std::string q = qualified(node);
  if (node.outputs.size() != 1 || node.args.empty())
    return false;
  RankedTensorType out = typeOf(node.outputs[0]);
  auto as = [&](const ArgValue &a, Type elt) -> Value {
    auto v = operand(a, RankedTensorType::get(out.getShape(), elt));
    return failed(v) ? Value() : *v;
  };
  auto cmp = [&](Value l, Value r, StringRef pred) -> Value {
    auto t = RankedTensorType::get(out.getShape(), b.getI1Type());
    return b.create<tg::CompareOp>(loc, t, l, r, b.getStringAttr(pred));
  };
  auto done = [&](Value v) {
    if (!v)
      return false;
    finish(v, node.outputs[0]);
    return true;
  };
  StringRef name(q);
  for (StringRef pred : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    if (name == ("aten::" + pred + ".Tensor").str() || name == ("aten::" + pred + ".Scalar").str()) {
      Type t = computeTypeOf({&node.args[0], &node.args[1]});
      Value l = as(node.args[0], t), r = as(node.args[1], t);
      return l && r && done(cmp(l, r, pred));
    }
  }
  Type elt = out.getElementType();
  if (q == "aten::_to_copy") {
    // A dtype conversion on the same device; a same-type copy stays an
    // ATen call, so the result never aliases its input.
    Value in = values.lookup(node.args[0].tensors[0]);
    bool sameDevice = node.args.size() < 4 || node.args[3].kind == ArgValue::None ||
                      node.args[3].s == seg.device;
    if (!sameDevice || cast<RankedTensorType>(in.getType()).getElementType() == elt)
      return false;
    return done(castTo(in, elt));
  }
  if ((q == "aten::triu" || q == "aten::tril") && out.getRank() >= 2) {
    // Keep x where col - row >= k (triu) or <= k (tril), else 0.
    int64_t k = node.args.size() > 1 && node.args[1].kind == ArgValue::Int ? node.args[1].i : 0;
    int64_t r = out.getRank();
    auto it = RankedTensorType::get(out.getShape(), b.getI64Type());
    Value row = b.create<tg::IotaOp>(loc, it, b.getI64IntegerAttr(r - 2));
    Value col = b.create<tg::IotaOp>(loc, it, b.getI64IntegerAttr(r - 1));
    Value diff = b.create<tg::SubOp>(loc, it, col, row);
    Value keep = cmp(diff, scalar(double(k), it), q == "aten::triu" ? "ge" : "le");
    Value x = as(node.args[0], elt);
    return x && done(b.create<tg::SelectOp>(loc, out, keep, x, scalar(0, out)));
  }
  if ((q == "aten::arange" || q == "aten::arange.start" || q == "aten::arange.start_step") &&
      out.getRank() == 1) {
    // start + i * step, computed in f64 for float results (as ATen's
    // accumulate type does) and in i64 for integers.
    auto num = [](const ArgValue &a) { return a.kind == ArgValue::Double ? a.d : double(a.i); };
    bool hasStart = q != "aten::arange";
    double start = hasStart ? num(node.args[0]) : 0;
    double step = q == "aten::arange.start_step" ? num(node.args[2]) : 1;
    auto it = RankedTensorType::get(out.getShape(), b.getI64Type());
    Value i = b.create<tg::IotaOp>(loc, it, b.getI64IntegerAttr(0));
    Type ct = isa<FloatType>(elt) ? Type(b.getF64Type()) : Type(b.getI64Type());
    auto t = RankedTensorType::get(out.getShape(), ct);
    Value v = castTo(i, ct);
    v = b.create<tg::AddOp>(loc, t, b.create<tg::MulOp>(loc, t, v, scalar(step, t)), scalar(start, t));
    return done(v);
  }
  if ((q == "aten::ones" || q == "aten::zeros" || q == "aten::full") && !node.args.empty()) {
    // A filled tensor is a splat constant, broadcast: kernels read it as an
    // immediate. (Device and layout were checked by capture; dtype is the
    // result's.)
    double v = q == "aten::ones" ? 1.0 : 0.0;
    if (q == "aten::full") {
      const ArgValue &f = node.args[1];
      if (f.kind != ArgValue::Double && f.kind != ArgValue::Int && f.kind != ArgValue::Bool)
        return false;
      v = f.kind == ArgValue::Double ? f.d : f.kind == ArgValue::Int ? double(f.i) : double(f.b);
    }
    auto t0 = RankedTensorType::get({}, elt);
    Attribute a = isa<FloatType>(elt) ? Attribute(b.getFloatAttr(elt, v))
                  : elt.isInteger(1)  ? Attribute(b.getBoolAttr(v != 0))
                                      : Attribute(b.getIntegerAttr(elt, (int64_t)v));
    return done(bcast(b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(t0, a)), out));
  }
  if (q == "aten::where.self") {
    Value c = as(node.args[0], b.getI1Type());
    Value x = as(node.args[1], elt), y = as(node.args[2], elt);
    return c && x && y && done(b.create<tg::SelectOp>(loc, out, c, x, y));
  }
  if (q == "aten::masked_fill.Scalar" || q == "aten::masked_fill.Tensor") {
    Value x = as(node.args[0], elt), m = as(node.args[1], b.getI1Type());
    Value v = as(node.args[2], elt);
    return x && m && v && done(b.create<tg::SelectOp>(loc, out, m, v, x));
  }
  if (q == "aten::bitwise_not" && !isa<FloatType>(elt)) {
    Value x = as(node.args[0], elt);
    Value ones = elt.isInteger(1) ? scalar(1, out) : scalar(-1, out);
    if (elt.isInteger(1)) {
      auto t = RankedTensorType::get({}, elt);
      ones = bcast(b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(t, b.getBoolAttr(true))), out);
    }
    return x && done(b.create<tg::XorOp>(loc, out, x, ones));
  }
  if ((q == "aten::remainder.Tensor" || q == "aten::remainder.Scalar") && isa<FloatType>(elt)) {
    // Python's modulo: fmod, moved into the divisor's sign when nonzero.
    Value a = as(node.args[0], elt), d = as(node.args[1], elt);
    if (!a || !d)
      return false;
    Value zero = scalar(0, out);
    Value m = b.create<tg::RemOp>(loc, out, a, d);
    Value fix = b.create<tg::AndOp>(
        loc, RankedTensorType::get(out.getShape(), b.getI1Type()), cmp(m, zero, "ne"),
        cmp(cmp(m, zero, "lt"), cmp(d, zero, "lt"), "ne"));
    return done(b.create<tg::SelectOp>(loc, out, fix, b.create<tg::AddOp>(loc, out, m, d), m));
  }
  if (q == "aten::logical_not") {
    Type t = computeTypeOf({&node.args[0]});
    ArgValue zero;
    zero.kind = ArgValue::Int;
    Value x = as(node.args[0], t);
    return x && done(cmp(x, as(zero, t), "eq"));
  }
  static const std::set<std::string> floatOps = {
      "aten::clamp", "aten::clamp_min", "aten::clamp_max", "aten::hardtanh", "aten::silu",
      "aten::reciprocal", "aten::leaky_relu", "aten::softplus", "aten::mish",
      "aten::pow.Tensor_Scalar"};
  // Build nothing for nodes this function does not handle.
  if (!floatOps.count(q) || !isa<FloatType>(elt) || node.args[0].kind != ArgValue::Tensor)
    return false;
  Value x = as(node.args[0], elt);
  if (!x)
    return false;
  auto num = [&](double v) { return scalar(v, out); };
  if (q == "aten::clamp" || q == "aten::clamp_min" || q == "aten::clamp_max" ||
      q == "aten::hardtanh") {
    const ArgValue *lo = nullptr, *hi = nullptr;
    if (q == "aten::clamp_max")
      hi = &node.args[1];
    else
      lo = &node.args[1];
    if ((q == "aten::clamp" || q == "aten::hardtanh") && node.args.size() > 2)
      hi = &node.args[2];
    if (lo && lo->kind != ArgValue::None)
      x = b.create<tg::MaximumOp>(loc, out, x, as(*lo, elt));
    if (hi && hi->kind != ArgValue::None)
      x = b.create<tg::MinimumOp>(loc, out, x, as(*hi, elt));
    return done(x);
  }
  if (q == "aten::silu")
    return done(b.create<tg::MulOp>(loc, out, x, b.create<tg::SigmoidOp>(loc, out, x)));
  if (q == "aten::reciprocal")
    return done(b.create<tg::DivOp>(loc, out, num(1.0), x));
  if (q == "aten::leaky_relu") {
    Value neg = b.create<tg::MulOp>(loc, out, x, as(node.args[1], elt));
    return done(b.create<tg::SelectOp>(loc, out, cmp(x, num(0.0), "gt"), x, neg));
  }
  auto softplus = [&](Value v, double beta, double threshold) -> Value {
    Value bx = b.create<tg::MulOp>(loc, out, v, num(beta));
    Value soft = b.create<tg::DivOp>(loc, out,
                                     b.create<tg::Log1pOp>(loc, out, b.create<tg::ExpOp>(loc, out, bx)),
                                     num(beta));
    return b.create<tg::SelectOp>(loc, out, cmp(bx, num(threshold), "gt"), v, soft);
  };
  auto number = [](const ArgValue &a) { return a.kind == ArgValue::Double ? a.d : double(a.i); };
  if (q == "aten::softplus")
    return done(softplus(x, number(node.args[1]), number(node.args[2])));
  if (q == "aten::mish")
    return done(b.create<tg::MulOp>(loc, out, x,
                                    b.create<tg::TanhOp>(loc, out, softplus(x, 1.0, 20.0))));
  if (q == "aten::pow.Tensor_Scalar") {
    double e = number(node.args[1]);
    if (e == 2.0)
      return done(b.create<tg::MulOp>(loc, out, x, x));
    return done(b.create<tg::PowOp>(loc, out, x, as(node.args[1], elt)));
  }
  return false;
}

bool Importer::importRowOp(const SegmentNode &node) {
  std::string q = qualified(node);
  auto tensorArg = [&](size_t i) -> Value {
    return i < node.args.size() && node.args[i].kind == ArgValue::Tensor
               ? values.lookup(node.args[i].tensors[0])
               : Value();
  };
  Value x = tensorArg(0);
  if (!x)
    return false;
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  if (rank == 0 || xt.getNumElements() == 0)
    return false;
  auto dimList = [&](size_t i) -> std::vector<int64_t> {
    if (i >= node.args.size() || node.args[i].kind == ArgValue::None)
      return {};
    if (node.args[i].kind == ArgValue::Int)
      return {node.args[i].i};
    return node.args[i].ints;
  };
  bool isSum = q == "aten::sum" || q == "aten::sum.dim_IntList";
  bool isMean = q == "aten::mean.dim" || q == "aten::mean";
  bool isProd = q == "aten::prod" || q == "aten::prod.dim_int";
  if (isSum || isMean || isProd || q == "aten::amax" || q == "aten::amin") {
    bool full = q == "aten::sum" || q == "aten::mean" || q == "aten::prod";
    std::vector<int64_t> dims = full ? std::vector<int64_t>{} : dimList(1);
    Type elt = typeOf(node.outputs[0]).getElementType();
    if (isMean && !isa<FloatType>(elt))
      return false;
    auto [rows, count] = toRows(castTo(x, elt), dims);
    Value r = reduce(rows, isSum || isMean ? "sum" : isProd ? "prod" : q == "aten::amax" ? "max" : "min",
                     count);
    if (isMean)
      r = divide(r, rowSize(rows, count));
    finish(r, node.outputs[0]);
    return true;
  }
  bool isArg = q == "aten::argmax" || q == "aten::argmin";
  bool isMaxDim = q == "aten::max.dim" || q == "aten::min.dim";
  if ((isArg || isMaxDim) && xt.getElementType().getIntOrFloatBitWidth() > 1) {
    // argmax(dim=None) ranks the flattened tensor; max.dim also gives values.
    std::vector<int64_t> dims;
    if (node.args.size() > 1 && node.args[1].kind == ArgValue::Int)
      dims = {node.args[1].i};
    else if (isMaxDim)
      return false;
    bool max = q == "aten::argmax" || q == "aten::max.dim";
    auto [rows, count] = toRows(x, dims);
    auto rowsType = cast<RankedTensorType>(rows.getType());
    SmallVector<int64_t> kept(rowsType.getShape());
    for (int64_t d = kept.size() - count; d < (int64_t)kept.size(); ++d)
      kept[d] = 1;
    auto it = RankedTensorType::get(kept, b.getI64Type());
    Value at = b.create<tg::ReduceOp>(loc, it, rows, b.getStringAttr(max ? "argmax" : "argmin"),
                                      b.getI64IntegerAttr(count));
    if (isMaxDim) {
      finish(reduce(rows, max ? "max" : "min", count), node.outputs[0]);
      finish(at, node.outputs[1]);
    } else {
      finish(at, node.outputs[0]);
    }
    return true;
  }
  if (q == "aten::var.correction" || q == "aten::std.correction" ||
      q == "aten::var_mean.correction" || q == "aten::std_mean.correction") {
    if (!isa<FloatType>(xt.getElementType()))
      return false;
    auto [rows, count] = toRows(x, dimList(1));
    double correction = 1;
    if (node.args.size() > 2 && node.args[2].kind == ArgValue::Int)
      correction = node.args[2].i;
    else if (node.args.size() > 2 && node.args[2].kind == ArgValue::Double)
      correction = node.args[2].d;
    double n = rowSize(rows, count);
    Value mean = divide(reduce(rows, "sum", count), n);
    auto t = cast<RankedTensorType>(rows.getType());
    Value xc = b.create<tg::SubOp>(loc, t, rows, bcast(mean, t));
    Value var = divide(reduce(b.create<tg::MulOp>(loc, t, xc, xc), "sum", count),
                       std::max(0.0, n - correction));
    bool isStd = q.find("std") != std::string::npos;
    if (isStd)
      var = b.create<tg::SqrtOp>(loc, var.getType(), var);
    finish(var, node.outputs[0]);
    if (node.outputs.size() > 1)
      finish(mean, node.outputs[1]);
    return true;
  }
  if (q == "aten::logsumexp") {
    RankedTensorType out = typeOf(node.outputs[0]);
    if (!isa<FloatType>(out.getElementType()))
      return false;
    auto [rows, count] = toRows(castTo(x, out.getElementType()), dimList(1));
    auto t = cast<RankedTensorType>(rows.getType());
    Value m = reduce(rows, "max", count);
    auto rt = cast<RankedTensorType>(m.getType());
    // An infinite max would give inf - inf: ATen shifts by 0 there.
    auto i1 = RankedTensorType::get(rt.getShape(), b.getI1Type());
    Value isInf = b.create<tg::CompareOp>(loc, i1, b.create<tg::AbsOp>(loc, rt, m),
                                          scalar(INFINITY, rt), b.getStringAttr("eq"));
    m = b.create<tg::SelectOp>(loc, rt, isInf, scalar(0, rt), m);
    Value e = b.create<tg::ExpOp>(loc, t, b.create<tg::SubOp>(loc, t, rows, bcast(m, t)));
    Value r = b.create<tg::AddOp>(loc, rt, b.create<tg::LogOp>(loc, rt, reduce(e, "sum", count)), m);
    finish(r, node.outputs[0]);
    return true;
  }
  bool isNorm = q == "aten::norm.ScalarOpt_dim" || q == "aten::norm.Scalar" ||
                q == "aten::norm.ScalarOpt_dim_dtype";
  if (q == "aten::linalg_vector_norm" || isNorm) {
    RankedTensorType out = typeOf(node.outputs[0]);
    if (!isa<FloatType>(out.getElementType()) || !isa<FloatType>(xt.getElementType()))
      return false;
    double p = 2.0;
    if (node.args.size() > 1 && node.args[1].kind == ArgValue::Double)
      p = node.args[1].d;
    else if (node.args.size() > 1 && node.args[1].kind == ArgValue::Int)
      p = node.args[1].i;
    auto [rows, count] = toRows(castTo(x, out.getElementType()),
                                q == "aten::norm.Scalar" ? std::vector<int64_t>{} : dimList(2));
    auto t = cast<RankedTensorType>(rows.getType());
    Value a = b.create<tg::AbsOp>(loc, t, rows);
    Value r;
    if (std::isinf(p)) {
      r = reduce(a, p > 0 ? "max" : "min", count);
    } else if (p == 0) {
      auto i1 = RankedTensorType::get(t.getShape(), b.getI1Type());
      Value nz = b.create<tg::CompareOp>(loc, i1, a, scalar(0, t), b.getStringAttr("ne"));
      r = reduce(b.create<tg::CastOp>(loc, t, nz), "sum", count);
    } else if (p == 1) {
      r = reduce(a, "sum", count);
    } else if (p == 2) {
      Value s = reduce(b.create<tg::MulOp>(loc, t, a, a), "sum", count);
      r = b.create<tg::SqrtOp>(loc, s.getType(), s);
    } else {
      Value s = reduce(b.create<tg::PowOp>(loc, t, a, scalar(p, t)), "sum", count);
      auto rt = cast<RankedTensorType>(s.getType());
      r = b.create<tg::PowOp>(loc, rt, s, scalar(1.0 / p, rt));
    }
    finish(r, node.outputs[0]);
    return true;
  }
  if (q == "aten::_softmax" || q == "aten::_log_softmax") {
    int64_t dim = node.args[1].i < 0 ? node.args[1].i + rank : node.args[1].i;
    if (dim != rank - 1)
      return false;
    RankedTensorType out = typeOf(node.outputs[0]);
    Type elt = out.getElementType();
    Value in = castTo(x, elt);
    auto t = RankedTensorType::get(xt.getShape(), elt);
    Value shifted = b.create<tg::SubOp>(loc, t, in, bcast(reduce(in, "max", 1), t));
    Value e = b.create<tg::ExpOp>(loc, t, shifted);
    Value sum = bcast(reduce(e, "sum", 1), t);
    Value r = q == "aten::_softmax"
                  ? Value(b.create<tg::DivOp>(loc, t, e, sum))
                  : Value(b.create<tg::SubOp>(loc, t, shifted, b.create<tg::LogOp>(loc, t, sum)));
    finish(r, node.outputs[0]);
    return true;
  }
  bool evalNativeBn = q == "aten::native_batch_norm" && node.args.size() == 8 &&
                      node.args[5].kind == ArgValue::Bool && !node.args[5].b;
  if (q == "aten::_native_batch_norm_legit_no_training" || evalNativeBn) {
    double epsilon = node.args[evalNativeBn ? 7 : 6].d;
    // Inference batch norm is pointwise: per-channel statistics (dim 1)
    // broadcast over the rest. Half types compute in float, as ATen does.
    Type elt = xt.getElementType();
    if (rank < 2 || !isa<FloatType>(elt))
      return false;
    Type ct = elt.isF16() || elt.isBF16() ? Type(b.getF32Type()) : elt;
    auto t = RankedTensorType::get(xt.getShape(), ct);
    // [C] -> [C, 1, ...] -> x's shape.
    SmallVector<int64_t> chShape(rank - 1, 1);
    chShape[0] = xt.getDimSize(1);
    auto channel = [&](Value v) -> Value {
      auto vt = cast<RankedTensorType>(v.getType());
      auto to = RankedTensorType::get(chShape, vt.getElementType());
      Value r = remap(v, to, reshapeMap(vt.getShape(), chShape, b.getContext()));
      return bcast(castTo(r, ct), t);
    };
    Value mean = tensorArg(3), var = tensorArg(4);
    if (!mean || !var)
      return false;
    // rsqrt(var + eps) per element rather than per channel: one more
    // vector op per element, one kernel launch and buffer fewer.
    Value invstd = b.create<tg::RsqrtOp>(
        loc, t, b.create<tg::AddOp>(loc, t, channel(var), scalar(epsilon, t)));
    Value y = b.create<tg::MulOp>(loc, t, b.create<tg::SubOp>(loc, t, castTo(x, ct), channel(mean)),
                                  invstd);
    if (Value w = tensorArg(1))
      y = b.create<tg::MulOp>(loc, t, y, channel(w));
    if (Value bias = tensorArg(2))
      y = b.create<tg::AddOp>(loc, t, y, channel(bias));
    finish(y, node.outputs[0]);
    // The saved mean / invstd outputs are empty in inference.
    for (int id : ArrayRef<int>(node.outputs).drop_front()) {
      RankedTensorType et = typeOf(id);
      if (et.getNumElements() != 0)
        return true; // unused in practice; a reader makes import fail loudly
      values[id] = b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(et, ArrayRef<Attribute>{}));
    }
    return true;
  }
  if (q == "aten::native_dropout" && node.outputs.size() == 2 && node.args.size() >= 3 &&
      node.args[2].kind == ArgValue::Bool && node.args[2].b && isa<FloatType>(xt.getElementType())) {
    // keep = uniform >= p (probability 1 - p); out = keep ? x / (1 - p) : 0.
    // The seed is drawn per call from ATen's default generator by an ATen
    // randint step, so manual_seed makes the result reproducible.
    double p = node.args[1].d;
    auto ft = RankedTensorType::get(xt.getShape(), b.getF32Type());
    Value u = b.create<tg::UniformOp>(loc, ft, drawSeed());
    auto i1 = RankedTensorType::get(xt.getShape(), b.getI1Type());
    Value keep = b.create<tg::CompareOp>(loc, i1, u, scalar(p, ft), b.getStringAttr("ge"));
    Type ct = xt.getElementType().isF64() ? xt.getElementType() : Type(b.getF32Type());
    auto t = RankedTensorType::get(xt.getShape(), ct);
    double scale = p >= 1.0 ? 0.0 : 1.0 / (1.0 - p);
    Value scaled = b.create<tg::MulOp>(loc, t, castTo(x, ct), scalar(scale, t));
    finish(b.create<tg::SelectOp>(loc, t, keep, scaled, scalar(0, t)), node.outputs[0]);
    finish(keep, node.outputs[1]);
    return true;
  }
  if (q == "aten::native_layer_norm") {
    int64_t count = node.args[1].ints.size();
    if (count < 1 || count > rank || !isa<FloatType>(xt.getElementType()))
      return false;
    auto t = xt;
    int64_t n = 1;
    for (int64_t d = rank - count; d < rank; ++d)
      n *= xt.getDimSize(d);
    Value sum = reduce(x, "sum", count);
    auto rt = cast<RankedTensorType>(sum.getType());
    Value mean = b.create<tg::DivOp>(loc, rt, sum, scalar(double(n), rt));
    Value xc = b.create<tg::SubOp>(loc, t, x, bcast(mean, t));
    Value sq = b.create<tg::MulOp>(loc, t, xc, xc);
    Value var = b.create<tg::DivOp>(loc, rt, reduce(sq, "sum", count), scalar(double(n), rt));
    Value rstd = b.create<tg::RsqrtOp>(
        loc, rt, b.create<tg::AddOp>(loc, rt, var, scalar(node.args[4].d, rt)));
    Value y = b.create<tg::MulOp>(loc, t, xc, bcast(rstd, t));
    if (Value w = tensorArg(2))
      y = b.create<tg::MulOp>(loc, t, y, bcast(castTo(w, t.getElementType()), t));
    if (Value bias = tensorArg(3))
      y = b.create<tg::AddOp>(loc, t, y, bcast(castTo(bias, t.getElementType()), t));
    finish(y, node.outputs[0]);
    finish(mean, node.outputs[1]);
    finish(rstd, node.outputs[2]);
    return true;
  }
  return false;
}

FailureOr<func::FuncOp> importSegment(const Segment &seg, ModuleOp module,
                                      std::string &error) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  SmallVector<Type> argTypes, resultTypes;
  for (int id : seg.inputs) {
    Type elt = elementType(ctx, seg.values[id].dtype);
    if (!elt) {
      error = std::string("unsupported input dtype ") +
              dtypeName(seg.values[id].dtype);
      return failure();
    }
    argTypes.push_back(RankedTensorType::get(seg.values[id].sizes, elt));
  }
  for (int id : seg.outputs)
    resultTypes.push_back(RankedTensorType::get(
        seg.values[id].sizes, elementType(ctx, seg.values[id].dtype)));
  b.setInsertionPointToEnd(module.getBody());
  auto fn = b.create<func::FuncOp>(b.getUnknownLoc(), "segment",
                                   b.getFunctionType(argTypes, resultTypes));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Importer imp(seg, b, error);
  for (auto [i, id] : llvm::enumerate(seg.inputs)) {
    imp.values[id] = entry->getArgument(i);
    fn.setArgAttr(i, "tg.strides", b.getDenseI64ArrayAttr(seg.values[id].strides));
  }
  for (size_t i = 0; i < seg.nodes.size(); ++i)
    if (failed(imp.importAt(i)))
      return failure();
  SmallVector<Value> results;
  for (int id : seg.outputs) {
    Value v = imp.values.lookup(id);
    if (!v) {
      error = "output %" + std::to_string(id) + " is not produced by the segment";
      return failure();
    }
    results.push_back(v);
  }
  b.create<func::ReturnOp>(b.getUnknownLoc(), results);
  return fn;
}

} // namespace tgc
