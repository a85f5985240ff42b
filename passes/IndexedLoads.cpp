//===- IndexedLoads.cpp - kernel bodies of gather, concat and pad --------===//
//
// These ops read their data operands at positions other than the current
// iteration index, so fusion gives the kernel the whole buffer and reads it
// with tgk.load: gathers at checked data-dependent positions, concat and pad
// at shifted positions that exist only under a condition (codegen evaluates
// such a load only inside the select arm that picks it).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace tgc {

Value loadScalar(OpBuilder &b, Value v, AffineMap map, ValueRange indices,
                 function_ref<Value(Value)> bufferOf) {
  auto [root, composed] = traceLayout(v, map);
  if (auto c = root.getDefiningOp<tg::ConstantOp>())
    if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue()); dense && dense.isSplat()) {
      auto typed = cast<TypedAttr>(dense.getSplatValue<Attribute>());
      return b.create<arith::ConstantOp>(root.getLoc(), typed.getType(), typed);
    }
  if (root.getDefiningOp<tg::IotaOp>())
    return composed.getNumSymbols() ? Value() : buildIndexOf(b, root, composed);
  Type elt = cast<ShapedType>(root.getType()).getElementType();
  return b.create<tgk::LoadOp>(root.getLoc(), elt, bufferOf(root), indices,
                               AffineMapAttr::get(composed));
}

static Value zeroOf(OpBuilder &b, Location loc, Type t) {
  return b.create<arith::ConstantOp>(loc, t, b.getZeroAttr(t));
}

static Value dimIndex(OpBuilder &b, Location loc, unsigned rank, unsigned d) {
  MLIRContext *ctx = b.getContext();
  auto map = AffineMap::get(rank, 0, getAffineDimExpr(d, ctx), ctx);
  return b.create<tgk::IndexOp>(loc, b.getI64Type(), AffineMapAttr::get(map));
}

static Value constIndex(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantOp>(loc, b.getI64Type(), b.getI64IntegerAttr(v));
}

static Value buildGather(OpBuilder &b, tg::GatherOp g, function_ref<Value(Value)> scalarOf,
                         function_ref<Value(Value, AffineMap, ValueRange)> load) {
  Location loc = g.getLoc();
  auto in = cast<RankedTensorType>(g.getInput().getType());
  unsigned rank = cast<RankedTensorType>(g.getType()).getRank();
  SmallVector<AffineExpr> exprs(g.getMap().getResults());
  SmallVector<Value> checked;
  for (auto [k, dim] : llvm::enumerate(g.getDims())) {
    Value i = scalarOf(g.getIndices()[k]);
    if (!i.getType().isInteger(64))
      i = b.create<arith::ExtSIOp>(loc, b.getI64Type(), i);
    checked.push_back(b.create<tgk::CheckIndexOp>(
        loc, b.getI64Type(), i, b.getI64IntegerAttr(in.getDimSize(dim)), b.getI64IntegerAttr(dim),
        b.getBoolAttr(g.getWrap()), b.getStringAttr(g.getOrigin())));
    exprs[dim] = getAffineSymbolExpr(k, b.getContext());
  }
  AffineMap map = AffineMap::get(rank, checked.size(), exprs, b.getContext());
  return load(g.getInput(), map, checked);
}

static Value buildConcat(OpBuilder &b, tg::ConcatOp c,
                         function_ref<Value(Value, AffineMap, ValueRange)> load) {
  Location loc = c.getLoc();
  auto out = cast<RankedTensorType>(c.getType());
  unsigned rank = out.getRank(), d = c.getDim();
  MLIRContext *ctx = b.getContext();
  // Pieces from the last: acc = idx_d < end_k ? piece_k : acc.
  SmallVector<int64_t> starts;
  int64_t at = 0;
  for (Value v : c.getInputs()) {
    starts.push_back(at);
    at += cast<RankedTensorType>(v.getType()).getDimSize(d);
  }
  Value acc, index;
  for (int64_t k = c.getInputs().size() - 1; k >= 0; --k) {
    Value piece = c.getInputs()[k];
    int64_t size = cast<RankedTensorType>(piece.getType()).getDimSize(d);
    if (size == 0)
      continue;
    SmallVector<AffineExpr> exprs;
    for (unsigned i = 0; i < rank; ++i)
      exprs.push_back(getAffineDimExpr(i, ctx) - (i == d ? starts[k] : 0));
    Value v = load(piece, AffineMap::get(rank, 0, exprs, ctx), {});
    if (!v)
      return {};
    if (!acc) {
      acc = v;
      continue;
    }
    if (!index)
      index = dimIndex(b, loc, rank, d);
    Value inPiece = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, index,
                                            constIndex(b, loc, starts[k] + size));
    acc = b.create<arith::SelectOp>(loc, inPiece, v, acc);
  }
  return acc ? acc : zeroOf(b, loc, out.getElementType()); // every piece empty
}

static Value buildPad(OpBuilder &b, tg::PadOp p,
                      function_ref<Value(Value, AffineMap, ValueRange)> load) {
  Location loc = p.getLoc();
  auto in = cast<RankedTensorType>(p.getInput().getType());
  unsigned rank = in.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineExpr> exprs;
  Value inside;
  for (unsigned d = 0; d < rank; ++d) {
    int64_t low = p.getLow()[d], high = p.getHigh()[d];
    exprs.push_back(getAffineDimExpr(d, ctx) - low);
    if (low == 0 && high == 0)
      continue;
    Value i = dimIndex(b, loc, rank, d);
    Value ge = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, i, constIndex(b, loc, low));
    Value lt = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, i,
                                       constIndex(b, loc, low + in.getDimSize(d)));
    Value both = b.create<arith::AndIOp>(loc, ge, lt);
    inside = inside ? b.create<arith::AndIOp>(loc, inside, both) : both;
  }
  Value v = load(p.getInput(), AffineMap::get(rank, 0, exprs, ctx), {});
  if (!v || !inside)
    return v;
  Value fill = b.create<arith::ConstantOp>(loc, p.getValue().getType(), p.getValue());
  return b.create<arith::SelectOp>(loc, inside, v, fill);
}

Value buildIndexedScalar(OpBuilder &b, Operation *m, function_ref<Value(Value)> scalarOf,
                         function_ref<Value(Value, AffineMap, ValueRange)> load) {
  if (auto g = dyn_cast<tg::GatherOp>(m))
    return buildGather(b, g, scalarOf, load);
  if (auto c = dyn_cast<tg::ConcatOp>(m))
    return buildConcat(b, c, load);
  return buildPad(b, cast<tg::PadOp>(m), load);
}

} // namespace tgc
