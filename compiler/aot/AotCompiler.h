//===- AotCompiler.h - TorchScript module to an AOT package ---------------===//
//
// The compile side of tgc-aot: loads and freezes a TorchScript module, cuts
// its forward graph into regions (Regions.h), captures each region with the
// JIT's tracer on sample inputs, compiles the captured segments with the one
// pipeline (compiler/pipeline) and writes a package (runtime/PackageFormat.h)
// that tgc::Package loads with tgc_runtime only.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_AOT_AOTCOMPILER_H
#define TGC_COMPILER_AOT_AOTCOMPILER_H

#include "tgc/Package.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tgc {

struct AotOptions {
  std::string model;  ///< path of a torch.jit.save'd module
  std::string output; ///< the package to write
  std::vector<InputSpec> inputs;
  std::string backend = "cpu";    ///< "cpu" or "cuda"
  std::vector<std::string> archs; ///< CUDA: "sm_90", ...
  std::string mode = "default";   ///< "default" or "max-autotune"
  bool fullgraph = false; ///< anything left to TorchScript is an error
  bool compress = false;  ///< zstd-compress the weights and kernels
  int samples = 3;        ///< sample runs (randn, rand, -rand) to reach branches
  std::string cacheDir;   ///< the JIT's artifact cache to use; empty: the environment's
  /// The text of a secret key file (tgc-aot keygen) to sign the package
  /// with; empty: unsigned.
  std::string signingKey;
};

/// A compile failure; `kind` picks tgc-aot's exit code (docs/aot.md).
class AotError : public std::runtime_error {
public:
  enum class Kind { Usage, Model, Compile, Io };
  AotError(Kind kind, const std::string &message)
      : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

private:
  Kind kind_;
};

/// What was written.
struct AotSummary {
  int segmentsCompiled = 0;
  int segmentsEager = 0; ///< regions left to TorchScript (not reached or failed)
  int kernels = 0;
  int64_t kernelsCompiled = 0; ///< kernels built now (per arch on CUDA)
  int64_t kernelsCached = 0;   ///< kernels taken from the cache (JIT or earlier AOT)
  int graphsFromCache = 0;     ///< segments whose Plan came from the graph cache
  std::vector<std::string> eagerOps; ///< "aten::nonzero: its output shape ..."
  uint64_t bytes = 0;
  double seconds = 0;
};

/// Progress of a long compile: `stage` ("capture", "compile", "write"),
/// `done` of `total` steps.
using AotProgress = std::function<void(const std::string &stage, int done, int total)>;

/// Compiles `options.model` into `options.output`. Throws AotError.
AotSummary compilePackage(const AotOptions &options, const AotProgress &progress = nullptr);

} // namespace tgc

#endif // TGC_COMPILER_AOT_AOTCOMPILER_H
