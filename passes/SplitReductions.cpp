//===- SplitReductions.cpp - long reductions over few rows in two stages --===//
#include "passes/Passes.h"

namespace tgc {
#define GEN_PASS_DEF_SPLITREDUCTIONS
#include "passes/Passes.h.inc"
} // namespace tgc

using namespace mlir;
using namespace tgc;

namespace {

constexpr int64_t kMinChunk = 2048; ///< elements per chunk row, at least
constexpr int64_t kChunkRows = 256; ///< chunk rows to aim for (a GPU's worth of blocks)

/// The number of chunks for rows of `n` elements, `rows` of them: a divisor
/// of n near kChunkRows / rows with chunks of at least kMinChunk; 0 if none.
int64_t chunksFor(int64_t rows, int64_t n) {
  int64_t most = n / kMinChunk;
  if (most < 2)
    return 0;
  int64_t want = std::min(most, std::max<int64_t>(2, (kChunkRows + rows - 1) / rows));
  for (int64_t s = want; s <= std::min(most, 2 * want); ++s)
    if (n % s == 0)
      return s;
  for (int64_t s = want - 1; s >= 2; --s)
    if (n % s == 0)
      return s;
  return 0;
}

struct SplitReductionsPass : public tgc::impl::SplitReductionsBase<SplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<tg::ReduceOp> todo;
    getOperation().walk([&](tg::ReduceOp r) { todo.push_back(r); });
    for (tg::ReduceOp r : todo)
      split(r);
  }

  void split(tg::ReduceOp r) {
    StringRef kind = r.getKind();
    if (kind != "sum" && kind != "prod" && kind != "max" && kind != "min")
      return;
    auto in = cast<RankedTensorType>(r.getInput().getType());
    int64_t count = r.getCount(), rank = in.getRank(), outer = rank - count;
    if (count < 1 || outer < 0)
      return;
    ArrayRef<int64_t> shape = in.getShape();
    int64_t rows = 1, n = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < outer ? rows : n) *= shape[d];
    if (n < minRow || rows >= maxRows || rows == 0)
      return;
    int64_t chunks = chunksFor(rows, n);
    if (!chunks)
      return;
    int64_t chunk = n / chunks;
    MLIRContext *ctx = r.getContext();
    OpBuilder b(r);
    Location loc = r.getLoc();
    // Half types: the partial results stay float (a row kernel accumulates
    // in float and rounds once; rounding each chunk's result would not).
    Type elem = in.getElementType();
    Value input = r.getInput();
    if (elem.isF16() || elem.isBF16()) {
      elem = b.getF32Type();
      input = b.create<tg::CastOp>(loc, RankedTensorType::get(shape, elem), input);
    }
    auto remap = [&](Value x, ArrayRef<int64_t> to, ArrayRef<AffineExpr> exprs) {
      auto t = RankedTensorType::get(to, elem);
      AffineMap map = AffineMap::get(to.size(), 0, exprs, ctx);
      return b.create<tg::RemapOp>(loc, t, x, AffineMapAttr::get(map), StringAttr(), ArrayAttr())
          .getResult();
    };
    auto reduce = [&](Value x, ArrayRef<int64_t> to) {
      return b.create<tg::ReduceOp>(loc, RankedTensorType::get(to, elem), x, r.getKindAttr(),
                                    b.getI64IntegerAttr(1))
          .getResult();
    };
    SmallVector<int64_t> outerShape(shape.begin(), shape.begin() + outer);
    // [outer..., chunks, chunk] -> the input: the flat position s * chunk + c
    // within the reduced dims, unflattened.
    SmallVector<int64_t> chunked = outerShape;
    chunked.append({chunks, chunk});
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < outer; ++d)
      exprs.push_back(getAffineDimExpr(d, ctx));
    AffineExpr flat = getAffineDimExpr(outer, ctx) * chunk + getAffineDimExpr(outer + 1, ctx);
    int64_t stride = n;
    for (int64_t d = outer; d < rank; ++d) {
      stride /= shape[d];
      AffineExpr e = stride == 1 ? flat : flat.floorDiv(stride);
      exprs.push_back(d == outer ? e : e % shape[d]);
    }
    Value x = remap(input, chunked, exprs);
    SmallVector<int64_t> partialShape = outerShape;
    partialShape.append({chunks, 1});
    Value partial = reduce(x, partialShape);
    // [outer..., chunks] -> [outer..., chunks, 0]
    SmallVector<int64_t> perRow = outerShape;
    perRow.push_back(chunks);
    exprs.assign({});
    for (int64_t d = 0; d <= outer; ++d)
      exprs.push_back(getAffineDimExpr(d, ctx));
    exprs.push_back(getAffineConstantExpr(0, ctx));
    Value partials = remap(partial, perRow, exprs);
    SmallVector<int64_t> total = outerShape;
    total.push_back(1);
    Value reduced = reduce(partials, total);
    // [outer..., 1 x count] -> [outer..., 0]
    auto resultType = cast<RankedTensorType>(r.getType());
    exprs.assign({});
    for (int64_t d = 0; d < outer; ++d)
      exprs.push_back(getAffineDimExpr(d, ctx));
    exprs.push_back(getAffineConstantExpr(0, ctx));
    Value result = RankedTensorType::get(resultType.getShape(), elem) == reduced.getType()
                       ? reduced
                       : remap(reduced, resultType.getShape(), exprs);
    if (result.getType() != resultType)
      result = b.create<tg::CastOp>(loc, resultType, result);
    r.getResult().replaceAllUsesWith(result);
    r.erase();
  }
};

} // namespace
