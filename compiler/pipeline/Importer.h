//===- Importer.h - the Importer class shared by the import files -------===//
//
// Internal to compiler/pipeline: Import.cpp (driver, pointwise, extern,
// functionalization), ImportLayout.cpp (views and layout ops),
// ImportRows.cpp (reductions, norms), ImportComposites.cpp (pointwise ops
// built from several tg ops) and ImportIndexing.cpp
// (gather, index_select, embedding, indexing, scatter_add, cat, pad) each
// define part of it.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_PIPELINE_IMPORTER_H
#define TGC_COMPILER_PIPELINE_IMPORTER_H

#include "compiler/ops/OpRegistry.h"
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
    // A segment that writes a buffer one of its views aliases keeps every
    // view a real ATen alias, so the writes stay visible where the program
    // expects them.
    viewsAsRemaps = !writesSeenThroughViews();
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
  /// Builds `node` by its registry row's lowering; false (nothing built)
  /// when the node has a form the lowering does not cover (then it is an
  /// ATen call).
  bool lower(const SegmentNode &node, const ops::OpInfo &info);
  /// One tg pointwise op named by the registry (and alpha, gelu's mode).
  LogicalResult importPointwise(const SegmentNode &node, const ops::OpInfo &info);
  /// Reductions, softmax, norms, batch norm and dropout (ImportRows.cpp).
  bool importRowOp(const SegmentNode &node, const ops::OpInfo &info);
  /// Pointwise ops built from several tg ops: comparisons, selections,
  /// factories, casts, activations (ImportComposites.cpp).
  bool importComposite(const SegmentNode &node, const ops::OpInfo &info);
  Value compare(Value l, Value r, StringRef pred);
  /// Argument `a` broadcast to `like`'s shape as `elt` elements; null on failure.
  Value operandAs(const ArgValue &a, RankedTensorType like, Type elt);
  Value triangle(const SegmentNode &node, RankedTensorType out, StringRef keepWhere);
  Value arange(const SegmentNode &node, RankedTensorType out, StringRef form);
  Value fill(const SegmentNode &node, RankedTensorType out, StringRef value);
  Value activation(const SegmentNode &node, const ops::OpInfo &info, Value x,
                   RankedTensorType out);
  /// ATen view ops (and flip) as tg.remap; false for other forms.
  bool importLayout(const SegmentNode &node, const ops::OpInfo &info);
  Value remap(Value x, RankedTensorType to, AffineMap map);
  /// embedding, index_select, gather, index.Tensor, scatter_add, cat,
  /// stack and constant_pad_nd (ImportIndexing.cpp); false for other forms.
  bool importIndexing(const SegmentNode &node, const ops::OpInfo &info);
  bool importEmbedding(const SegmentNode &node);
  bool importIndexSelect(const SegmentNode &node);
  bool importGather(const SegmentNode &node);
  bool importAdvancedIndex(const SegmentNode &node);
  bool importScatterAdd(const SegmentNode &node);
  bool importConcat(const SegmentNode &node, bool isStack);
  bool importConstantPad(const SegmentNode &node);
  /// Index tensor `v` read at every position of `to` through `map`.
  Value indexAt(Value v, RankedTensorType to, AffineMap map);
  /// Binds value `id` to a tg.gather of `input`.
  Value gather(Value input, ValueRange indices, ArrayRef<int64_t> dims, AffineMap map, bool wrap,
               StringRef origin, int id);
  /// bernoulli_(x, p) on a fresh buffer: 1 with probability p, from
  /// tgc's counter-based RNG (see tg.uniform).
  bool importBernoulli(const SegmentNode &node);
  /// A 0-d i64 seed drawn from ATen's default generator at each call.
  Value drawSeed();
  /// split / split_with_sizes / unbind: one slice or select remap per part.
  bool importSplit(const SegmentNode &node, bool unbind);
  /// The type ATen computes `t` in: float for the half types.
  Type opmath(Type t);
  Type computeTypeOf(ArrayRef<const ArgValue *> args);
  Value reduce(Value x, StringRef kind, int64_t count);
  /// `x` with the dims `dims` (all when empty) moved last, in order, by a
  /// remap when they are not already trailing; and their number.
  std::pair<Value, int64_t> toRows(Value x, std::vector<int64_t> dims);
  /// Binds `id` to a row-space result of toRows(_, dims) (sorted,
  /// non-negative), permuted back.
  void fromRows(Value rows, ArrayRef<int64_t> dims, int id);
  /// native_batch_norm in training: batch statistics per channel, the
  /// normalized result, and the running statistics written back.
  bool importBatchNormTraining(const SegmentNode &node);
  /// The number of elements in one row of `rows`' last `count` dims.
  double rowSize(Value rows, int64_t count);
  /// The type of a row statistic of `rows`: the last `count` dims as 1s.
  RankedTensorType rowStatsType(Value rows, int64_t count);
  Value divide(Value v, double by);
  Value bcast(Value v, RankedTensorType to);
  Value scalar(double v, RankedTensorType like);
  Value castTo(Value v, Type elt);
  Value finish(Value v, int id);
  LogicalResult importExtern(const SegmentNode &node);
  /// `aten::copy_(buffer, value)` as an extern marked `mutates` (the value
  /// written into a caller's tensor, `id` its value id).
  Value copyInto(Value buffer, Value value, int id);
  FailureOr<Attribute> externArg(const ArgValue &a, SmallVector<Value> &ins);

  const Segment &seg;
  OpBuilder &b;
  std::string &error;
  Location loc;
  bool viewsAsRemaps = true;
  /// Indices of in-place nodes imported as their functional form: the
  /// buffer they write has no other alias that anyone reads afterwards.
  std::set<size_t> functional;
  /// Inputs some node in `functional` writes: their final values are
  /// copied back into the caller's tensors at the end (writeBackInputs), so
  /// no buffer changes under the graph while it runs.
  std::set<int> writtenInputs;
  void planFunctionalization();
  /// Whether an ATen call that stays in place writes a buffer that a view
  /// op of the segment aliases (or writes where import cannot tell).
  bool writesSeenThroughViews() const;

public:
  /// Imports node `index`: an in-place node in `functional` as its
  /// out-of-place form, whose result then stands for the written buffer.
  LogicalResult importAt(size_t index);
  /// Copies the final value of each written input into its argument
  /// (`args[i]` holds input i), after everything else.
  void writeBackInputs(ArrayRef<Value> args);
  /// Gives computed results that came out of import without a layout and
  /// that an ATen call reads the layout eager gave them (`tg.strides`).
  void keepEagerLayouts();
  /// Makes every value computed before an in-place ATen call and read
  /// after it a buffer before the call (through `aten::alias`).
  void pinAcrossWrites(Block *body);
};


} // namespace tgc::detail

#endif // TGC_COMPILER_PIPELINE_IMPORTER_H
