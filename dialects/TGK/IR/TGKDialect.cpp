//===- TGKDialect.cpp - the `tgk` dialect, its ops and verifiers ----------===//
#include "dialects/TGK/IR/TGKDialect.h"
#include "runtime/ContiguousStrides.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tgc::tgk;

#include "dialects/TGK/IR/TGKDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/TGK/IR/TGKAttrs.cpp.inc"

void TGKDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/TGK/IR/TGKOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/TGK/IR/TGKAttrs.cpp.inc"
      >();
}

LogicalResult
ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     StringRef kind, int64_t block, int64_t vector,
                     int64_t warps) {
  if (!llvm::is_contained({"pointwise", "reduction", "persistent-row",
                           "matmul-template"},
                          kind))
    return emitError() << "unknown kernel kind \"" << kind << "\"";
  if (block <= 0 || vector <= 0 || warps <= 0)
    return emitError() << "block, vector and warps must be positive";
  if (!llvm::isPowerOf2_64(vector))
    return emitError() << "vector width must be a power of two, got " << vector;
  return success();
}

void KernelOp::build(OpBuilder &b, OperationState &state, TypeRange results,
                     StringRef name, ValueRange inputs,
                     ArrayRef<int64_t> iterationShape, ArrayRef<AffineMap> maps,
                     ArrayAttr inputStrides, ArrayAttr resultStrides) {
  state.addOperands(inputs);
  state.addTypes(results);
  state.addAttribute(getSymNameAttrName(state.name), b.getStringAttr(name));
  state.addAttribute(getIterationShapeAttrName(state.name),
                     b.getDenseI64ArrayAttr(iterationShape));
  state.addAttribute(getIndexingMapsAttrName(state.name),
                     b.getAffineMapArrayAttr(maps));
  state.addAttribute(getInputStridesAttrName(state.name), inputStrides);
  state.addAttribute(getResultStridesAttrName(state.name), resultStrides);
  state.addRegion();
}

int64_t KernelOp::getNumIterations() {
  int64_t n = 1;
  for (int64_t d : getIterationShape())
    n *= d;
  return n;
}

bool KernelOp::isLinear() {
  std::vector<int64_t> contiguous = tgc::contiguousStrides(getIterationShape());
  for (auto [map, s] :
       llvm::zip(getIndexingMaps().getAsValueRange<AffineMapAttr>(), getInputStrides()))
    if (!map.isIdentity() || cast<DenseI64ArrayAttr>(s).asArrayRef() != ArrayRef(contiguous))
      return false;
  for (Attribute s : getResultStrides())
    if (cast<DenseI64ArrayAttr>(s).asArrayRef() != ArrayRef(contiguous))
      return false;
  return true;
}

static LogicalResult verifyStrides(KernelOp op, ArrayAttr strides,
                                   TypeRange types, StringRef what) {
  if (strides.size() != types.size())
    return op.emitOpError() << "has " << strides.size() << " " << what
                            << " entries for " << types.size() << " buffers";
  for (auto [s, t] : llvm::zip(strides, types)) {
    auto arr = dyn_cast<DenseI64ArrayAttr>(s);
    if (!arr || arr.size() != cast<ShapedType>(t).getRank())
      return op.emitOpError() << what << " entries must be i64 arrays of the "
                                         "buffer's rank";
  }
  return success();
}

LogicalResult KernelOp::verify() {
  ArrayRef<int64_t> shape = getIterationShape();
  if (getIndexingMaps().size() != getInputs().size())
    return emitOpError("has ") << getIndexingMaps().size()
                               << " indexing maps for " << getInputs().size()
                               << " inputs";
  for (auto [i, m] : llvm::enumerate(getIndexingMaps().getAsValueRange<AffineMapAttr>())) {
    auto t = cast<ShapedType>(getInputs()[i].getType());
    if (m.getNumDims() != shape.size() || m.getNumResults() != t.getRank())
      return emitOpError("indexing map ")
             << i << " must map " << shape.size() << " iteration dims to the "
             << t.getRank() << " dims of input " << i;
  }
  for (Type t : getResultTypes())
    if (cast<ShapedType>(t).getShape() != shape)
      return emitOpError("result type ")
             << t << " does not have the iteration shape";
  if (failed(verifyStrides(*this, getInputStrides(), getInputs().getTypes(),
                           "input_strides")) ||
      failed(verifyStrides(*this, getResultStrides(), getResultTypes(),
                           "result_strides")))
    return failure();
  return success();
}

LogicalResult KernelOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body takes ") << body.getNumArguments()
                                      << " scalars for " << getInputs().size()
                                      << " inputs";
  // An argument is one element of its input, or (read only by tgk.load)
  // the whole input.
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != cast<ShapedType>(in.getType()).getElementType() &&
        arg.getType() != in.getType())
      return emitOpError("body argument type ")
             << arg.getType() << " is neither the input's element type nor its type";
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != getNumResults())
    return emitOpError("yields ") << yield.getValues().size()
                                  << " values for " << getNumResults()
                                  << " results";
  for (auto [v, r] : llvm::zip(yield.getValues(), getResultTypes()))
    if (v.getType() != cast<ShapedType>(r).getElementType())
      return emitOpError("yielded type ")
             << v.getType() << " does not match result element type";
  return success();
}

int64_t RowKernelOp::getNumRows() {
  int64_t n = 1;
  for (int64_t d : getOuterShape())
    n *= d;
  return n;
}

int64_t RowKernelOp::getRowSize() {
  int64_t n = 1;
  for (int64_t d : getRowShape())
    n *= d;
  return n;
}

LogicalResult RowKernelOp::verify() {
  size_t rank = getOuterShape().size() + getRowShape().size();
  if (getIndexingMaps().size() != getInputs().size())
    return emitOpError("needs one indexing map per input");
  for (auto m : getIndexingMaps().getAsValueRange<AffineMapAttr>())
    if (m.getNumDims() != rank)
      return emitOpError("indexing maps must take ") << rank << " dims";
  SmallVector<int64_t> full(getOuterShape());
  full.append(getRowShape().begin(), getRowShape().end());
  for (Type t : getResultTypes()) {
    auto shape = cast<ShapedType>(t).getShape();
    if (shape.size() != rank)
      return emitOpError("results must have rank ") << rank;
    for (size_t d = 0; d < rank; ++d)
      if (shape[d] != full[d] && !(d >= getOuterShape().size() && shape[d] == 1))
        return emitOpError("result type ") << t << " is neither an element nor a row result";
  }
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body takes one scalar per input");
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != getNumResults())
    return emitOpError("yields ") << yield.getValues().size() << " values for "
                                  << getNumResults() << " results";
  return success();
}

namespace {

/// Drops kernel results nobody uses: the kernel stops writing them.
struct DropUnusedResults : public OpRewritePattern<KernelOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KernelOp k,
                                PatternRewriter &rewriter) const override {
    SmallVector<unsigned> live;
    for (OpResult r : k.getResults())
      if (!r.use_empty())
        live.push_back(r.getResultNumber());
    if (live.size() == k.getNumResults() || live.empty())
      return failure(); // nothing to drop, or the whole kernel is dead (DCE)
    SmallVector<Type> types;
    SmallVector<Attribute> strides;
    for (unsigned i : live) {
      types.push_back(k.getResult(i).getType());
      strides.push_back(k.getResultStrides()[i]);
    }
    auto maps = llvm::to_vector(k.getIndexingMaps().getAsValueRange<AffineMapAttr>());
    auto fresh = rewriter.create<KernelOp>(
        k.getLoc(), types, k.getSymName(), k.getInputs(), k.getIterationShape(),
        maps, k.getInputStrides(), rewriter.getArrayAttr(strides));
    if (auto s = k.getScheduleAttr())
      fresh.setScheduleAttr(s);
    rewriter.inlineRegionBefore(k.getBody(), fresh.getBody(), fresh.getBody().end());
    auto yield = cast<YieldOp>(fresh.getBody().front().getTerminator());
    SmallVector<Value> kept;
    for (unsigned i : live)
      kept.push_back(yield.getValues()[i]);
    rewriter.setInsertionPoint(yield);
    rewriter.replaceOpWithNewOp<YieldOp>(yield, kept);
    for (auto [i, r] : llvm::enumerate(live))
      rewriter.replaceAllUsesWith(k.getResult(r), fresh.getResult(i));
    rewriter.eraseOp(k);
    return success();
  }
};

} // namespace

void KernelOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<DropUnusedResults>(context);
}

LogicalResult IndexOp::verify() {
  Operation *parent = (*this)->getParentOp();
  int64_t rank = 0;
  if (auto k = dyn_cast<KernelOp>(parent))
    rank = k.getIterationShape().size();
  else if (auto r = dyn_cast<RowKernelOp>(parent))
    rank = r.getOuterShape().size() + r.getRowShape().size();
  if (getMap().getNumResults() != 1 || getMap().getNumDims() != rank || getMap().getNumSymbols())
    return emitOpError("map must take the kernel's ") << rank << " iteration dims to one index";
  return success();
}

LogicalResult LoadOp::verify() {
  auto arg = dyn_cast<BlockArgument>(getBuffer());
  Operation *parent = (*this)->getParentOp();
  if (!arg || arg.getOwner()->getParentOp() != parent)
    return emitOpError("buffer must be a block argument of the enclosing kernel");
  int64_t rank = 0;
  if (auto k = dyn_cast<KernelOp>(parent))
    rank = k.getIterationShape().size();
  else if (auto r = dyn_cast<RowKernelOp>(parent))
    rank = r.getOuterShape().size() + r.getRowShape().size();
  auto t = cast<ShapedType>(getBuffer().getType());
  AffineMap m = getMap();
  if (m.getNumDims() != rank || m.getNumSymbols() != getIndices().size() ||
      m.getNumResults() != t.getRank())
    return emitOpError("map must take the kernel's ")
           << rank << " dims and " << getIndices().size() << " indices to the buffer's "
           << t.getRank() << " dims";
  if (getResult().getType() != t.getElementType())
    return emitOpError("result must be the buffer's element type");
  return success();
}

LogicalResult ReduceOp::verify() {
  StringRef k = getKind();
  bool arg = k == "argmax" || k == "argmin";
  if (!arg && !llvm::is_contained({"sum", "prod", "max", "min"}, k))
    return emitOpError("unknown reduction kind \"") << k << "\"";
  Type want = arg ? Type(IntegerType::get(getContext(), 64)) : getValue().getType();
  if (getResult().getType() != want)
    return emitOpError("result must be ") << want;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/TGK/IR/TGKOps.cpp.inc"
