//===- SplitEpilogues.cpp - bias adds of extern calls as fusible tg ops ---===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace tgc {
#define GEN_PASS_DEF_SPLITEPILOGUES
#include "passes/Passes.h.inc"
} // namespace tgc

using namespace mlir;
using namespace tgc;

namespace {

/// Whether a user of `v` (through layout ops) is a pointwise op fusion will
/// put in a kernel: only then does moving the bias out of the library call
/// save a pass over memory.
bool feedsPointwise(Value v) {
  for (Operation *u : v.getUsers()) {
    if (isa<tg::ScalarizableOpInterface>(u))
      return true;
    if (isa<tg::BroadcastOp, tg::RemapOp>(u) && feedsPointwise(u->getResult(0)))
      return true;
  }
  return false;
}

std::optional<double> number(Attribute a) {
  if (auto i = dyn_cast<IntegerAttr>(a))
    return double(i.getInt());
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  return std::nullopt;
}

/// Operand index of an argument given as #tg.operand<N>, or -1.
int64_t operandIndex(Attribute a) {
  auto ref = dyn_cast<tg::OperandRefAttr>(a);
  return ref ? ref.getIndex() : -1;
}

struct SplitEpiloguesPass : public tgc::impl::SplitEpiloguesBase<SplitEpiloguesPass> {
  void runOnOperation() override {
    SmallVector<tg::ExternOp> todo;
    getOperation().walk([&](tg::ExternOp e) {
      StringRef c = e.getCallee();
      if ((c == "aten::addmm" || c == "aten::convolution") && e->getNumResults() == 1 &&
          !e->hasAttr("mutates") && feedsPointwise(e.getResult(0)))
        todo.push_back(e);
    });
    for (tg::ExternOp e : todo)
      e.getCallee() == "aten::addmm" ? splitAddmm(e) : splitConvolution(e);
  }

  Value splat(OpBuilder &b, Location loc, double v, RankedTensorType like) {
    auto t = RankedTensorType::get({}, like.getElementType());
    Value c = b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(t, b.getFloatAttr(like.getElementType(), v)));
    return b.create<tg::BroadcastOp>(loc, like, c);
  }

  /// addmm(bias, a, b, beta, alpha) -> beta * bias + alpha * mm(a, b).
  void splitAddmm(tg::ExternOp e) {
    ArrayRef<Attribute> args = e.getArgs().getValue();
    auto type = cast<RankedTensorType>(e.getResult(0).getType());
    if (args.size() != 5 || !isa<FloatType>(type.getElementType()))
      return;
    int64_t bias = operandIndex(args[0]), m1 = operandIndex(args[1]), m2 = operandIndex(args[2]);
    auto beta = number(args[3]), alpha = number(args[4]);
    if (bias < 0 || m1 < 0 || m2 < 0 || !beta || !alpha)
      return;
    Value biasValue = e.getInputs()[bias];
    if (cast<RankedTensorType>(biasValue.getType()).getElementType() != type.getElementType())
      return;
    OpBuilder b(e);
    Location loc = e.getLoc();
    auto mm = b.create<tg::ExternOp>(
        loc, TypeRange{type}, b.getStringAttr("aten::mm"),
        ValueRange{e.getInputs()[m1], e.getInputs()[m2]},
        b.getArrayAttr({tg::OperandRefAttr::get(b.getContext(), 0),
                        tg::OperandRefAttr::get(b.getContext(), 1)}),
        e.getResultStrides());
    Value product = mm.getResult(0);
    if (*alpha != 1.0)
      product = b.create<tg::MulOp>(loc, type, product, splat(b, loc, *alpha, type));
    Value bb = b.create<tg::BroadcastOp>(loc, type, biasValue);
    if (*beta != 1.0)
      bb = b.create<tg::MulOp>(loc, type, bb, splat(b, loc, *beta, type));
    Value sum = *beta == 0.0 ? product : b.create<tg::AddOp>(loc, type, product, bb).getResult();
    if (Operation *def = sum.getDefiningOp(); def && def != mm)
      def->setAttr("tg.strides", cast<ArrayAttr>(e.getResultStrides())[0]);
    e.getResult(0).replaceAllUsesWith(sum);
    e.erase();
  }

  /// convolution(x, w, bias, ...) -> convolution(x, w, None, ...) + bias per channel.
  void splitConvolution(tg::ExternOp e) {
    SmallVector<Attribute> args(e.getArgs().getValue());
    auto type = cast<RankedTensorType>(e.getResult(0).getType());
    if (args.size() != 9 || type.getRank() < 3 || !isa<FloatType>(type.getElementType()))
      return;
    int64_t bias = operandIndex(args[2]);
    if (bias < 0)
      return;
    Value biasValue = e.getInputs()[bias];
    auto bt = cast<RankedTensorType>(biasValue.getType());
    if (bt.getRank() != 1 || bt.getDimSize(0) != type.getDimSize(1) ||
        bt.getElementType() != type.getElementType())
      return;
    OpBuilder b(e);
    Location loc = e.getLoc();
    // Drop the bias operand; renumber the refs after it.
    SmallVector<Value> inputs;
    for (auto [i, v] : llvm::enumerate(e.getInputs()))
      if ((int64_t)i != bias)
        inputs.push_back(v);
    args[2] = b.getUnitAttr();
    for (Attribute &a : args)
      if (int64_t k = operandIndex(a); k > bias)
        a = tg::OperandRefAttr::get(b.getContext(), k - 1);
    auto conv = b.create<tg::ExternOp>(loc, TypeRange{type}, e.getCalleeAttr(), inputs,
                                       b.getArrayAttr(args), e.getResultStrides());
    // bias [C] -> [C, 1, ..., 1] -> the output's shape.
    SmallVector<int64_t> chShape(type.getRank() - 1, 1);
    chShape[0] = bt.getDimSize(0);
    SmallVector<AffineExpr> exprs{getAffineDimExpr(0, b.getContext())};
    auto ct = RankedTensorType::get(chShape, bt.getElementType());
    Value column = b.create<tg::RemapOp>(
        loc, ct, biasValue,
        AffineMapAttr::get(AffineMap::get(chShape.size(), 0, exprs, b.getContext())), StringAttr(),
        ArrayAttr());
    auto sum = b.create<tg::AddOp>(loc, type, conv.getResult(0),
                                   b.create<tg::BroadcastOp>(loc, type, column));
    sum->setAttr("tg.strides", cast<ArrayAttr>(e.getResultStrides())[0]);
    e.getResult(0).replaceAllUsesWith(sum.getResult());
    e.erase();
  }
};

} // namespace
