//===- ImportIndexing.cpp - gather, indexing, scatter_add, cat and pad ----===//
//
// Ops that read their input at positions other than the result's own:
// embedding, index_select, gather and advanced indexing (index.Tensor) become
// tg.gather, whose index tensors import reshapes to the result's shape;
// scatter_add becomes tg.scatter_add; cat and stack tg.concat; constant_pad_nd
// tg.pad (after a crop for negative padding). Forms these ops do not cover
// (boolean masks, empty inputs read at non-empty positions) stay ATen calls,
// so ATen raises its own error for them.
//
//===----------------------------------------------------------------------===//
#include "compiler/pipeline/Importer.h"

#include <algorithm>

namespace tgc::detail {

static bool isIndexType(Type t) {
  return t.isInteger(64) || t.isInteger(32);
}

/// The identity map of a rank-`rank` space with dim `dim` read at 0 (the
/// gathered dim, whose coordinate comes from the index tensor).
static AffineMap identityExceptDim(int64_t rank, int64_t dim, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    exprs.push_back(d == dim ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// `v` (an index tensor) read at every position of `to` through `map`.
Value Importer::indexAt(Value v, RankedTensorType to, AffineMap map) {
  auto t = RankedTensorType::get(to.getShape(), cast<RankedTensorType>(v.getType()).getElementType());
  if (map.isIdentity() && cast<RankedTensorType>(v.getType()).getShape() == to.getShape())
    return v;
  return remap(v, t, map);
}

Value Importer::gather(Value input, ValueRange indices, ArrayRef<int64_t> dims, AffineMap map,
                       bool wrap, StringRef origin, int id) {
  RankedTensorType out = typeOf(id);
  auto op = b.create<tg::GatherOp>(loc, out, input, indices, b.getDenseI64ArrayAttr(dims),
                                   AffineMapAttr::get(map), b.getBoolAttr(wrap),
                                   b.getStringAttr(origin));
  setStrides(op, id);
  values[id] = op.getResult();
  return op.getResult();
}

bool Importer::importEmbedding(const SegmentNode &node) {
  // result[i..., j] = weight[ids[i...], j]
  Value w = values.lookup(node.args[0].tensors[0]);
  Value ids = values.lookup(node.args[1].tensors[0]);
  auto wt = cast<RankedTensorType>(w.getType());
  auto it = cast<RankedTensorType>(ids.getType());
  RankedTensorType out = typeOf(node.outputs[0]);
  if (wt.getRank() != 2 || !isIndexType(it.getElementType()) ||
      (wt.getNumElements() == 0 && out.getNumElements() != 0))
    return false;
  MLIRContext *ctx = b.getContext();
  int64_t rank = out.getRank();
  SmallVector<AffineExpr> idExprs;
  for (int64_t d = 0; d + 1 < rank; ++d)
    idExprs.push_back(getAffineDimExpr(d, ctx));
  Value index = indexAt(ids, out, AffineMap::get(rank, 0, idExprs, ctx));
  AffineMap map = AffineMap::get(
      rank, 0, {getAffineConstantExpr(0, ctx), getAffineDimExpr(rank - 1, ctx)}, ctx);
  gather(w, index, {0}, map, /*wrap=*/false, "aten::embedding", node.outputs[0]);
  return true;
}

bool Importer::importIndexSelect(const SegmentNode &node) {
  // result[..., k, ...] = self[..., index[k], ...]
  Value x = values.lookup(node.args[0].tensors[0]);
  Value ids = values.lookup(node.args[2].tensors[0]);
  auto xt = cast<RankedTensorType>(x.getType());
  auto it = cast<RankedTensorType>(ids.getType());
  RankedTensorType out = typeOf(node.outputs[0]);
  int64_t rank = xt.getRank();
  if (rank == 0 || it.getRank() > 1 || !isIndexType(it.getElementType()) ||
      out.getRank() != rank || (xt.getNumElements() == 0 && out.getNumElements() != 0))
    return false;
  int64_t dim = node.args[1].i < 0 ? node.args[1].i + rank : node.args[1].i;
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineExpr> idExprs;
  if (it.getRank() == 1)
    idExprs.push_back(getAffineDimExpr(dim, ctx));
  Value index = indexAt(ids, out, AffineMap::get(rank, 0, idExprs, ctx));
  gather(x, index, {dim}, identityExceptDim(rank, dim, ctx), false, "aten::index_select",
         node.outputs[0]);
  return true;
}

bool Importer::importGather(const SegmentNode &node) {
  // result[i] = self[i with dim := index[i]]; index has the result's shape.
  Value x = values.lookup(node.args[0].tensors[0]);
  Value ids = values.lookup(node.args[2].tensors[0]);
  auto xt = cast<RankedTensorType>(x.getType());
  auto it = cast<RankedTensorType>(ids.getType());
  int64_t rank = xt.getRank();
  if (rank == 0 || it.getRank() != rank || !it.getElementType().isInteger(64) ||
      (xt.getNumElements() == 0 && it.getNumElements() != 0))
    return false;
  int64_t dim = node.args[1].i < 0 ? node.args[1].i + rank : node.args[1].i;
  gather(x, ids, {dim}, identityExceptDim(rank, dim, b.getContext()), false, "aten::gather",
         node.outputs[0]);
  return true;
}

bool Importer::importAdvancedIndex(const SegmentNode &node) {
  // self[idx0, None, idx2]: the defined index tensors broadcast to a shape
  // B, which takes the place of the indexed dims when they are adjacent and
  // leads the result otherwise (NumPy's rule).
  Value x = values.lookup(node.args[0].tensors[0]);
  auto xt = cast<RankedTensorType>(x.getType());
  RankedTensorType out = typeOf(node.outputs[0]);
  const std::vector<int> &list = node.args[1].tensors;
  int64_t rank = xt.getRank();
  if (rank == 0 || (int64_t)list.size() > rank ||
      (xt.getNumElements() == 0 && out.getNumElements() != 0))
    return false;
  SmallVector<int64_t> dims;
  SmallVector<Value> ids;
  int64_t bRank = 0;
  for (auto [d, id] : llvm::enumerate(list)) {
    if (id < 0)
      continue;
    Value v = values.lookup(id);
    auto t = cast<RankedTensorType>(v.getType());
    if (!isIndexType(t.getElementType()))
      return false; // boolean masks have data-dependent shapes
    dims.push_back(d);
    ids.push_back(v);
    bRank = std::max<int64_t>(bRank, t.getRank());
  }
  if (dims.empty())
    return false;
  bool adjacent = dims.back() - dims.front() + 1 == (int64_t)dims.size();
  int64_t at = adjacent ? dims.front() : 0; // where B starts in the result
  if (out.getRank() != rank - (int64_t)dims.size() + bRank)
    return false;
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> indices;
  for (Value v : ids) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<AffineExpr> exprs;
    for (int64_t j = 0; j < t.getRank(); ++j) {
      int64_t r = at + bRank - t.getRank() + j;
      exprs.push_back(t.getDimSize(j) == 1 && out.getDimSize(r) != 1 ? getAffineConstantExpr(0, ctx)
                                                                     : getAffineDimExpr(r, ctx));
    }
    indices.push_back(indexAt(v, out, AffineMap::get(out.getRank(), 0, exprs, ctx)));
  }
  SmallVector<AffineExpr> exprs;
  int64_t next = adjacent ? 0 : bRank; // the next result dim of a plain self dim
  for (int64_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(dims, d)) {
      exprs.push_back(getAffineConstantExpr(0, ctx));
      if (adjacent && d == dims.front())
        next += bRank;
      continue;
    }
    exprs.push_back(getAffineDimExpr(next++, ctx));
  }
  gather(x, indices, dims, AffineMap::get(out.getRank(), 0, exprs, ctx), /*wrap=*/true,
         "aten::index", node.outputs[0]);
  return true;
}

bool Importer::importScatterAdd(const SegmentNode &node) {
  Value self = values.lookup(node.args[0].tensors[0]);
  Value ids = values.lookup(node.args[2].tensors[0]);
  Value src = values.lookup(node.args[3].tensors[0]);
  auto st = cast<RankedTensorType>(self.getType());
  RankedTensorType out = typeOf(node.outputs[0]);
  if (st.getRank() == 0 || st.getElementType().isInteger(1) ||
      !cast<RankedTensorType>(ids.getType()).getElementType().isInteger(64) ||
      cast<RankedTensorType>(src.getType()).getElementType() != st.getElementType())
    return false;
  int64_t rank = st.getRank();
  int64_t dim = node.args[1].i < 0 ? node.args[1].i + rank : node.args[1].i;
  auto it = cast<RankedTensorType>(ids.getType()), srt = cast<RankedTensorType>(src.getType());
  if (it.getRank() != rank || srt.getRank() != rank)
    return false;
  for (int64_t d = 0; d < rank; ++d)
    if (it.getDimSize(d) > srt.getDimSize(d) || (d != dim && it.getDimSize(d) > st.getDimSize(d)))
      return false; // shapes ATen rejects: let ATen say why
  auto op = b.create<tg::ScatterAddOp>(loc, out, self, ids, src, b.getI64IntegerAttr(dim));
  setStrides(op, node.outputs[0]);
  values[node.outputs[0]] = op.getResult();
  return true;
}

bool Importer::importConcat(const SegmentNode &node, bool isStack) {
  // cat(tensors, dim) and stack(tensors, dim): pieces promoted to the
  // result type; cat skips 1-D empty pieces as ATen's legacy rule does.
  RankedTensorType out = typeOf(node.outputs[0]);
  int64_t rank = out.getRank();
  if (rank == 0 || node.args[0].kind != ArgValue::TensorList)
    return false;
  int64_t dim = node.args.size() > 1 && node.args[1].kind == ArgValue::Int ? node.args[1].i : 0;
  dim = dim < 0 ? dim + rank : dim;
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> pieces;
  for (int id : node.args[0].tensors) {
    if (id < 0)
      return false;
    Value v = castTo(values.lookup(id), out.getElementType());
    auto t = cast<RankedTensorType>(v.getType());
    if (isStack) {
      // unsqueeze(dim): result dim `dim` has size 1.
      SmallVector<int64_t> shape(t.getShape());
      shape.insert(shape.begin() + dim, 1);
      SmallVector<AffineExpr> exprs;
      for (int64_t d = 0; d < rank; ++d)
        if (d != dim)
          exprs.push_back(getAffineDimExpr(d, ctx));
      v = remap(v, RankedTensorType::get(shape, out.getElementType()),
                AffineMap::get(rank, 0, exprs, ctx));
    } else if (t.getRank() == 1 && t.getDimSize(0) == 0 && rank != 1) {
      continue;
    }
    if (cast<RankedTensorType>(v.getType()).getRank() != rank)
      return false;
    pieces.push_back(v);
  }
  if (pieces.empty())
    return false;
  Value r = pieces.size() == 1 ? pieces[0]
                               : Value(b.create<tg::ConcatOp>(loc, out, pieces,
                                                              b.getI64IntegerAttr(dim)));
  if (r.getType() != out)
    return false;
  if (Operation *def = r.getDefiningOp())
    setStrides(def, node.outputs[0]);
  values[node.outputs[0]] = r;
  return true;
}

bool Importer::importConstantPad(const SegmentNode &node) {
  // pad = (last.low, last.high, second-last.low, ...); negative entries crop.
  Value x = values.lookup(node.args[0].tensors[0]);
  auto xt = cast<RankedTensorType>(x.getType());
  RankedTensorType out = typeOf(node.outputs[0]);
  const std::vector<int64_t> &pad = node.args[1].ints;
  int64_t rank = xt.getRank();
  if (rank == 0 || pad.size() % 2 || (int64_t)pad.size() / 2 > rank)
    return false;
  SmallVector<int64_t> low(rank, 0), high(rank, 0), cropLow(rank, 0), cropped(xt.getShape());
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    int64_t d = rank - 1 - k;
    int64_t lo = pad[2 * k], hi = pad[2 * k + 1];
    cropLow[d] = std::max<int64_t>(0, -lo);
    cropped[d] -= cropLow[d] + std::max<int64_t>(0, -hi);
    low[d] = std::max<int64_t>(0, lo);
    high[d] = std::max<int64_t>(0, hi);
    if (cropped[d] < 0)
      return false; // ATen rejects it: let it say why
  }
  MLIRContext *ctx = b.getContext();
  Type elt = out.getElementType();
  if (elt != xt.getElementType())
    return false;
  if (cropped != SmallVector<int64_t>(xt.getShape())) {
    int64_t numel = 1;
    for (int64_t s : cropped)
      numel *= s;
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < rank; ++d)
      exprs.push_back(getAffineDimExpr(d, ctx) + cropLow[d]);
    auto to = RankedTensorType::get(cropped, elt);
    x = numel == 0 ? Value(b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(to, ArrayRef<Attribute>{})))
                   : remap(x, to, AffineMap::get(rank, 0, exprs, ctx));
  }
  const ArgValue &v = node.args.size() > 2 ? node.args[2] : ArgValue{};
  double dv = v.kind == ArgValue::Double ? v.d : v.kind == ArgValue::Int ? double(v.i) : 0.0;
  TypedAttr value;
  if (auto ft = dyn_cast<FloatType>(elt))
    value = b.getFloatAttr(ft, dv);
  else if (elt.isInteger(1))
    value = b.getBoolAttr(dv != 0);
  else
    value = b.getIntegerAttr(elt, v.kind == ArgValue::Int ? v.i : (int64_t)dv);
  if (cast<RankedTensorType>(x.getType()).getNumElements() == 0 && out.getNumElements() != 0) {
    // Everything is padding: a splat.
    auto scalarType = RankedTensorType::get({}, elt);
    values[node.outputs[0]] =
        bcast(b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(scalarType, value)), out);
    return true;
  }
  auto op = b.create<tg::PadOp>(loc, out, x, b.getDenseI64ArrayAttr(low),
                                b.getDenseI64ArrayAttr(high), value);
  setStrides(op, node.outputs[0]);
  values[node.outputs[0]] = op.getResult();
  return true;
}

bool Importer::importIndexing(const SegmentNode &node, const ops::OpInfo &info) {
  using ops::Lowering;
  if (node.outputs.size() != 1 || node.args.empty())
    return false;
  if (info.lowering == Lowering::Concat)
    return importConcat(node, StringRef(info.variant) == "stack");
  if (node.args[0].kind != ArgValue::Tensor)
    return false;
  auto tensorAt = [&](size_t i) {
    return i < node.args.size() && node.args[i].kind == ArgValue::Tensor;
  };
  switch (info.lowering) {
  case Lowering::Embedding: return tensorAt(1) && importEmbedding(node);
  case Lowering::IndexSelect: return tensorAt(2) && importIndexSelect(node);
  case Lowering::Gather: return tensorAt(2) && importGather(node);
  case Lowering::AdvancedIndex:
    return node.args.size() == 2 && node.args[1].kind == ArgValue::TensorList &&
           importAdvancedIndex(node);
  case Lowering::ScatterAdd: return tensorAt(2) && tensorAt(3) && importScatterAdd(node);
  case Lowering::ConstantPad:
    return node.args.size() > 1 && node.args[1].kind == ArgValue::IntList &&
           importConstantPad(node);
  default: return false;
  }
}

} // namespace tgc::detail
