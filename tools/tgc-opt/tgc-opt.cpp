//===- tgc-opt.cpp - mlir-opt with the tg/tgk dialects and tgc's passes ---===//
//
// `--import-segment` reads a captured Segment in its text form
// (compiler/capture/SegmentText.h, what TGC_DEBUG_DIR dumps) instead of
// MLIR, imports it to `tg` and runs the requested passes on that.
//
//===----------------------------------------------------------------------===//
#include "codegen/Backend.h"
#include "compiler/capture/SegmentText.h"
#include "compiler/pipeline/Pipeline.h"
#include "dialects/TG/IR/TGOps.h"
#include "dialects/TGK/IR/TGKDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

static llvm::cl::opt<bool> importSegmentInput(
    "import-segment",
    llvm::cl::desc("Read the input as a tgc segment in its text form (as TGC_DEBUG_DIR "
                   "dumps it) and import it to tg before running the passes"),
    llvm::cl::init(false));

/// The input's segment imported to `tg`, as MLIR text; null, with the
/// reason on stderr, when it cannot be read, parsed or imported.
static std::unique_ptr<llvm::MemoryBuffer> importedSegment(llvm::StringRef inputFilename) {
  std::string error, ir;
  std::unique_ptr<llvm::MemoryBuffer> file = mlir::openInputFile(inputFilename, &error);
  tgc::Segment segment;
  if (!file) {
    llvm::errs() << error << "\n";
  } else if (!tgc::parseSegment(std::string_view(file->getBuffer()), segment, error)) {
    // "line:column: message" as MLIR reports its own parse errors.
    size_t message = error.find(": ");
    llvm::errs() << inputFilename << ":" << error.substr(0, message) << ": error: "
                 << error.substr(message + 2) << "\n";
  } else if (!tgc::importToText(segment, ir, error)) {
    llvm::errs() << inputFilename << ": error: cannot import the segment: " << error << "\n";
  } else {
    return llvm::MemoryBuffer::getMemBufferCopy(ir, inputFilename);
  }
  return nullptr;
}

static mlir::LogicalResult importAndRun(llvm::StringRef inputFilename,
                                        llvm::StringRef outputFilename,
                                        mlir::DialectRegistry &registry) {
  std::unique_ptr<llvm::MemoryBuffer> buffer = importedSegment(inputFilename);
  if (!buffer)
    return mlir::failure();
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return mlir::failure();
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(buffer), registry,
                                     mlir::MlirOptMainConfig::createFromCLOptions())))
    return mlir::failure();
  output->keep();
  return mlir::success();
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<tgc::tg::TGDialect, tgc::tgk::TGKDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect>();
  tgc::registerTGCPasses();
  tgc::codegen::registerTgcPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  auto [inputFilename, outputFilename] =
      mlir::registerAndParseCLIOptions(argc, argv, "tgc optimizer driver\n", registry);
  if (importSegmentInput)
    return mlir::asMainReturnCode(importAndRun(inputFilename, outputFilename, registry));
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
