//===- ImportLayout.cpp - ATen views and layout ops as tg.remap -----------===//
#include "compiler/pipeline/Importer.h"

#include <algorithm>
#include <cmath>

namespace tgc::detail {

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

/// The map of a row-major reshape from `in` to `out` (equal numel): dims
/// are grouped where their products meet, so splitting or merging dims
/// costs a multiply or a floordiv/mod inside its group only.
AffineMap reshapeMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out, MLIRContext *ctx) {
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

bool Importer::importSplit(const SegmentNode &node, bool unbind) {
  MLIRContext *ctx = b.getContext();
  Value x = values.lookup(node.args[0].tensors[0]);
  auto in = cast<RankedTensorType>(x.getType());
  int64_t rank = in.getRank();
  if (rank == 0)
    return false;
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

bool Importer::importLayout(const SegmentNode &node, const ops::OpInfo &info) {
  using ops::Lowering;
  Lowering lowering = info.lowering;
  if (node.args.empty() || node.args[0].kind != ArgValue::Tensor)
    return false;
  if (lowering == Lowering::Split)
    return viewsAsRemaps && importSplit(node, StringRef(info.variant) == "unbind");
  if (node.outputs.size() != 1)
    return false;
  // flip and clone copy: with no ATen view to fall back to, a remap of
  // theirs that no kernel absorbs is materialized by a copy kernel.
  bool isView = lowering != Lowering::Flip && lowering != Lowering::Clone;
  if (lowering != Lowering::Flip && !viewsAsRemaps)
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
  if (lowering == Lowering::Permute) {
    // permute(x, dims), transpose(x, a, c), t(x): t has one argument.
    bool isT = node.args.size() == 1;
    bool isPermute = node.args.size() == 2;
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      perm.push_back(d);
    if (isPermute) {
      for (int64_t d = 0; d < rank; ++d)
        perm[d] = norm(node.args[1].ints[d], rank);
    } else if (rank == 2) {
      int64_t a = isT ? 0 : norm(node.args[1].i, rank);
      int64_t c = isT ? 1 : norm(node.args[2].i, rank);
      std::swap(perm[a], perm[c]);
    } else if (!isT && rank > 0) {
      std::swap(perm[norm(node.args[1].i, rank)], perm[norm(node.args[2].i, rank)]);
    }
    exprs.assign(rank, getAffineConstantExpr(0, ctx));
    for (int64_t d = 0; d < rank; ++d)
      exprs[perm[d]] = dim(d);
  } else if (lowering == Lowering::Expand) {
    int64_t lead = os.size() - rank;
    for (int64_t k = 0; k < rank; ++k)
      exprs.push_back(is[k] == 1 && os[lead + k] != 1 ? getAffineConstantExpr(0, ctx)
                                                      : dim(lead + k));
  } else if (lowering == Lowering::Slice) {
    int64_t d = norm(node.args[1].i, rank);
    int64_t start = node.args[2].kind == ArgValue::Int ? node.args[2].i : 0;
    int64_t step = node.args.size() > 4 ? node.args[4].i : 1;
    start = std::clamp<int64_t>(start < 0 ? start + is[d] : start, 0, is[d]);
    for (int64_t k = 0; k < rank; ++k)
      exprs.push_back(k == d ? dim(k) * step + start : dim(k));
  } else if (lowering == Lowering::Select) {
    int64_t d = norm(node.args[1].i, rank);
    int64_t index = norm(node.args[2].i, is[d]);
    for (int64_t k = 0; k < rank; ++k)
      exprs.push_back(k == d ? getAffineConstantExpr(index, ctx) : dim(k < d ? k : k - 1));
  } else if (lowering == Lowering::Flip) {
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
    callee = b.getStringAttr(qualified(node));
    viewArgs = b.getArrayAttr(args);
  }
  auto op = b.create<tg::RemapOp>(loc, out, x, AffineMapAttr::get(map), callee, viewArgs);
  setStrides(op, node.outputs[0]);
  values[node.outputs[0]] = op.getResult();
  return true;
}

} // namespace tgc::detail
