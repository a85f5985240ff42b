//===- TGOps.cpp - verifiers and scalar forms of `tg` ops -----------------===//
#include "dialects/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
using namespace tgc::tg;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

static bool isFloatOp(Operation *op) {
  return isa<FloatType>(elementTypeOf(op->getResult(0)));
}

/// Ops that only make sense on floating-point tensors (import promotes
/// integer inputs of `div`, `exp` etc. to the default float type first).
static bool isFloatOnly(Operation *op) {
  return isa<DivOp, ExpOp, LogOp, TanhOp, SigmoidOp, SiluOp, SqrtOp, RsqrtOp, ErfOp,
             GeluOp, Log1pOp, Expm1Op, SinOp, CosOp, PowOp, FloorOp, CeilOp, RoundOp,
             TruncOp, RemOp>(op);
}

static LogicalResult verifyPointwise(Operation *op) {
  if (isa<AndOp, OrOp, XorOp, ShlOp, ShrOp>(op) && isFloatOp(op))
    return op->emitOpError("requires an integer or i1 element type, got ")
           << elementTypeOf(op->getResult(0));
  if (isFloatOnly(op) && !isFloatOp(op))
    return op->emitOpError("requires a floating-point element type, got ")
           << elementTypeOf(op->getResult(0));
  return success();
}

static Value floatConst(OpBuilder &b, Location loc, Type t, double v) {
  return b.create<arith::ConstantOp>(loc, t, b.getFloatAttr(t, v));
}

static Value zeroOf(OpBuilder &b, Location loc, Type t) {
  if (isa<FloatType>(t))
    return floatConst(b, loc, t, 0.0);
  return b.create<arith::ConstantOp>(loc, t, b.getIntegerAttr(t, 0));
}

//===----------------------------------------------------------------------===//
// Pointwise verifiers
//===----------------------------------------------------------------------===//

#define TG_POINTWISE_VERIFY(OP)                                                \
  LogicalResult OP::verify() { return verifyPointwise(getOperation()); }
TG_POINTWISE_VERIFY(AddOp)
TG_POINTWISE_VERIFY(SiluOp)
TG_POINTWISE_VERIFY(SubOp)
TG_POINTWISE_VERIFY(MulOp)
TG_POINTWISE_VERIFY(DivOp)
TG_POINTWISE_VERIFY(MaximumOp)
TG_POINTWISE_VERIFY(MinimumOp)
TG_POINTWISE_VERIFY(NegOp)
TG_POINTWISE_VERIFY(ReluOp)
TG_POINTWISE_VERIFY(ExpOp)
TG_POINTWISE_VERIFY(LogOp)
TG_POINTWISE_VERIFY(TanhOp)
TG_POINTWISE_VERIFY(SigmoidOp)
TG_POINTWISE_VERIFY(SqrtOp)
TG_POINTWISE_VERIFY(RsqrtOp)
TG_POINTWISE_VERIFY(AbsOp)
TG_POINTWISE_VERIFY(ErfOp)
TG_POINTWISE_VERIFY(Log1pOp)
TG_POINTWISE_VERIFY(Expm1Op)
TG_POINTWISE_VERIFY(SinOp)
TG_POINTWISE_VERIFY(CosOp)
TG_POINTWISE_VERIFY(PowOp)
TG_POINTWISE_VERIFY(FloorOp)
TG_POINTWISE_VERIFY(CeilOp)
TG_POINTWISE_VERIFY(RoundOp)
TG_POINTWISE_VERIFY(TruncOp)
TG_POINTWISE_VERIFY(RemOp)
TG_POINTWISE_VERIFY(AndOp)
TG_POINTWISE_VERIFY(OrOp)
TG_POINTWISE_VERIFY(XorOp)
TG_POINTWISE_VERIFY(ShlOp)
TG_POINTWISE_VERIFY(ShrOp)
#undef TG_POINTWISE_VERIFY

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return verifyPointwise(getOperation());
}

//===----------------------------------------------------------------------===//
// Scalar forms
//===----------------------------------------------------------------------===//

Value AddOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Type t = v[0].getType();
  if (isa<FloatType>(t))
    return b.create<arith::AddFOp>(loc, v[0], v[1]);
  if (t.isInteger(1))
    return b.create<arith::OrIOp>(loc, v[0], v[1]);
  return b.create<arith::AddIOp>(loc, v[0], v[1]);
}

Value SubOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  if (isa<FloatType>(v[0].getType()))
    return b.create<arith::SubFOp>(loc, v[0], v[1]);
  return b.create<arith::SubIOp>(loc, v[0], v[1]);
}

Value MulOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Type t = v[0].getType();
  if (isa<FloatType>(t))
    return b.create<arith::MulFOp>(loc, v[0], v[1]);
  if (t.isInteger(1))
    return b.create<arith::AndIOp>(loc, v[0], v[1]);
  return b.create<arith::MulIOp>(loc, v[0], v[1]);
}

Value FloorOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::FloorOp>(loc, v[0]);
}
Value CeilOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::CeilOp>(loc, v[0]);
}
Value RoundOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::RoundEvenOp>(loc, v[0]);
}
Value TruncOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::TruncOp>(loc, v[0]);
}
Value RemOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<arith::RemFOp>(loc, v[0], v[1]);
}
Value AndOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<arith::AndIOp>(loc, v[0], v[1]);
}
Value OrOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<arith::OrIOp>(loc, v[0], v[1]);
}
Value XorOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<arith::XOrIOp>(loc, v[0], v[1]);
}

/// Whether shift amount `s` is in [0, bit width).
static Value shiftInRange(OpBuilder &b, Location loc, Value s) {
  Type t = s.getType();
  Value zero = b.create<arith::ConstantOp>(loc, t, b.getIntegerAttr(t, 0));
  Value width = b.create<arith::ConstantOp>(loc, t, b.getIntegerAttr(t, t.getIntOrFloatBitWidth()));
  return b.create<arith::AndIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, s, zero),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, s, width));
}

Value ShlOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Type t = v[0].getType();
  Value zero = b.create<arith::ConstantOp>(loc, t, b.getIntegerAttr(t, 0));
  Value ok = shiftInRange(b, loc, v[1]);
  Value amount = b.create<arith::SelectOp>(loc, ok, v[1], zero);
  return b.create<arith::SelectOp>(loc, ok, b.create<arith::ShLIOp>(loc, v[0], amount), zero);
}

Value ShrOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Type t = v[0].getType();
  Value zero = b.create<arith::ConstantOp>(loc, t, b.getIntegerAttr(t, 0));
  Value top = b.create<arith::ConstantOp>(loc, t, b.getIntegerAttr(t, t.getIntOrFloatBitWidth() - 1));
  // Out of range: all sign bits, as a shift by width - 1 gives.
  Value amount = b.create<arith::SelectOp>(loc, shiftInRange(b, loc, v[1]), v[1], top);
  Value negative = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, v[1], zero);
  amount = b.create<arith::SelectOp>(loc, negative, top, amount);
  return b.create<arith::ShRSIOp>(loc, v[0], amount);
}

Value DivOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<arith::DivFOp>(loc, v[0], v[1]);
}

Value MaximumOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  if (isa<FloatType>(v[0].getType()))
    return b.create<arith::MaximumFOp>(loc, v[0], v[1]);
  return b.create<arith::MaxSIOp>(loc, v[0], v[1]);
}

Value MinimumOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  if (isa<FloatType>(v[0].getType()))
    return b.create<arith::MinimumFOp>(loc, v[0], v[1]);
  return b.create<arith::MinSIOp>(loc, v[0], v[1]);
}

Value NegOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  if (isa<FloatType>(v[0].getType()))
    return b.create<arith::NegFOp>(loc, v[0]);
  return b.create<arith::SubIOp>(loc, zeroOf(b, loc, v[0].getType()), v[0]);
}

Value ReluOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Value zero = zeroOf(b, loc, v[0].getType());
  if (isa<FloatType>(v[0].getType()))
    return b.create<arith::MaximumFOp>(loc, v[0], zero); // relu(NaN) = NaN
  return b.create<arith::MaxSIOp>(loc, v[0], zero);
}

Value ExpOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::ExpOp>(loc, v[0]);
}
Value LogOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::LogOp>(loc, v[0]);
}
Value TanhOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::TanhOp>(loc, v[0]);
}
Value SqrtOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::SqrtOp>(loc, v[0]);
}
Value RsqrtOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::RsqrtOp>(loc, v[0]);
}
Value ErfOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::ErfOp>(loc, v[0]);
}

Value Log1pOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::Log1pOp>(loc, v[0]);
}
Value Expm1Op::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::ExpM1Op>(loc, v[0]);
}
Value SinOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::SinOp>(loc, v[0]);
}
Value CosOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::CosOp>(loc, v[0]);
}
Value PowOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<math::PowFOp>(loc, v[0], v[1]);
}

LogicalResult CompareOp::verify() {
  if (!llvm::is_contained({"eq", "ne", "lt", "le", "gt", "ge"}, getPredicate()))
    return emitOpError("unknown predicate \"") << getPredicate() << "\"";
  if (!elementTypeOf(getResult()).isInteger(1))
    return emitOpError("result must be i1");
  return success();
}

Value CompareOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  StringRef p = getPredicate();
  if (isa<FloatType>(v[0].getType())) {
    auto pred = llvm::StringSwitch<arith::CmpFPredicate>(p)
                    .Case("eq", arith::CmpFPredicate::OEQ)
                    .Case("ne", arith::CmpFPredicate::UNE)
                    .Case("lt", arith::CmpFPredicate::OLT)
                    .Case("le", arith::CmpFPredicate::OLE)
                    .Case("gt", arith::CmpFPredicate::OGT)
                    .Default(arith::CmpFPredicate::OGE);
    return b.create<arith::CmpFOp>(loc, pred, v[0], v[1]);
  }
  auto pred = llvm::StringSwitch<arith::CmpIPredicate>(p)
                  .Case("eq", arith::CmpIPredicate::eq)
                  .Case("ne", arith::CmpIPredicate::ne)
                  .Case("lt", arith::CmpIPredicate::slt)
                  .Case("le", arith::CmpIPredicate::sle)
                  .Case("gt", arith::CmpIPredicate::sgt)
                  .Default(arith::CmpIPredicate::sge);
  return b.create<arith::CmpIOp>(loc, pred, v[0], v[1]);
}

LogicalResult SelectOp::verify() {
  if (!elementTypeOf(getCondition()).isInteger(1))
    return emitOpError("condition must be i1");
  if (getA().getType() != getType() || getB().getType() != getType())
    return emitOpError("both choices must have the result type");
  return success();
}

Value SelectOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return b.create<arith::SelectOp>(loc, v[0], v[1], v[2]);
}

Value AbsOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  if (isa<FloatType>(v[0].getType()))
    return b.create<math::AbsFOp>(loc, v[0]);
  return b.create<math::AbsIOp>(loc, v[0]);
}

Value SigmoidOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Type t = v[0].getType();
  Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, v[0]));
  Value one = floatConst(b, loc, t, 1.0);
  return b.create<arith::DivFOp>(loc, one, b.create<arith::AddFOp>(loc, one, e));
}

Value SiluOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Type t = v[0].getType();
  Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, v[0]));
  Value one = floatConst(b, loc, t, 1.0);
  return b.create<arith::DivFOp>(loc, v[0], b.create<arith::AddFOp>(loc, one, e));
}

Value GeluOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Type t = v[0].getType();
  Value x = v[0];
  Value half = floatConst(b, loc, t, 0.5);
  Value one = floatConst(b, loc, t, 1.0);
  Value inner;
  if (getApproximate() == "tanh") {
    // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
    Value x3 = b.create<arith::MulFOp>(loc, x, b.create<arith::MulFOp>(loc, x, x));
    Value poly = b.create<arith::AddFOp>(
        loc, x, b.create<arith::MulFOp>(loc, floatConst(b, loc, t, 0.044715), x3));
    Value k = floatConst(b, loc, t, std::sqrt(2.0 / M_PI));
    inner = b.create<math::TanhOp>(loc, b.create<arith::MulFOp>(loc, k, poly));
  } else {
    // 0.5 * x * (1 + erf(x / sqrt(2)))
    Value k = floatConst(b, loc, t, M_SQRT1_2);
    inner = b.create<math::ErfOp>(loc, b.create<arith::MulFOp>(loc, x, k));
  }
  Value hx = b.create<arith::MulFOp>(loc, half, x);
  return b.create<arith::MulFOp>(loc, hx, b.create<arith::AddFOp>(loc, one, inner));
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  auto ok = [](Type t) { return isa<FloatType>(t) || isa<IntegerType>(t); };
  if (!ok(elementTypeOf(getInput())) || !ok(elementTypeOf(getResult())))
    return emitOpError("casts only between integer and float element types");
  return success();
}

Value CastOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Value x = v[0];
  Type from = x.getType(), to = elementTypeOf(getResult());
  if (from == to)
    return x;
  if (to.isInteger(1)) { // ATen: anything -> bool is `x != 0`
    if (isa<FloatType>(from))
      return b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, x,
                                     zeroOf(b, loc, from));
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, x,
                                   zeroOf(b, loc, from));
  }
  auto fFrom = dyn_cast<FloatType>(from), fTo = dyn_cast<FloatType>(to);
  if (fFrom && fTo)
    return fFrom.getWidth() < fTo.getWidth()
               ? b.create<arith::ExtFOp>(loc, to, x).getResult()
               : b.create<arith::TruncFOp>(loc, to, x).getResult();
  if (fTo)
    return from.isInteger(1) ? b.create<arith::UIToFPOp>(loc, to, x).getResult()
                             : b.create<arith::SIToFPOp>(loc, to, x).getResult();
  if (fFrom)
    return b.create<arith::FPToSIOp>(loc, to, x);
  unsigned wFrom = from.getIntOrFloatBitWidth(), wTo = to.getIntOrFloatBitWidth();
  if (wFrom < wTo)
    return from.isInteger(1) ? b.create<arith::ExtUIOp>(loc, to, x).getResult()
                             : b.create<arith::ExtSIOp>(loc, to, x).getResult();
  return b.create<arith::TruncIOp>(loc, to, x);
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  auto valueType = cast<ShapedType>(getValue().getType());
  if (valueType != getResult().getType())
    return emitOpError("value type ")
           << valueType << " does not match result type "
           << getResult().getType();
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError("element types differ: ")
           << in.getElementType() << " vs " << out.getElementType();
  if (in.getRank() > out.getRank())
    return emitOpError("cannot broadcast rank ")
           << in.getRank() << " to lower rank " << out.getRank();
  int64_t lead = out.getRank() - in.getRank();
  for (int64_t i = 0; i < in.getRank(); ++i) {
    int64_t a = in.getDimSize(i), r = out.getDimSize(lead + i);
    if (a != 1 && a != r)
      return emitOpError("input dimension ")
             << i << " has size " << a << ", which cannot broadcast to " << r;
  }
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // broadcast(broadcast(x)) is one broadcast of x.
  if (auto inner = getInput().getDefiningOp<BroadcastOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

LogicalResult UniformOp::verify() {
  auto seed = cast<RankedTensorType>(getSeed().getType());
  if (seed.getRank() != 0 || !seed.getElementType().isInteger(64))
    return emitOpError("seed must be a 0-d i64 tensor");
  if (!cast<RankedTensorType>(getType()).getElementType().isF32())
    return emitOpError("produces f32");
  return success();
}

LogicalResult IotaOp::verify() {
  auto t = cast<RankedTensorType>(getType());
  if (getDim() < 0 || getDim() >= t.getRank())
    return emitOpError("dim ") << getDim() << " is not a dimension of a rank-" << t.getRank()
                               << " tensor";
  if (!t.getElementType().isInteger(64))
    return emitOpError("produces i64 indices");
  return success();
}

//===----------------------------------------------------------------------===//
// RemapOp
//===----------------------------------------------------------------------===//

/// Value of `e` at `point`; nullopt on a division by a non-positive constant.
static std::optional<int64_t> evalIndex(AffineExpr e, ArrayRef<int64_t> point) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return point[d.getPosition()];
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue();
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  auto l = evalIndex(bin.getLHS(), point), r = evalIndex(bin.getRHS(), point);
  if (!l || !r)
    return std::nullopt;
  switch (e.getKind()) {
  case AffineExprKind::Add: return *l + *r;
  case AffineExprKind::Mul: return *l * *r;
  case AffineExprKind::FloorDiv:
  case AffineExprKind::Mod:
  case AffineExprKind::CeilDiv:
    if (*r <= 0)
      return std::nullopt;
    if (e.getKind() == AffineExprKind::Mod)
      return ((*l % *r) + *r) % *r;
    if (e.getKind() == AffineExprKind::CeilDiv)
      return (*l + *r - 1) / *r;
    return *l >= 0 ? *l / *r : -((-*l + *r - 1) / *r);
  default: return std::nullopt;
  }
}

LogicalResult RemapOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  AffineMap map = getMap();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element types differ: ")
           << in.getElementType() << " vs " << out.getElementType();
  if (map.getNumSymbols() != 0 || map.getNumDims() != out.getRank() ||
      map.getNumResults() != in.getRank())
    return emitOpError("map ") << AffineMapAttr::get(map) << " must take " << out.getRank()
                               << " result dims to " << in.getRank() << " input dims";
  if (out.getNumElements() == 0)
    return success();
  if (in.getNumElements() == 0)
    return emitOpError("reads elements of an empty input");
  // Every corner of the result's index box must land inside the input. The
  // maps import builds are monotone or mod-bounded in each dim, so the
  // corners bound every index.
  int64_t rank = out.getRank();
  for (int64_t corner = 0; corner < (int64_t(1) << std::min<int64_t>(rank, 16)); ++corner) {
    SmallVector<int64_t> point;
    for (int64_t d = 0; d < rank; ++d)
      point.push_back((corner >> d) & 1 ? out.getDimSize(d) - 1 : 0);
    for (auto [k, e] : llvm::enumerate(map.getResults())) {
      auto v = evalIndex(e, point);
      if (!v || *v < 0 || *v >= in.getDimSize(k))
        return emitOpError("map result ") << k << " leaves [0, "
                                          << in.getDimSize(k) << ") at a corner of the result";
    }
  }
  return success();
}

OpFoldResult RemapOp::fold(FoldAdaptor) {
  // An identity view is its input; an identity copy (clone) is not, since a
  // returned clone must not alias the input.
  if (getCallee() && getInput().getType() == getType() && getMap().isIdentity())
    return getInput();
  return {};
}

AffineMap BroadcastOp::getInputMap() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t lead = out.getRank() - in.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    bool stretched = in.getDimSize(i) == 1 && out.getDimSize(lead + i) != 1;
    exprs.push_back(stretched ? getAffineConstantExpr(0, getContext())
                              : getAffineDimExpr(lead + i, getContext()));
  }
  return AffineMap::get(out.getRank(), 0, exprs, getContext());
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  bool arg = getKind() == "argmax" || getKind() == "argmin";
  if (!arg && !llvm::is_contained({"sum", "prod", "max", "min"}, getKind()))
    return emitOpError("unknown reduction kind \"") << getKind() << "\"";
  if (arg ? !out.getElementType().isInteger(64) : in.getElementType() != out.getElementType())
    return emitOpError(arg ? "argmax/argmin produce i64 positions" : "element types differ");
  int64_t count = getCount();
  if (count < 1 || count > in.getRank() || in.getRank() != out.getRank())
    return emitOpError("reduces ") << count << " trailing dims of a rank-"
                                   << in.getRank() << " tensor into rank " << out.getRank();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t want = d >= in.getRank() - count ? 1 : in.getDimSize(d);
    if (out.getDimSize(d) != want)
      return emitOpError("result dimension ") << d << " must be " << want;
  }
  return success();
}

LogicalResult SoftmaxOp::verify() {
  auto t = cast<RankedTensorType>(getInput().getType());
  if (!isa<FloatType>(t.getElementType()))
    return emitOpError("requires a floating-point element type, got ") << t.getElementType();
  if (t.getRank() < 1)
    return emitOpError("requires a tensor of rank 1 or more (its last dimension is the row)");
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::verify() {
  auto t = cast<RankedTensorType>(getInput().getType());
  if (!isa<FloatType>(t.getElementType()))
    return emitOpError("requires a floating-point element type, got ") << t.getElementType();
  int64_t count = getCount();
  if (count < 1 || count > t.getRank())
    return emitOpError("normalizes ") << count << " trailing dims of a rank-" << t.getRank()
                                      << " tensor; expected 1 to " << t.getRank();
  if (getResult().getType() != t)
    return emitOpError("result type must be the input type ") << t;
  for (Value v : {getWeight(), getBias()})
    if (v && v.getType() != t)
      return emitOpError("weight and bias must be broadcast to the input type ") << t;
  SmallVector<int64_t> rowShape(t.getShape());
  std::fill(rowShape.end() - count, rowShape.end(), 1);
  auto rowType = RankedTensorType::get(rowShape, t.getElementType());
  if (getMean().getType() != rowType || getRstd().getType() != rowType)
    return emitOpError("mean and rstd must be ") << rowType
                                                 << " (the normalized dims kept as 1s)";
  return success();
}

//===----------------------------------------------------------------------===//
// BatchNormOp
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::verify() {
  Type elt = cast<RankedTensorType>(getInput().getType()).getElementType();
  if (!isa<FloatType>(elt))
    return emitOpError("requires a floating-point element type, got ") << elt;
  return success();
}

//===----------------------------------------------------------------------===//
// Row statistics: batch_norm_training, moments, logsumexp, vector_norm
//===----------------------------------------------------------------------===//

/// Checks what the row-statistics ops share: a float input, 1 to rank
/// trailing dims reduced, and each of `rows` typed as the input with those
/// dims kept as 1s.
static LogicalResult verifyRowStats(Operation *op, Value input, int64_t count, ValueRange rows,
                                    StringRef rowsName) {
  auto t = cast<RankedTensorType>(input.getType());
  if (!isa<FloatType>(t.getElementType()))
    return op->emitOpError("requires a floating-point element type, got ") << t.getElementType();
  if (count < 1 || count > t.getRank())
    return op->emitOpError("reduces ") << count << " trailing dims of a rank-" << t.getRank()
                                       << " tensor; expected 1 to " << t.getRank();
  SmallVector<int64_t> rowShape(t.getShape());
  std::fill(rowShape.end() - count, rowShape.end(), 1);
  auto rowType = RankedTensorType::get(rowShape, t.getElementType());
  for (Value v : rows)
    if (v.getType() != rowType)
      return op->emitOpError() << rowsName << " must be " << rowType
                               << " (the reduced dims kept as 1s)";
  return success();
}

LogicalResult BatchNormTrainingOp::verify() {
  Type t = getInput().getType();
  if (getResult().getType() != t)
    return emitOpError("result type must be the input type ") << t;
  for (Value v : {getWeight(), getBias()})
    if (v && v.getType() != t)
      return emitOpError("weight and bias must be broadcast to the input type ") << t;
  return verifyRowStats(*this, getInput(), getCount(), {getMean(), getInvstd(), getVar()},
                        "mean, invstd and var");
}

LogicalResult MomentsOp::verify() {
  return verifyRowStats(*this, getInput(), getCount(), {getResult(), getMean()},
                        "result and mean");
}

LogicalResult LogSumExpOp::verify() {
  return verifyRowStats(*this, getInput(), getCount(), getResult(), "result");
}

LogicalResult VectorNormOp::verify() {
  return verifyRowStats(*this, getInput(), getCount(), getResult(), "result");
}

//===----------------------------------------------------------------------===//
// ExternOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyExternArg(ExternOp op, Attribute a,
                                     SmallVectorImpl<bool> &used) {
  if (auto ref = dyn_cast<OperandRefAttr>(a)) {
    if (ref.getIndex() < 0 || ref.getIndex() >= (int64_t)used.size())
      return op.emitOpError("argument refers to operand ")
             << ref.getIndex() << " but the call has " << used.size();
    used[ref.getIndex()] = true;
    return success();
  }
  if (auto list = dyn_cast<ArrayAttr>(a)) {
    for (Attribute e : list)
      if (failed(verifyExternArg(op, e, used)))
        return failure();
    return success();
  }
  if (isa<UnitAttr, BoolAttr, IntegerAttr, FloatAttr, StringAttr,
          DenseI64ArrayAttr, DenseF64ArrayAttr, DenseBoolArrayAttr, DeviceAttr, DictionaryAttr>(a))
    return success();
  return op.emitOpError("unsupported argument attribute ") << a;
}

LogicalResult ExternOp::verify() {
  if (!getCallee().contains("::"))
    return emitOpError("callee must be a qualified ATen name such as "
                       "\"aten::mm\", got \"")
           << getCallee() << "\"";
  SmallVector<bool> used(getInputs().size(), false);
  for (Attribute a : getArgs())
    if (failed(verifyExternArg(*this, a, used)))
      return failure();
  for (auto [i, u] : llvm::enumerate(used))
    if (!u)
      return emitOpError("operand ") << i << " is not passed to the callee";
  if (getResultStrides().size() != getNumResults())
    return emitOpError("has ") << getResultStrides().size()
                               << " result_strides entries for "
                               << getNumResults() << " results";
  for (auto [s, r] : llvm::zip(getResultStrides(), getResults())) {
    auto strides = dyn_cast<DenseI64ArrayAttr>(s);
    if (!strides || strides.size() != cast<ShapedType>(r.getType()).getRank())
      return emitOpError("result_strides entries must be i64 arrays of the "
                         "result's rank");
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/TG/IR/TGOps.cpp.inc"
