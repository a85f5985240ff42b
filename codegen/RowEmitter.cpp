//===- RowEmitter.cpp - tgk.row_kernel per-row code, for both targets -----===//
//
// A row kernel's body runs once per row: one loop over the row per
// tgk.reduce (recomputing the element values it needs), row values once,
// then one loop writing element results. The targets differ only in how a
// row is spread over threads: the CPU walks it with one thread (SIMD lanes
// inside, `omp simd` reductions), CUDA with `lanes` threads that each take
// every lanes-th element and then combine their partial results with
// tgc_row_reduce (warp shuffles, plus shared memory when a row has the whole
// block). The combine order is fixed by the lane numbering, so results are
// the same on every run (deterministic).
//
//===----------------------------------------------------------------------===//
#include "codegen/BodyPrinter.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace tgc::codegen::detail {

namespace {

class RowPrinter {
public:
  RowPrinter(tgk::RowKernelOp k, const DescribedKernel &d, Target target, std::string &out)
      : k(k), described(d), target(target), lanes(d.desc.launch.lanes), out(out),
        outer(k.getOuterShape().size()), rank(outer + k.getRowShape().size()),
        n(k.getRowSize()) {}
  LogicalResult print(std::string &error);

private:
  bool isElement(Value v) { return element.contains(v); }
  void classify();
  std::string offset(AffineMap map, ArrayRef<int64_t> strides);
  std::string loopHead(const std::string &cpuPragma);
  std::string loopTail() { return cache ? "      }\n    }\n" : "    }\n"; }
  std::string rowIndices();
  void cacheRow();
  std::string combine(StringRef var, StringRef op);
  void collect(Value v, llvm::SetVector<Operation *> &ops, llvm::SetVector<unsigned> &args);
  LogicalResult emitElementCode(BodyPrinter &p, ArrayRef<Value> targets, std::string &error);
  LogicalResult emitReadyRowOps(BodyPrinter &p, std::string &error);
  void loadRowInputs(BodyPrinter &p);
  LogicalResult emitArgReduction(BodyPrinter &p, tgk::ReduceOp red, std::string &error);
  LogicalResult emitReduction(BodyPrinter &p, tgk::ReduceOp red, std::string &error);
  LogicalResult emitResults(BodyPrinter &p, std::string &error);

  tgk::RowKernelOp k;
  const DescribedKernel &described;
  Target target;
  int64_t lanes; ///< threads per row (1 on the CPU)
  std::string &out;
  size_t outer, rank;
  int64_t n; ///< elements per row
  DenseSet<Value> element;
  DenseSet<Operation *> rowDone;
  DenseSet<Value> available; ///< row values defined at row scope
  unsigned counter = 0;
  /// CUDA: elements per thread kept in registers (c<j>[t]) for the cached
  /// inputs, so later loops over the row do not read memory again; 0 when
  /// the row does not fit.
  int64_t cache = 0;
  llvm::SmallVector<unsigned> cached;
  /// CPU: computed element values a reduction loop stored per element
  /// (rcache<N>[j]); later loops read them back instead of computing them
  /// again (softmax's exp).
  DenseMap<Value, std::string> operandCache;
  llvm::SetVector<Value> cacheReads;
  /// CPU: row values that element values are divided by (softmax's sum),
  /// and the reciprocal computed once per row for each: the element loop
  /// multiplies, as ATen's kernels do.
  DenseSet<Value> wantsReciprocal;
  DenseMap<Value, std::string> reciprocal;
  void makeAvailable(BodyPrinter &p, Value v);
  /// Whether reduction operand `v` is worth a row buffer: computed (not a
  /// plain load), read again after the reduction, and the row fits.
  bool cacheable(Value v) {
    return target == Target::Cpu && !isa<BlockArgument>(v) && n <= 16384 &&
           !operandCache.count(v) &&
           llvm::any_of(v.getUsers(), [](Operation *u) { return !isa<tgk::ReduceOp>(u); });
  }
};

} // namespace

std::string RowPrinter::offset(AffineMap map, ArrayRef<int64_t> strides) {
  return linearOffset(
      map, strides, "long long",
      [&](unsigned d) { return fmt::format("{}idx{}", d < outer ? "o" : "r", d); }, nullptr,
      target == Target::Cpu);
}

/// A loop over the row's elements `j`: all of them on the CPU, this
/// thread's share (tgc_lane, tgc_lane + lanes, ...) on CUDA.
std::string RowPrinter::loopHead(const std::string &cpuPragma) {
  if (target == Target::Cpu)
    return cpuPragma + fmt::format("    for (long long j = 0; j < {}LL; ++j) {{\n", n);
  if (cache)
    return fmt::format("#pragma unroll\n    for (int t = 0; t < {}; ++t) {{\n"
                       "      const long long j = tgc_lane + (long long)t * {};\n      if (j < {}LL) {{\n",
                       cache, lanes, n);
  return fmt::format("    for (long long j = tgc_lane; j < {}LL; j += {}) {{\n", n, lanes);
}

/// The row indices `ridx<d>` of element `j`.
std::string RowPrinter::rowIndices() {
  IndexSplit how;
  how.indent = "      ";
  how.rem = "rrem";
  how.name = [this](size_t d) { return "ridx" + std::to_string(outer + d); };
  return decomposeIndex("j", k.getRowShape(), how);
}

/// CUDA, rows of at most 32 elements per thread (within a register budget):
/// loads every element input once into registers (a persistent row); softmax's and layer_norm's later
/// passes then read registers. Fully unrolled loops keep c<j>[t] in registers.
void RowPrinter::cacheRow() {
  if (target != Target::Cuda)
    return;
  Block &body = k.getBody().front();
  llvm::SmallVector<unsigned> args;
  for (BlockArgument a : body.getArguments())
    if (isElement(a) && !isa<ShapedType>(a.getType()))
      args.push_back(a.getArgNumber());
  int64_t perThread = (n + lanes - 1) / lanes;
  // Registers a thread may have at this block size (65536 per SM, at most
  // 255), less 64 for the rest of the kernel, a third of that for the row:
  // 63 values at 256 threads, 21 at 512, none at 1024 (more would spill).
  int64_t block = described.desc.launch.block;
  int64_t budget = std::min<int64_t>(64, (std::min<int64_t>(255, 65536 / block) - 64) / 3);
  if (args.empty() || perThread > 32 || perThread * (int64_t)args.size() > budget)
    return;
  for (unsigned j : args)
    out += fmt::format("    {} c{}[{}];\n", computeType(body.getArgument(j).getType()), j, perThread);
  cache = perThread;
  out += loopHead("") + rowIndices();
  for (unsigned j : args) {
    auto map = cast<AffineMapAttr>(k.getIndexingMaps()[j]).getValue();
    auto strides = cast<DenseI64ArrayAttr>(k.getInputStrides()[j]).asArrayRef();
    out += fmt::format("      c{}[t] = {};\n", j,
                       load(body.getArgument(j).getType(), target,
                            fmt::format("in{}[{}]", j, offset(map, strides))));
  }
  out += loopTail();
  cached = args;
}

/// CUDA: every thread of the row gets the row's result from its partial one.
std::string RowPrinter::combine(StringRef var, StringRef op) {
  if (target == Target::Cpu)
    return "";
  return fmt::format("      {0} = tgc_row_reduce<{1}>({0}, {2}());\n", var.str(), lanes, op.str());
}

void RowPrinter::collect(Value v, llvm::SetVector<Operation *> &ops,
                         llvm::SetVector<unsigned> &args) {
  if (!isElement(v))
    return;
  if (operandCache.count(v)) {
    cacheReads.insert(v);
    return;
  }
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (!isa<ShapedType>(arg.getType()))
      args.insert(arg.getArgNumber());
    return;
  }
  Operation *op = v.getDefiningOp();
  if (ops.contains(op))
    return;
  for (Value o : op->getOperands())
    collect(o, ops, args);
  ops.insert(op);
}

LogicalResult RowPrinter::emitReadyRowOps(BodyPrinter &p, std::string &error) {
  for (Operation &op : k.getBody().front().without_terminator()) {
    if (rowDone.contains(&op) || isa<tgk::ReduceOp>(op) || isElement(op.getResult(0)))
      continue;
    if (!llvm::all_of(op.getOperands(), [&](Value v) { return available.contains(v); }))
      continue;
    if (failed(p.print(&op, error)))
      return failure();
    rowDone.insert(&op);
    makeAvailable(p, op.getResult(0));
  }
  return success();
}

LogicalResult RowPrinter::emitElementCode(BodyPrinter &p, ArrayRef<Value> targets,
                                          std::string &error) {
  llvm::SetVector<Operation *> ops;
  llvm::SetVector<unsigned> args;
  cacheReads.clear();
  for (Value t : targets)
    collect(t, ops, args);
  out += rowIndices();
  Block &body = k.getBody().front();
  for (unsigned j : args) {
    if (llvm::is_contained(cached, j)) {
      p.bind(body.getArgument(j), fmt::format("c{}[t]", j));
      continue;
    }
    auto map = cast<AffineMapAttr>(k.getIndexingMaps()[j]).getValue();
    auto strides = cast<DenseI64ArrayAttr>(k.getInputStrides()[j]).asArrayRef();
    std::string name = "e" + std::to_string(counter++);
    Type t = body.getArgument(j).getType();
    out += fmt::format("      const {} {} = {};\n", computeType(t), name,
                       load(t, target, fmt::format("in{}[{}]", j, offset(map, strides))));
    p.bind(body.getArgument(j), name);
  }
  for (Value v : cacheReads) {
    std::string name = "c" + std::to_string(counter++);
    out += fmt::format("      const {} {} = {}[j];\n", computeType(v.getType()), name, operandCache[v]);
    p.bind(v, name);
  }
  llvm::SmallVector<Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : sorted) {
    auto div = dyn_cast<arith::DivFOp>(op);
    if (div && reciprocal.count(div.getRhs())) {
      std::string name = "q" + std::to_string(counter++);
      out += fmt::format("      const {} {} = {} * {};\n", computeType(div.getType()), name,
                         p.name(div.getLhs()), reciprocal[div.getRhs()]);
      p.bind(div.getResult(), name);
      continue;
    }
    if (failed(p.print(op, error)))
      return failure();
  }
  return success();
}

/// Marks the values that vary along the row (element values).
void RowPrinter::classify() {
  Block &body = k.getBody().front();
  for (BlockArgument a : body.getArguments()) {
    auto map = cast<AffineMapAttr>(k.getIndexingMaps()[a.getArgNumber()]).getValue();
    bool usesRow = llvm::any_of(map.getResults(), [&](AffineExpr e) {
      for (size_t d = outer; d < rank; ++d)
        if (e.isFunctionOfDim(d))
          return true;
      return false;
    });
    if (usesRow)
      element.insert(a);
  }
  for (Operation &op : body.without_terminator()) {
    if (auto index = dyn_cast<tgk::IndexOp>(op)) {
      for (size_t d = outer; d < rank; ++d)
        if (index.getMap().getResult(0).isFunctionOfDim(d))
          element.insert(index.getResult());
      continue;
    }
    if (!isa<tgk::ReduceOp>(op) &&
        llvm::any_of(op.getOperands(), [&](Value v) { return element.contains(v); }))
      element.insert(op.getResult(0));
  }
  if (target == Target::Cpu)
    for (Operation &op : body.without_terminator())
      if (auto div = dyn_cast<arith::DivFOp>(op))
        if (isElement(div.getLhs()) && !isElement(div.getRhs()))
          wantsReciprocal.insert(div.getRhs());
}

/// Marks row value `v` defined at row scope; a divisor of element values
/// gets its reciprocal there too.
void RowPrinter::makeAvailable(BodyPrinter &p, Value v) {
  available.insert(v);
  if (!wantsReciprocal.contains(v) || reciprocal.count(v))
    return;
  std::string name = "rinv" + std::to_string(counter++);
  std::string type = computeType(v.getType());
  out += fmt::format("    const {0} {1} = ({0})1 / {2};\n", type, name, p.name(v));
  reciprocal[v] = name;
}

/// Row-level inputs, loaded once per row.
void RowPrinter::loadRowInputs(BodyPrinter &p) {
  for (BlockArgument a : k.getBody().front().getArguments()) {
    if (isElement(a) || isa<ShapedType>(a.getType()))
      continue;
    unsigned j = a.getArgNumber();
    auto map = cast<AffineMapAttr>(k.getIndexingMaps()[j]).getValue();
    auto strides = cast<DenseI64ArrayAttr>(k.getInputStrides()[j]).asArrayRef();
    std::string name = "w" + std::to_string(j);
    out += fmt::format("    const {} {} = {};\n", computeType(a.getType()), name,
                       load(a.getType(), target, fmt::format("in{}[{}]", j, offset(map, strides))));
    p.bind(a, name);
    makeAvailable(p, a);
  }
}

/// argmax/argmin: the first extreme position; a NaN wins and stays (ATen's
/// rule). Per thread in j order, then (CUDA) combined by tgc_arg_op, which
/// keeps the same rule across threads.
LogicalResult RowPrinter::emitArgReduction(BodyPrinter &p, tgk::ReduceOp red,
                                           std::string &error) {
  Type vt = red.getValue().getType();
  // Narrow integers compare as int (what a warp shuffle can carry).
  std::string bestType = computeType(vt);
  if (vt.isInteger(1) || vt.isInteger(8) || vt.isInteger(16))
    bestType = "int";
  std::string r = "red" + std::to_string(counter++);
  out += fmt::format("    long long {};\n    {{\n      {} best = 0;\n      long long at = -1;\n", r,
                     bestType);
  out += loopHead("");
  if (failed(emitElementCode(p, {red.getValue()}, error)))
    return failure();
  bool max = red.getKind() == "argmax";
  out += fmt::format("      const {} x = {};\n", bestType, p.name(red.getValue()));
  out += fmt::format("      if (at < 0 || (best == best && (x != x || x {} best))) {{ best = x; at = j; }}\n",
                     max ? ">" : "<") + loopTail();
  if (target == Target::Cuda)
    out += fmt::format("      {{\n      tgc_arg<{}> c = {{best, at}};\n", bestType) +
           combine("c", max ? "tgc_arg_op<true>" : "tgc_arg_op<false>") + "      at = c.at;\n      }\n";
  out += fmt::format("    {} = at;\n    }}\n", r);
  p.bind(red.getResult(), r);
  makeAvailable(p, red.getResult());
  return success();
}

LogicalResult RowPrinter::emitReduction(BodyPrinter &p, tgk::ReduceOp red, std::string &error) {
  Type t = red.getType();
  bool fp = isa<FloatType>(t);
  // Floats accumulate in float over short rows (vector lanes keep partial
  // sums, as ATen's kernels do) and in double over long ones on the CPU; a
  // CUDA row's threads and their tree combine keep float accurate enough.
  bool wide = t.isF64() || (target == Target::Cpu && n > 65536);
  std::string acc = !fp ? "long long" : wide ? "double" : "float";
  StringRef kind = red.getKind();
  bool additive = kind == "sum" || kind == "prod";
  std::string r = "red" + std::to_string(counter++);
  Value operand = red.getValue();
  std::string rcache;
  if (cacheable(operand)) {
    rcache = "rcache" + std::to_string(counter++);
    out += fmt::format("    {} {}[{}];\n", computeType(operand.getType()), rcache, n);
  }
  out += fmt::format("    {} {};\n    {{\n", computeType(t), r);
  if (additive) {
    out += fmt::format("      {} acc = {};\n", acc, kind == "sum" ? 0 : 1);
    out += loopHead(fmt::format("#pragma omp simd reduction({} : acc)\n", kind == "sum" ? "+" : "*"));
  } else {
    bool max = kind == "max";
    std::string init = fp ? (max ? "-tgc_inf()" : "tgc_inf()")
                          : (max ? "(long long)(-0x7fffffffffffffffLL - 1)" : "0x7fffffffffffffffLL");
    // NaN propagates: tracked apart so the comparison stays vectorizable.
    out += fmt::format("      {} acc = {};\n      int nan = 0;\n", acc, init);
    out += loopHead(fmt::format("#pragma omp simd reduction({} : acc) reduction(| : nan)\n",
                                max ? "max" : "min"));
  }
  if (failed(emitElementCode(p, {operand}, error)))
    return failure();
  if (!rcache.empty())
    out += fmt::format("      {}[j] = {};\n", rcache, p.name(operand));
  std::string val = "(" + acc + ")(" + p.name(operand) + ")";
  if (additive)
    out += fmt::format("      acc {}= {};\n", kind == "sum" ? "+" : "*", val) + loopTail();
  else
    out += fmt::format("      const {0} x = {1};\n      nan |= x != x;\n      acc = x {2} acc ? x : acc;\n",
                       acc, val, kind == "max" ? ">" : "<") +
           loopTail() + fmt::format("      if (nan) acc = ({})tgc_nan();\n", acc);
  out += combine("acc", "tgc_" + kind.str() + "_op");
  out += fmt::format("    {} = ({})acc;\n    }}\n", r, computeType(t));
  if (!rcache.empty())
    operandCache[operand] = rcache;
  p.bind(red.getResult(), r);
  makeAvailable(p, red.getResult());
  return success();
}

LogicalResult RowPrinter::emitResults(BodyPrinter &p, std::string &error) {
  auto yield = cast<tgk::YieldOp>(k.getBody().front().getTerminator());
  // CUDA: one thread writes a row's row results; clamped rows write nothing.
  std::string rowGuard = target == Target::Cuda ? "    if (tgc_active && tgc_lane == 0)\n  " : "";
  SmallVector<Value> elementYields;
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    auto strides = cast<DenseI64ArrayAttr>(k.getResultStrides()[i]).asArrayRef();
    if (isElement(v)) {
      elementYields.push_back(v);
      continue;
    }
    // A row result is written once per row: its row dims are all index 0.
    SmallVector<AffineExpr> exprs;
    for (size_t d = 0; d < rank; ++d)
      exprs.push_back(d < outer ? getAffineDimExpr(d, k.getContext())
                                : getAffineConstantExpr(0, k.getContext()));
    AffineMap rowMap = AffineMap::get(rank, 0, exprs, k.getContext());
    Type t = cast<ShapedType>(k.getResult(i).getType()).getElementType();
    out += rowGuard + fmt::format("    out{}[{}] = {};\n", i, offset(rowMap, strides),
                                  store(t, target, p.name(v)));
  }
  if (elementYields.empty())
    return success();
  if (target == Target::Cuda)
    out += "    if (tgc_active) {\n";
  out += loopHead("#pragma omp simd\n");
  if (failed(emitElementCode(p, elementYields, error)))
    return failure();
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    if (!isElement(v))
      continue;
    auto strides = cast<DenseI64ArrayAttr>(k.getResultStrides()[i]).asArrayRef();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, k.getContext());
    Type t = cast<ShapedType>(k.getResult(i).getType()).getElementType();
    out += fmt::format("      out{}[{}] = {};\n", i, offset(id, strides), store(t, target, p.name(v)));
  }
  out += loopTail() + (target == Target::Cuda ? "    }\n" : "");
  return success();
}

LogicalResult RowPrinter::print(std::string &error) {
  classify();
  BodyPrinter p(target, described.checkIds, out);
  p.dimName = [this](unsigned d) { return fmt::format("{}idx{}", d < outer ? "o" : "r", d); };
  loadRowInputs(p);
  cacheRow();
  for (Operation &op : k.getBody().front().without_terminator()) {
    auto red = dyn_cast<tgk::ReduceOp>(op);
    if (!red)
      continue;
    if (failed(emitReadyRowOps(p, error)))
      return failure();
    bool arg = red.getKind() == "argmax" || red.getKind() == "argmin";
    if (failed(arg ? emitArgReduction(p, red, error) : emitReduction(p, red, error)))
      return failure();
  }
  if (failed(emitReadyRowOps(p, error)))
    return failure();
  return emitResults(p, error);
}

LogicalResult emitRowBody(tgk::RowKernelOp kernel, const DescribedKernel &d, Target target,
                          std::string &out, std::string &error) {
  return RowPrinter(kernel, d, target, out).print(error);
}

std::string rowIndices(tgk::RowKernelOp kernel) {
  IndexSplit how;
  how.indent = "    ";
  how.rem = "orem";
  how.name = [](size_t d) { return "oidx" + std::to_string(d); };
  return decomposeIndex("o", kernel.getOuterShape(), how);
}

} // namespace tgc::codegen::detail
