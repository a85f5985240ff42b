//===- Importer.h - the Importer class shared by the import files -------===//
//
// Internal to compiler/pipeline: Import.cpp (driver, pointwise, extern,
// functionalization), ImportLayout.cpp (views and layout ops),
// ImportRows.cpp (reductions, norms, composites) and ImportIndexing.cpp
// (gather, index_select, embedding, indexing, scatter_add, cat, pad) each
// define part of it.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_PIPELINE_IMPORTER_H
#define TGC_COMPILER_PIPELINE_IMPORTER_H

#include "compiler/pipeline/Import.h"
#include "dialects/TG/IR/TGOps.h"
#include "mlir/IR/Builders.h"

#include <set>
#include <string>
#include <vector>

namespace tgc::detail {

using namespace mlir;

/// `aten::name.overload` of a node.
std::string qualified(const SegmentNode &n);

/// The map of a row-major reshape from `in` to `out` (equal numel).
AffineMap reshapeMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out, MLIRContext *ctx);


/// Builds the body of one segment function.
class Importer {
public:
  Importer(const Segment &seg, OpBuilder &b, std::string &error)
      : seg(seg), b(b), error(error), loc(b.getUnknownLoc()) {
    planFunctionalization();
    // A segment that still writes through a buffer keeps every view a real
    // ATen alias, so the writes stay visible where the program expects them.
    viewsAsRemaps = true;
    for (size_t i = 0; i < seg.nodes.size(); ++i)
      viewsAsRemaps &= !seg.nodes[i].mutates || functional.count(i);
  }

  LogicalResult importNode(const SegmentNode &node);
  DenseMap<int, Value> values;

private:
  RankedTensorType typeOf(int id) {
    const TensorSpec &s = seg.values[id];
    return RankedTensorType::get(s.sizes, elementType(b.getContext(), s.dtype));
  }
  void setStrides(Operation *op, int id);
  /// Operand `a` as a tensor of `type` (cast, then broadcast).
  FailureOr<Value> operand(const ArgValue &a, RankedTensorType type);
  LogicalResult importPointwise(const SegmentNode &node);
  /// Reductions, softmax and layer_norm over trailing dims; returns false
  /// (nothing built) when the node has another form (then it is extern).
  bool importRowOp(const SegmentNode &node);
  /// Pointwise ops built from several tg ops (comparisons, where, clamp,
  /// silu, softplus, ...); false when the node has another form.
  bool importComposite(const SegmentNode &node);
  /// ATen view ops (and flip) as tg.remap; false for other forms.
  bool importLayout(const SegmentNode &node);
  Value remap(Value x, RankedTensorType to, AffineMap map);
  /// bernoulli_(x, p) on a fresh buffer: 1 with probability p, from
  /// tgc's counter-based RNG (see tg.uniform).
  bool importBernoulli(const SegmentNode &node);
  /// A 0-d i64 seed drawn from ATen's default generator at each call.
  Value drawSeed();
  /// split / split_with_sizes / unbind: one slice or select remap per part.
  bool importSplit(const SegmentNode &node);
  Type computeTypeOf(ArrayRef<const ArgValue *> args);
  Value reduce(Value x, StringRef kind, int64_t count);
  /// `x` with the dims `dims` (all when empty) moved last, in order, by a
  /// remap when they are not already trailing; and their number.
  std::pair<Value, int64_t> toRows(Value x, std::vector<int64_t> dims);
  /// The number of elements in one row of `rows`' last `count` dims.
  double rowSize(Value rows, int64_t count);
  Value divide(Value v, double by);
  Value bcast(Value v, RankedTensorType to);
  Value scalar(double v, RankedTensorType like);
  Value castTo(Value v, Type elt);
  Value finish(Value v, int id);
  LogicalResult importExtern(const SegmentNode &node);
  FailureOr<Attribute> externArg(const ArgValue &a, SmallVector<Value> &ins);

  const Segment &seg;
  OpBuilder &b;
  std::string &error;
  Location loc;
  bool viewsAsRemaps = true;
  /// Indices of in-place nodes imported as their functional form: the
  /// buffer they write has no other alias that anyone reads afterwards.
  std::set<size_t> functional;
  void planFunctionalization();

public:
  /// Imports node `index`: an in-place node in `functional` as its
  /// out-of-place form, whose result then stands for the written buffer.
  LogicalResult importAt(size_t index);
};


} // namespace tgc::detail

#endif // TGC_COMPILER_PIPELINE_IMPORTER_H
