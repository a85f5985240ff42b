//===- ImportComposites.cpp - pointwise ATen ops built from several tg ops ===//
//
// Comparisons, selections, factories, casts and activations. Which op takes
// which lowering, and what varies between ops of one lowering (a predicate,
// a clamp's bounds), is read from the op registry's row.
//
//===----------------------------------------------------------------------===//
#include "compiler/pipeline/Importer.h"

#include <cmath>
#include <cstring>

namespace tgc::detail {

using ops::Lowering;

Value Importer::compare(Value l, Value r, StringRef pred) {
  auto t = RankedTensorType::get(cast<RankedTensorType>(l.getType()).getShape(), b.getI1Type());
  return b.create<tg::CompareOp>(loc, t, l, r, b.getStringAttr(pred));
}

Value Importer::operandAs(const ArgValue &a, RankedTensorType like, Type elt) {
  auto v = operand(a, RankedTensorType::get(like.getShape(), elt));
  return failed(v) ? Value() : *v;
}

/// A number argument (int or double) as a double.
static double numberOf(const ArgValue &a) { return a.kind == ArgValue::Double ? a.d : double(a.i); }

bool Importer::importComposite(const SegmentNode &node, const ops::OpInfo &info) {
  if (node.outputs.size() != 1 || node.args.empty())
    return false;
  RankedTensorType out = typeOf(node.outputs[0]);
  Type elt = out.getElementType();
  auto done = [&](Value v) {
    if (!v)
      return false;
    finish(v, node.outputs[0]);
    return true;
  };
  switch (info.lowering) {
  case Lowering::Compare: {
    Type t = computeTypeOf({&node.args[0], &node.args[1]});
    Value l = operandAs(node.args[0], out, t), r = operandAs(node.args[1], out, t);
    return l && r && done(compare(l, r, info.variant));
  }
  case Lowering::Cast: {
    // A dtype conversion on the same device; a same-type copy stays an
    // ATen call, so the result never aliases its input.
    Value in = values.lookup(node.args[0].tensors[0]);
    bool sameDevice = node.args.size() < 4 || node.args[3].kind == ArgValue::None ||
                      node.args[3].s == seg.device;
    if (!sameDevice || cast<RankedTensorType>(in.getType()).getElementType() == elt)
      return false;
    return done(castTo(in, elt));
  }
  case Lowering::Triangle:
    return out.getRank() >= 2 && done(triangle(node, out, info.variant));
  case Lowering::Arange:
    return out.getRank() == 1 && done(arange(node, out, info.variant));
  case Lowering::Fill:
    return done(fill(node, out, info.variant));
  case Lowering::Where: {
    Value c = operandAs(node.args[0], out, b.getI1Type());
    Value x = operandAs(node.args[1], out, elt), y = operandAs(node.args[2], out, elt);
    return c && x && y && done(b.create<tg::SelectOp>(loc, out, c, x, y));
  }
  case Lowering::MaskedFill: {
    Value x = operandAs(node.args[0], out, elt), m = operandAs(node.args[1], out, b.getI1Type());
    Value v = operandAs(node.args[2], out, elt);
    return x && m && v && done(b.create<tg::SelectOp>(loc, out, m, v, x));
  }
  case Lowering::BitwiseNot: {
    if (isa<FloatType>(elt))
      return false;
    Value x = operandAs(node.args[0], out, elt);
    Value ones;
    if (elt.isInteger(1)) {
      auto t = RankedTensorType::get({}, elt);
      ones = bcast(b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(t, b.getBoolAttr(true))), out);
    } else {
      ones = scalar(-1, out);
    }
    return x && done(b.create<tg::XorOp>(loc, out, x, ones));
  }
  case Lowering::Remainder: {
    // Python's modulo: fmod, moved into the divisor's sign when nonzero.
    Value a = operandAs(node.args[0], out, elt), d = operandAs(node.args[1], out, elt);
    if (!a || !d)
      return false;
    Value zero = scalar(0, out);
    Value m = b.create<tg::RemOp>(loc, out, a, d);
    Value fix = b.create<tg::AndOp>(loc, RankedTensorType::get(out.getShape(), b.getI1Type()),
                                    compare(m, zero, "ne"),
                                    compare(compare(m, zero, "lt"), compare(d, zero, "lt"), "ne"));
    return done(b.create<tg::SelectOp>(loc, out, fix, b.create<tg::AddOp>(loc, out, m, d), m));
  }
  case Lowering::LogicalNot: {
    Type t = computeTypeOf({&node.args[0]});
    ArgValue zero;
    zero.kind = ArgValue::Int;
    Value x = operandAs(node.args[0], out, t);
    return x && done(compare(x, operandAs(zero, out, t), "eq"));
  }
  default:
    break;
  }
  // The rest are float activations of a tensor argument.
  if (node.args[0].kind != ArgValue::Tensor)
    return false;
  Value x = operandAs(node.args[0], out, elt);
  return x && done(activation(node, info, x, out));
}

Value Importer::triangle(const SegmentNode &node, RankedTensorType out, StringRef keepWhere) {
  // Keep x where col - row >= k (triu) or <= k (tril), else 0.
  int64_t k = node.args.size() > 1 && node.args[1].kind == ArgValue::Int ? node.args[1].i : 0;
  int64_t r = out.getRank();
  auto it = RankedTensorType::get(out.getShape(), b.getI64Type());
  Value row = b.create<tg::IotaOp>(loc, it, b.getI64IntegerAttr(r - 2));
  Value col = b.create<tg::IotaOp>(loc, it, b.getI64IntegerAttr(r - 1));
  Value diff = b.create<tg::SubOp>(loc, it, col, row);
  Value keep = compare(diff, scalar(double(k), it), keepWhere);
  Value x = operandAs(node.args[0], out, out.getElementType());
  return x ? Value(b.create<tg::SelectOp>(loc, out, keep, x, scalar(0, out))) : Value();
}

Value Importer::arange(const SegmentNode &node, RankedTensorType out, StringRef form) {
  // start + i * step, computed in f64 for float results (as ATen's
  // accumulate type does) and in i64 for integers.
  double start = form.empty() ? 0 : numberOf(node.args[0]);
  double step = form == "start_step" ? numberOf(node.args[2]) : 1;
  auto it = RankedTensorType::get(out.getShape(), b.getI64Type());
  Value i = b.create<tg::IotaOp>(loc, it, b.getI64IntegerAttr(0));
  Type ct = isa<FloatType>(out.getElementType()) ? Type(b.getF64Type()) : Type(b.getI64Type());
  auto t = RankedTensorType::get(out.getShape(), ct);
  Value v = castTo(i, ct);
  return b.create<tg::AddOp>(loc, t, b.create<tg::MulOp>(loc, t, v, scalar(step, t)),
                             scalar(start, t));
}

Value Importer::fill(const SegmentNode &node, RankedTensorType out, StringRef value) {
  // A filled tensor is a splat constant, broadcast: kernels read it as an
  // immediate. (Device and layout were checked by capture; dtype is the
  // result's.) ones/zeros name their value; full reads argument 1.
  double v = value == "1" ? 1.0 : 0.0;
  if (value.empty()) {
    const ArgValue &f = node.args[1];
    if (f.kind != ArgValue::Double && f.kind != ArgValue::Int && f.kind != ArgValue::Bool)
      return Value();
    v = f.kind == ArgValue::Double ? f.d : f.kind == ArgValue::Int ? double(f.i) : double(f.b);
  }
  Type elt = out.getElementType();
  auto t0 = RankedTensorType::get({}, elt);
  Attribute a = isa<FloatType>(elt) ? Attribute(b.getFloatAttr(elt, v))
                : elt.isInteger(1)  ? Attribute(b.getBoolAttr(v != 0))
                                    : Attribute(b.getIntegerAttr(elt, (int64_t)v));
  return bcast(b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(t0, a)), out);
}

Value Importer::activation(const SegmentNode &node, const ops::OpInfo &info, Value x,
                           RankedTensorType out) {
  Type elt = out.getElementType();
  auto num = [&](double v) { return scalar(v, out); };
  auto softplus = [&](Value v, double beta, double threshold) -> Value {
    Value bx = b.create<tg::MulOp>(loc, out, v, num(beta));
    Value soft = b.create<tg::DivOp>(
        loc, out, b.create<tg::Log1pOp>(loc, out, b.create<tg::ExpOp>(loc, out, bx)), num(beta));
    return b.create<tg::SelectOp>(loc, out, compare(bx, num(threshold), "gt"), v, soft);
  };
  switch (info.lowering) {
  case Lowering::Clamp: {
    // clamp(x, lo, hi), clamp_min(x, lo), clamp_max(x, hi), hardtanh(x, lo, hi).
    StringRef bounds = info.variant;
    const ArgValue *lo = bounds == "hi" ? nullptr : &node.args[1];
    const ArgValue *hi = bounds == "hi" ? &node.args[1]
                         : bounds == "both" && node.args.size() > 2 ? &node.args[2]
                                                                     : nullptr;
    if (lo && lo->kind != ArgValue::None)
      x = b.create<tg::MaximumOp>(loc, out, x, operandAs(*lo, out, elt));
    if (hi && hi->kind != ArgValue::None)
      x = b.create<tg::MinimumOp>(loc, out, x, operandAs(*hi, out, elt));
    return x;
  }
  case Lowering::Reciprocal:
    return b.create<tg::DivOp>(loc, out, num(1.0), x);
  case Lowering::LeakyRelu: {
    Value neg = b.create<tg::MulOp>(loc, out, x, operandAs(node.args[1], out, elt));
    return b.create<tg::SelectOp>(loc, out, compare(x, num(0.0), "gt"), x, neg);
  }
  case Lowering::Softplus:
    return softplus(x, numberOf(node.args[1]), numberOf(node.args[2]));
  case Lowering::Mish:
    return b.create<tg::MulOp>(loc, out, x, b.create<tg::TanhOp>(loc, out, softplus(x, 1.0, 20.0)));
  case Lowering::HardSigmoid:
  case Lowering::HardSwish: {
    // ATen's order: min(max(x + 3, 0), 6) / 6, times x for hardswish
    // before the division.
    Value r6 = b.create<tg::MinimumOp>(
        loc, out,
        b.create<tg::MaximumOp>(loc, out, b.create<tg::AddOp>(loc, out, x, num(3.0)), num(0.0)),
        num(6.0));
    if (info.lowering == Lowering::HardSwish)
      r6 = b.create<tg::MulOp>(loc, out, x, r6);
    return b.create<tg::DivOp>(loc, out, r6, num(6.0));
  }
  case Lowering::PowScalar:
    if (numberOf(node.args[1]) == 2.0)
      return b.create<tg::MulOp>(loc, out, x, x);
    return b.create<tg::PowOp>(loc, out, x, operandAs(node.args[1], out, elt));
  default:
    return Value();
  }
}

} // namespace tgc::detail
