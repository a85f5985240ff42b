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
  Type ct = elt.isF16() || elt.isBF16() ? Type(b.getF32Type()) : elt;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1)
      dims.push_back(d);
  auto [rows, count] = toRows(castTo(x, ct), dims);
  auto t = cast<RankedTensorType>(rows.getType());
  double n = rowSize(rows, count);
  Value mean = divide(reduce(rows, "sum", count), n);
  auto rt = cast<RankedTensorType>(mean.getType());
  Value xc = b.create<tg::SubOp>(loc, t, rows, bcast(mean, t));
  Value var = divide(reduce(b.create<tg::MulOp>(loc, t, xc, xc), "sum", count), n);
  Value invstd = b.create<tg::RsqrtOp>(
      loc, rt, b.create<tg::AddOp>(loc, rt, var, scalar(node.args[7].d, rt)));
  Value y = b.create<tg::MulOp>(loc, t, xc, bcast(invstd, t));
  // A per-channel [C] tensor as the row space's [C, 1, ...].
  auto perRow = [&](Value v) -> Value {
    auto vt = cast<RankedTensorType>(v.getType());
    auto to = RankedTensorType::get(rt.getShape(), vt.getElementType());
    return castTo(remap(v, to, reshapeMap(vt.getShape(), rt.getShape(), b.getContext())), ct);
  };
  if (Value w = tensorArg(1))
    y = b.create<tg::MulOp>(loc, t, y, bcast(perRow(w), t));
  if (Value bias = tensorArg(2))
    y = b.create<tg::AddOp>(loc, t, y, bcast(perRow(bias), t));
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
    auto copy = b.create<tg::ExternOp>(
        loc, TypeRange{runType}, b.getStringAttr("aten::copy_"), ValueRange{running, next},
        b.getArrayAttr({tg::OperandRefAttr::get(b.getContext(), 0),
                        tg::OperandRefAttr::get(b.getContext(), 1), b.getBoolAttr(false)}),
        b.getArrayAttr({b.getDenseI64ArrayAttr(seg.values[id].strides)}));
    copy->setAttr("mutates", b.getUnitAttr());
    values[id] = copy.getResult(0);
  };
  update(3, mean, 1);
  update(4, var, n > 1 ? n / (n - 1) : INFINITY);
  return true;
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
    RankedTensorType out = typeOf(node.outputs[0]);
    Type elt = out.getElementType();
    // Over another dim, the row space has `dim` moved last (a remap).
    Value in = toRows(castTo(x, elt), {dim}).first;
    auto t = cast<RankedTensorType>(in.getType());
    Value shifted = b.create<tg::SubOp>(loc, t, in, bcast(reduce(in, "max", 1), t));
    Value e = b.create<tg::ExpOp>(loc, t, shifted);
    Value sum = bcast(reduce(e, "sum", 1), t);
    Value r = q == "aten::_softmax"
                  ? Value(b.create<tg::DivOp>(loc, t, e, sum))
                  : Value(b.create<tg::SubOp>(loc, t, shifted, b.create<tg::LogOp>(loc, t, sum)));
    if (dim == rank - 1) {
      finish(r, node.outputs[0]);
      return true;
    }
    fromRows(r, {dim}, node.outputs[0]);
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

} // namespace tgc::detail
