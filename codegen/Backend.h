//===- Backend.h - a device's compiler half: passes, prelude, emitters ----===//
//
// The MLIR-side half of a backend: the passes only its device runs, the text
// every artifact of it starts with, and its emitters, from a kernel's
// descriptor to source text in the Plan (one C++ translation unit for the
// CPU, one CUDA translation unit per kernel). The runtime half — building
// that text into native artifacts, loading, guards — is runtime/Backend.h.
// runPipeline (the JIT and tgc-aot) and `tgc-opt --tgc-pipeline=<name>` pick
// the backend by device name here and nowhere else.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_CODEGEN_BACKEND_H
#define TGC_CODEGEN_BACKEND_H

#include "codegen/Emitters.h"
#include "runtime/Plan.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace tgc::codegen {

class CodegenBackend {
public:
  virtual ~CodegenBackend() = default;
  /// "cpu", "cuda": the --tgc-pipeline option and the device's type.
  virtual llvm::StringRef name() const = 0;
  virtual Target target() const = 0;
  /// The device's own passes, inserted at the pipeline's target step
  /// (buildTgcPipeline in passes/Passes.h).
  virtual void addPasses(mlir::OpPassManager &fpm) const = 0;
  /// The text every source artifact of the device starts with.
  virtual std::string prelude() const = 0;
  /// The source of scheduled kernel `op` (tgk.kernel, tgk.row_kernel,
  /// tgk.scatter_add_kernel), printed from its descriptor; "" with `error`.
  virtual std::string emit(mlir::Operation *op, const DescribedKernel &d,
                           std::string &error) const = 0;
  /// Adds an emitted kernel's source to the plan's artifacts.
  virtual void addSource(Plan &plan, std::string source) const = 0;
  /// Completes the plan's sources once every kernel is in.
  virtual void finish(Plan &plan) const = 0;

  /// tgc's whole pipeline with this backend's passes, on `pm` (anchored on
  /// the module).
  void buildPipeline(mlir::OpPassManager &pm) const;
};

/// The backend of device `device` ("cpu", "cuda", "cuda:1"), or null.
const CodegenBackend *codegenBackendFor(llvm::StringRef device);

/// Registers `--tgc-pipeline=cpu|cuda` (tgc-opt).
void registerTgcPipelines();

} // namespace tgc::codegen

#endif // TGC_CODEGEN_BACKEND_H
