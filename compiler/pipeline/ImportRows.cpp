//===- ImportRows.cpp - reductions, norms, softmax and composite ops -----===//
#include "compiler/pipeline/Importer.h"

#include <algorithm>
#include <cmath>

namespace tgc::detail {

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

RankedTensorType Importer::rowStatsType(Value rows, int64_t count) {
  auto t = cast<RankedTensorType>(rows.getType());
  SmallVector<int64_t> kept(t.getShape());
  std::fill(kept.end() - count, kept.end(), 1);
  return RankedTensorType::get(kept, t.getElementType());
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

Type Importer::opmath(Type t) {
  return t.isF16() || t.isBF16() ? Type(b.getF32Type()) : t;
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

/// Binds value `id` to `rows`, a row-space result of toRows(_, dims),
/// moved back by a permute. The row-space result is laid out so that the
/// permute gives `id`'s strides (contiguous, as eager's), a zero-copy view.
void Importer::fromRows(Value rows, ArrayRef<int64_t> dims, int id) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType out = typeOf(id);
  int64_t rank = out.getRank();
  const std::vector<int64_t> &strides = seg.values[id].strides;
  // toRows' order: kept dims, then the row dims, each ascending.
  SmallVector<int64_t> order, rowStrides, perm(rank);
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(dims, d))
      order.push_back(d);
  for (int64_t d = 0; d < rank; ++d)
    if (llvm::is_contained(dims, d))
      order.push_back(d);
  SmallVector<AffineExpr> exprs;
  for (int64_t k = 0; k < rank; ++k) {
    rowStrides.push_back(strides[order[k]]);
    perm[order[k]] = k;
  }
  for (int64_t j = 0; j < rank; ++j)
    exprs.push_back(getAffineDimExpr(order[j], ctx));
  rows.getDefiningOp()->setAttr("tg.strides", b.getDenseI64ArrayAttr(rowStrides));
  auto op = b.create<tg::RemapOp>(
      loc, out, rows, AffineMapAttr::get(AffineMap::get(rank, 0, exprs, ctx)),
      b.getStringAttr("aten::permute"),
      b.getArrayAttr({tg::OperandRefAttr::get(ctx, 0), b.getDenseI64ArrayAttr(perm)}));
  setStrides(op, id);
  values[id] = op.getResult();
}

bool Importer::importBatchNormTraining(const SegmentNode &node) {
  // native_batch_norm(input, weight?, bias?, running_mean?, running_var?,
  //                   training, momentum, eps) -> (out, save_mean, save_invstd)
  auto tensorArg = [&](size_t i) -> Value {
    return node.args[i].kind == ArgValue::Tensor ? values.lookup(node.args[i].tensors[0]) : Value();
  };
  if (node.args.size() != 8 || node.outputs.size() != 3 || node.args[0].kind != ArgValue::Tensor ||
      node.args[5].kind != ArgValue::Bool || !node.args[5].b)
    return false;
  Value x = tensorArg(0);
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  Type elt = xt.getElementType();
  if (rank < 2 || !isa<FloatType>(elt) || xt.getNumElements() == 0)
    return false;
  // Statistics per channel (dim 1): rows are channels. Half types in float.
  Type ct = opmath(elt);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1)
      dims.push_back(d);
  auto [rows, count] = toRows(castTo(x, ct), dims);
  auto t = cast<RankedTensorType>(rows.getType());
  double n = rowSize(rows, count);
  RankedTensorType rt = rowStatsType(rows, count);
  // A per-channel [C] tensor as the row space's [C, 1, ...].
  auto perRow = [&](Value v) -> Value {
    auto vt = cast<RankedTensorType>(v.getType());
    auto to = RankedTensorType::get(rt.getShape(), vt.getElementType());
    return castTo(remap(v, to, reshapeMap(vt.getShape(), rt.getShape(), b.getContext())), ct);
  };
  Value weight = tensorArg(1), bias = tensorArg(2);
  weight = weight ? bcast(perRow(weight), t) : weight;
  bias = bias ? bcast(perRow(bias), t) : bias;
  // One tg.batch_norm_training; tg-decompose computes it.
  auto bn = b.create<tg::BatchNormTrainingOp>(loc, TypeRange{t, rt, rt, rt}, rows, weight, bias,
                                              b.getI64IntegerAttr(count),
                                              b.getF64FloatAttr(node.args[7].d));
  Value y = bn.getResult(), mean = bn.getMean(), invstd = bn.getInvstd(), var = bn.getVar();
  fromRows(castTo(y, typeOf(node.outputs[0]).getElementType()), dims, node.outputs[0]);
  finish(mean, node.outputs[1]);
  finish(invstd, node.outputs[2]);
  // running = momentum * batch statistic + (1 - momentum) * running, as
  // ATen orders it; the variance there is unbiased.
  double momentum = node.args[6].d;
  auto update = [&](size_t arg, Value stat, double scale) {
    Value running = tensorArg(arg);
    if (!running)
      return;
    auto runType = cast<RankedTensorType>(running.getType());
    Value s = stat;
    if (scale != 1)
      s = b.create<tg::MulOp>(loc, rt, s, scalar(scale, rt));
    Value next = b.create<tg::AddOp>(
        loc, rt, b.create<tg::MulOp>(loc, rt, s, scalar(momentum, rt)),
        b.create<tg::MulOp>(loc, rt, perRow(running), scalar(1 - momentum, rt)));
    next = castTo(next, runType.getElementType());
    next = remap(next, runType, reshapeMap(rt.getShape(), runType.getShape(), b.getContext()));
    int id = node.args[arg].tensors[0];
    values[id] = copyInto(running, next, id);
  };
  update(3, mean, 1);
  update(4, var, n > 1 ? n / (n - 1) : INFINITY);
  return true;
}

bool Importer::importRowOp(const SegmentNode &node, const ops::OpInfo &info) {
  using ops::Lowering;
  StringRef variant = info.variant;
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
  switch (info.lowering) {
  case Lowering::ReduceAll:
  case Lowering::Reduce: {
    // variant: sum, mean (float results only), prod, max, min.
    bool isMean = variant == "mean";
    std::vector<int64_t> dims =
        info.lowering == Lowering::ReduceAll ? std::vector<int64_t>{} : dimList(1);
    Type elt = typeOf(node.outputs[0]).getElementType();
    auto [rows, count] = toRows(castTo(x, elt), dims);
    Value r = reduce(rows, isMean ? "sum" : variant, count);
    if (isMean)
      r = divide(r, rowSize(rows, count));
    finish(r, node.outputs[0]);
    return true;
  }
  case Lowering::ArgReduce:
  case Lowering::ReduceWithIndices: {
    if (xt.getElementType().getIntOrFloatBitWidth() <= 1)
      return false;
    bool isMaxDim = info.lowering == Lowering::ReduceWithIndices;
    // argmax(dim=None) ranks the flattened tensor; max.dim also gives values.
    std::vector<int64_t> dims;
    if (node.args.size() > 1 && node.args[1].kind == ArgValue::Int)
      dims = {node.args[1].i};
    else if (isMaxDim)
      return false;
    bool max = variant == "argmax" || variant == "max";
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
  case Lowering::Moments: {
    if (!isa<FloatType>(xt.getElementType()))
      return false;
    auto [rows, count] = toRows(castTo(x, opmath(xt.getElementType())), dimList(1));
    double correction = 1;
    if (node.args.size() > 2 && node.args[2].kind == ArgValue::Int)
      correction = node.args[2].i;
    else if (node.args.size() > 2 && node.args[2].kind == ArgValue::Double)
      correction = node.args[2].d;
    RankedTensorType rt = rowStatsType(rows, count);
    auto m = b.create<tg::MomentsOp>(loc, TypeRange{rt, rt}, rows, b.getI64IntegerAttr(count),
                                     b.getF64FloatAttr(correction),
                                     b.getBoolAttr(variant == "std"));
    finish(m.getResult(), node.outputs[0]);
    if (node.outputs.size() > 1)
      finish(m.getMean(), node.outputs[1]);
    return true;
  }
  case Lowering::LogSumExp: {
    RankedTensorType out = typeOf(node.outputs[0]);
    if (!isa<FloatType>(out.getElementType()))
      return false;
    auto [rows, count] = toRows(castTo(x, opmath(out.getElementType())), dimList(1));
    finish(b.create<tg::LogSumExpOp>(loc, rowStatsType(rows, count), rows,
                                     b.getI64IntegerAttr(count)),
           node.outputs[0]);
    return true;
  }
  case Lowering::VectorNorm: {
    RankedTensorType out = typeOf(node.outputs[0]);
    if (!isa<FloatType>(out.getElementType()) || !isa<FloatType>(xt.getElementType()))
      return false;
    double p = 2.0;
    if (node.args.size() > 1 && node.args[1].kind == ArgValue::Double)
      p = node.args[1].d;
    else if (node.args.size() > 1 && node.args[1].kind == ArgValue::Int)
      p = node.args[1].i;
    auto [rows, count] = toRows(castTo(x, opmath(out.getElementType())),
                                variant == "all" ? std::vector<int64_t>{} : dimList(2));
    finish(b.create<tg::VectorNormOp>(loc, rowStatsType(rows, count), rows,
                                      b.getI64IntegerAttr(count), b.getF64FloatAttr(p)),
           node.outputs[0]);
    return true;
  }
  case Lowering::Softmax: {
    int64_t dim = node.args[1].i < 0 ? node.args[1].i + rank : node.args[1].i;
    RankedTensorType out = typeOf(node.outputs[0]);
    Type elt = out.getElementType();
    // Over another dim, the row space has `dim` moved last (a remap).
    Value in = toRows(castTo(x, opmath(elt)), {dim}).first;
    Value r = b.create<tg::SoftmaxOp>(loc, in.getType(), in, b.getBoolAttr(variant == "log_softmax"));
    if (dim == rank - 1) {
      finish(r, node.outputs[0]);
      return true;
    }
    fromRows(castTo(r, elt), {dim}, node.outputs[0]);
    return true;
  }
  case Lowering::BatchNorm:
  case Lowering::BatchNormInference: {
    // Training forms were lowered before (importBatchNormTraining); the eval
    // form of native_batch_norm (variant "eval") is the inference one.
    bool evalNativeBn = variant == "eval" && node.args.size() == 8 &&
                        node.args[5].kind == ArgValue::Bool && !node.args[5].b;
    if (info.lowering == Lowering::BatchNorm && !evalNativeBn)
      return false;
    double epsilon = node.args[evalNativeBn ? 7 : 6].d;
    // Inference batch norm is pointwise: per-channel statistics (dim 1)
    // broadcast over the rest. Half types compute in float, as ATen does.
    Type elt = xt.getElementType();
    if (rank < 2 || !isa<FloatType>(elt))
      return false;
    Type ct = opmath(elt);
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
    Value weight = tensorArg(1), bias = tensorArg(2);
    mean = channel(mean);
    var = channel(var);
    weight = weight ? channel(weight) : weight;
    bias = bias ? channel(bias) : bias;
    // One tg.batch_norm; tg-decompose computes it.
    Value y = b.create<tg::BatchNormOp>(loc, t, castTo(x, ct), mean, var, weight, bias,
                                        b.getF64FloatAttr(epsilon));
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
  case Lowering::Dropout: {
    if (node.outputs.size() != 2 || node.args.size() < 3 || node.args[2].kind != ArgValue::Bool ||
        !node.args[2].b || !isa<FloatType>(xt.getElementType()))
      return false;
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
  case Lowering::LayerNorm: {
    int64_t count = node.args[1].ints.size();
    if (count < 1 || count > rank || !isa<FloatType>(xt.getElementType()))
      return false;
    // One tg.layer_norm (tg-decompose computes it); weight and bias are
    // broadcast to the input, the statistics keep the normalized dims as 1s.
    // Half types compute in float and round once, as ATen's kernel does.
    auto ct = RankedTensorType::get(xt.getShape(), opmath(xt.getElementType()));
    auto affine = [&](Value v) { return v ? bcast(castTo(v, ct.getElementType()), ct) : v; };
    SmallVector<int64_t> rowShape(xt.getShape());
    std::fill(rowShape.end() - count, rowShape.end(), 1);
    auto rt = RankedTensorType::get(rowShape, ct.getElementType());
    Value weight = affine(tensorArg(2));
    Value bias = affine(tensorArg(3));
    auto ln = b.create<tg::LayerNormOp>(loc, TypeRange{ct, rt, rt}, castTo(x, ct.getElementType()),
                                        weight, bias,
                                        b.getI64IntegerAttr(count),
                                        b.getF64FloatAttr(node.args[4].d));
    finish(ln.getResult(), node.outputs[0]);
    finish(ln.getMean(), node.outputs[1]);
    finish(ln.getRstd(), node.outputs[2]);
    return true;
  }
  default:
    return false;
  }
}

} // namespace tgc::detail
