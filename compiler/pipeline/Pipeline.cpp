//===- Pipeline.cpp - the compilation pipeline of one segment -------------===//
#include "compiler/pipeline/Pipeline.h"

#include "codegen/Backend.h"
#include "compiler/pipeline/Import.h"
#include "dialects/TG/IR/TGOps.h"
#include "dialects/TGK/IR/TGKDialect.h"
#include "passes/Passes.h"
#include "runtime/FaultInjection.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;

namespace tgc {

namespace {

std::string printOp(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

/// Builds the Plan from the scheduled function: one value per materialized
/// buffer, one step per kernel or extern call.
class PlanBuilder {
public:
  PlanBuilder(Plan &plan, const codegen::CodegenBackend &backend, std::string &error)
      : plan(plan), backend(backend), error(error) {}
  LogicalResult build(func::FuncOp fn);

private:
  int valueId(Value v) {
    auto it = ids.find(v);
    if (it != ids.end())
      return it->second;
    auto type = cast<ShapedType>(v.getType());
    TensorSpec spec;
    spec.sizes.assign(type.getShape().begin(), type.getShape().end());
    auto strides = bufferStrides(v);
    spec.strides.assign(strides.begin(), strides.end());
    spec.dtype = dtypeOf(type.getElementType());
    plan.values.push_back(std::move(spec));
    return ids[v] = plan.values.size() - 1;
  }
  /// Emits `op` (a tgk.kernel, tgk.row_kernel or tgk.scatter_add_kernel)
  /// from its descriptor and appends its launch over `inputs`, with the
  /// descriptor's checks, block, vector and grid copied into the step.
  LogicalResult addKernel(Operation *op, ValueRange inputs, int64_t numel);
  LogicalResult addExtern(tg::ExternOp e);
  FailureOr<ArgValue> argOf(Attribute a, tg::ExternOp e);

  Plan &plan;
  const codegen::CodegenBackend &backend;
  std::string &error;
  DenseMap<Value, int> ids;
};

} // namespace

LogicalResult PlanBuilder::addKernel(Operation *op, ValueRange inputs, int64_t numel) {
  const codegen::DescribedKernel d = codegen::describeKernel(op, backend.target());
  std::string src = backend.emit(op, d, error);
  if (src.empty())
    return failure();
  backend.addSource(plan, std::move(src));
  KernelStep step;
  step.name = op->getAttrOfType<StringAttr>("sym_name").str();
  for (Value in : inputs)
    step.inputs.push_back(valueId(in));
  for (Value r : op->getResults())
    step.outputs.push_back(valueId(r));
  step.numel = numel;
  step.checks = d.desc.checks;
  step.block = d.desc.launch.block;
  step.vector = d.desc.vector;
  step.grid = d.desc.launch.grid;
  plan.steps.push_back({Step::Kernel, (int)plan.kernels.size()});
  plan.kernels.push_back(std::move(step));
  return success();
}

FailureOr<ArgValue> PlanBuilder::argOf(Attribute a, tg::ExternOp e) {
  ArgValue v;
  if (auto ref = dyn_cast<tg::OperandRefAttr>(a)) {
    v.kind = ArgValue::Tensor;
    v.tensors = {valueId(e.getInputs()[ref.getIndex()])};
  } else if (auto list = dyn_cast<ArrayAttr>(a)) {
    v.kind = ArgValue::TensorList;
    for (Attribute el : list) {
      if (auto r = dyn_cast<tg::OperandRefAttr>(el))
        v.tensors.push_back(valueId(e.getInputs()[r.getIndex()]));
      else
        v.tensors.push_back(-1);
    }
  } else if (isa<UnitAttr>(a)) {
    v.kind = ArgValue::None;
  } else if (auto bl = dyn_cast<BoolAttr>(a)) {
    v.kind = ArgValue::Bool;
    v.b = bl.getValue();
  } else if (auto i = dyn_cast<IntegerAttr>(a)) {
    v.kind = ArgValue::Int;
    v.i = i.getInt();
  } else if (auto f = dyn_cast<FloatAttr>(a)) {
    v.kind = ArgValue::Double;
    v.d = f.getValueAsDouble();
  } else if (auto s = dyn_cast<StringAttr>(a)) {
    v.kind = ArgValue::String;
    v.s = s.str();
  } else if (auto il = dyn_cast<DenseI64ArrayAttr>(a)) {
    v.kind = ArgValue::IntList;
    v.ints.assign(il.asArrayRef().begin(), il.asArrayRef().end());
  } else if (auto bl = dyn_cast<DenseBoolArrayAttr>(a)) {
    v.kind = ArgValue::BoolList;
    v.ints.assign(bl.asArrayRef().begin(), bl.asArrayRef().end());
  } else if (auto dl = dyn_cast<DenseF64ArrayAttr>(a)) {
    v.kind = ArgValue::DoubleList;
    v.doubles.assign(dl.asArrayRef().begin(), dl.asArrayRef().end());
  } else if (auto d = dyn_cast<tg::DeviceAttr>(a)) {
    v.kind = ArgValue::Device;
    v.s = d.getName().str();
  } else if (auto dict = dyn_cast<DictionaryAttr>(a)) {
    Attribute w = dict.get("wrapped_number");
    v.kind = ArgValue::ScalarTensor;
    v.dtype = dtypeOf(cast<TypedAttr>(w).getType());
    if (auto f = dyn_cast<FloatAttr>(w)) {
      v.isFloat = true;
      v.d = f.getValueAsDouble();
    } else {
      v.i = cast<IntegerAttr>(w).getInt();
    }
  } else {
    error = "cannot pass argument " + printOp(e) + " to ATen";
    return failure();
  }
  return v;
}

LogicalResult PlanBuilder::addExtern(tg::ExternOp e) {
  ExternStep step;
  StringRef callee = e.getCallee();
  auto [name, overload] = callee.rsplit('.');
  // "aten::add.Tensor" has an overload; "aten::mm" does not.
  if (name.contains("::")) {
    step.op = name.str();
    step.overload = overload.str();
  } else {
    step.op = callee.str();
  }
  for (Attribute a : e.getArgs()) {
    auto v = argOf(a, e);
    if (failed(v))
      return failure();
    step.args.push_back(std::move(*v));
  }
  // ATen results the op leaves undefined (`undefined_results`) are -1.
  SmallVector<int64_t> undefined;
  if (auto u = e->getAttrOfType<DenseI64ArrayAttr>("undefined_results"))
    undefined.assign(u.asArrayRef().begin(), u.asArrayRef().end());
  auto results = e.getResults();
  for (size_t pos = 0, k = 0; k < results.size() || llvm::is_contained(undefined, (int64_t)pos); ++pos)
    step.outputs.push_back(llvm::is_contained(undefined, (int64_t)pos) ? -1
                                                                      : valueId(results[k++]));
  plan.steps.push_back({Step::Extern, (int)plan.externs.size()});
  plan.externs.push_back(std::move(step));
  return success();
}

LogicalResult PlanBuilder::build(func::FuncOp fn) {
  for (BlockArgument arg : fn.getArguments())
    plan.inputs.push_back(valueId(arg));
  for (Operation &op : fn.getBody().front()) {
    LogicalResult r = success();
    if (auto k = dyn_cast<tgk::KernelOp>(op))
      r = addKernel(k, k.getInputs(), k.getNumIterations());
    else if (auto rk = dyn_cast<tgk::RowKernelOp>(op))
      r = addKernel(rk, rk.getInputs(), rk.getNumRows() * rk.getRowSize());
    else if (auto sk = dyn_cast<tgk::ScatterAddKernelOp>(op))
      r = addKernel(sk, ValueRange{sk.getSelf(), sk.getIndex(), sk.getSrc()},
                    cast<ShapedType>(sk.getSelf().getType()).getNumElements());
    else if (auto e = dyn_cast<tg::ExternOp>(op))
      r = addExtern(e);
    else if (auto ret = dyn_cast<func::ReturnOp>(op))
      for (Value v : ret.getOperands())
        plan.outputs.push_back(valueId(v));
    else {
      error = "no lowering for '" + op.getName().getStringRef().str() +
              "' after fusion";
      r = failure();
    }
    if (failed(r))
      return failure();
  }
  backend.finish(plan);
  return success();
}

namespace {

/// A context with tgc's dialects and one imported, verified segment;
/// diagnostics are collected for the error message instead of printed.
class ImportedSegment {
public:
  ImportedSegment() : ctx(registry(), MLIRContext::Threading::DISABLED) {
    ctx.loadAllAvailableDialects();
    handler.emplace(&ctx, [this](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
  }

  LogicalResult import(const Segment &segment, std::string &error) {
    module = ModuleOp::create(UnknownLoc::get(&ctx));
    auto imported = importSegment(segment, *module, error);
    if (failed(imported))
      return failure();
    fn = *imported;
    if (failed(mlir::verify(*module))) {
      error = "imported tg does not verify: " + diagnostics;
      return failure();
    }
    return success();
  }

  MLIRContext ctx;
  std::string diagnostics;
  std::optional<ScopedDiagnosticHandler> handler;
  OwningOpRef<ModuleOp> module;
  func::FuncOp fn;

private:
  static DialectRegistry registry() {
    DialectRegistry r;
    r.insert<tg::TGDialect, tgk::TGKDialect, func::FuncDialect, arith::ArithDialect,
             math::MathDialect>();
    return r;
  }
};

} // namespace

bool importToText(const Segment &segment, std::string &ir, std::string &error) {
  ImportedSegment imported;
  if (failed(imported.import(segment, error)))
    return false;
  ir = printOp(*imported.module);
  return true;
}

PipelineResult runPipeline(const Segment &segment) {
  PipelineResult result;
  ImportedSegment imported;
  if (failed(imported.import(segment, result.error)))
    return result;
  result.importedIR = printOp(*imported.module);

  const codegen::CodegenBackend *backend = codegen::codegenBackendFor(segment.device);
  if (!backend) {
    result.error = "no backend compiles for device '" + segment.device + "'";
    return result;
  }
  PassManager pm(&imported.ctx);
  backend->buildPipeline(pm);
  const bool injected = faultInjected(FaultStage::Pipeline);
  if (injected) // reported as a failing pass reports its error
    emitError(imported.module->getLoc()) << injectedFaultMessage(FaultStage::Pipeline);
  if (injected || failed(pm.run(*imported.module))) {
    result.error = "pass pipeline failed: " + imported.diagnostics;
    return result;
  }
  result.finalIR = printOp(*imported.module);
  result.plan.device = segment.device;
  PlanBuilder builder(result.plan, *backend, result.error);
  if (failed(builder.build(imported.fn)))
    return result;
  result.ok = true;
  return result;
}

} // namespace tgc
