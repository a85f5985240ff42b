//===- TGIndexingOps.cpp - verifiers of gather, concat, pad, scatter_add --===//
#include "dialects/TG/IR/TGOps.h"

using namespace mlir;
using namespace tgc::tg;

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

LogicalResult GatherOp::verify() {
  RankedTensorType in = typeOf(getInput()), out = typeOf(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("result element type ") << out.getElementType()
                                              << " differs from the input's " << in.getElementType();
  ArrayRef<int64_t> dims = getDims();
  if (dims.size() != getIndices().size() || dims.empty())
    return emitOpError("needs one index tensor per gathered dim, got ")
           << getIndices().size() << " for " << dims.size() << " dims";
  for (auto [k, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= in.getRank())
      return emitOpError("gathered dim ") << d << " is not a dim of the rank-" << in.getRank()
                                          << " input";
    if (llvm::count(dims, d) != 1)
      return emitOpError("gathered dim ") << d << " appears twice";
    RankedTensorType it = typeOf(getIndices()[k]);
    if (it.getShape() != out.getShape() || !isa<IntegerType>(it.getElementType()) ||
        it.getElementType().isInteger(1))
      return emitOpError("index ") << k << " must be an integer tensor of the result's shape, got "
                                   << it;
  }
  AffineMap map = getMap();
  if (map.getNumSymbols() || map.getNumDims() != out.getRank() ||
      map.getNumResults() != in.getRank())
    return emitOpError("map must take the ") << out.getRank() << " result dims to the "
                                             << in.getRank() << " input dims";
  if (out.getNumElements() != 0 && in.getNumElements() == 0)
    return emitOpError("reads elements of an empty input");
  return success();
}

LogicalResult ConcatOp::verify() {
  RankedTensorType out = typeOf(getResult());
  int64_t dim = getDim();
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  if (dim < 0 || dim >= out.getRank())
    return emitOpError("dim ") << dim << " is not a dim of the rank-" << out.getRank() << " result";
  int64_t total = 0;
  for (Value v : getInputs()) {
    RankedTensorType t = typeOf(v);
    if (t.getElementType() != out.getElementType() || t.getRank() != out.getRank())
      return emitOpError("input ") << t << " does not match the result " << out;
    for (int64_t d = 0; d < out.getRank(); ++d)
      if (d != dim && t.getDimSize(d) != out.getDimSize(d))
        return emitOpError("input ") << t << " differs from the result in dim " << d;
    total += t.getDimSize(dim);
  }
  if (total != out.getDimSize(dim))
    return emitOpError("inputs add up to ") << total << " along dim " << dim << ", the result has "
                                            << out.getDimSize(dim);
  return success();
}

LogicalResult PadOp::verify() {
  RankedTensorType in = typeOf(getInput()), out = typeOf(getResult());
  ArrayRef<int64_t> low = getLow(), high = getHigh();
  if (in.getElementType() != out.getElementType() || getValue().getType() != in.getElementType())
    return emitOpError("input, result and value must share an element type");
  if ((int64_t)low.size() != in.getRank() || (int64_t)high.size() != in.getRank() ||
      out.getRank() != in.getRank())
    return emitOpError("needs low and high padding for each of the ") << in.getRank() << " dims";
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (low[d] < 0 || high[d] < 0)
      return emitOpError("padding must be non-negative (import crops with a slice)");
    if (in.getDimSize(d) + low[d] + high[d] != out.getDimSize(d))
      return emitOpError("result dim ") << d << " must be " << in.getDimSize(d) + low[d] + high[d];
  }
  return success();
}

LogicalResult ScatterAddOp::verify() {
  RankedTensorType self = typeOf(getSelf()), index = typeOf(getIndex()), src = typeOf(getSrc());
  RankedTensorType out = typeOf(getResult());
  if (out != self || src.getElementType() != self.getElementType())
    return emitOpError("result and src must have self's type");
  if (!index.getElementType().isInteger(64))
    return emitOpError("index must be i64");
  int64_t dim = getDim(), rank = self.getRank();
  if (index.getRank() != rank || src.getRank() != rank)
    return emitOpError("self, index and src must have one rank");
  if (dim < 0 || dim >= std::max<int64_t>(rank, 1))
    return emitOpError("dim ") << dim << " out of range";
  for (int64_t d = 0; d < rank; ++d) {
    if (index.getDimSize(d) > src.getDimSize(d))
      return emitOpError("index is larger than src in dim ") << d;
    if (d != dim && index.getDimSize(d) > self.getDimSize(d))
      return emitOpError("index is larger than self in dim ") << d;
  }
  return success();
}
