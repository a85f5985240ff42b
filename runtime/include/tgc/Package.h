//===- Package.h - loading and running AOT packages (tgc_runtime only) ----===//
//
//   tgc::Package pkg = tgc::Package::load("model.tgcpkg");
//   std::vector<at::Tensor> outs = pkg.run({x});
//
// A package is what `tgc-aot compile` writes: the frozen TorchScript program
// (weights included) whose straight-line regions call compiled segments,
// one Plan per segment, the segments' kernels (a shared object for the CPU;
// a cubin per GPU arch plus PTX for CUDA), guards, metadata and a checksum
// for every part. Loading and running it needs tgc_runtime and LibTorch
// only: no MLIR, no tgc_compiler, no host compiler. See docs/aot.md.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_PACKAGE_H
#define TGC_PACKAGE_H

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tgc {

/// What went wrong loading or running a package.
class PackageError : public std::runtime_error {
public:
  enum class Kind {
    Io,       ///< the file cannot be read
    Format,   ///< not a tgc package, or a part does not parse
    Checksum, ///< corrupt or truncated: a checksum or a length does not match
    Version,  ///< written by another tgc, package format or LibTorch version
    Input,    ///< run() inputs miss the package's guards
    Device,   ///< the package targets a device this process cannot run
    Signature, ///< a trusted key was required: unsigned, signed by another key, or modified
  };
  PackageError(Kind kind, const std::string &message)
      : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

private:
  Kind kind_;
};

/// One model input: `x:f32[1,3,224,224]`, `ids:i64[2,32]@0:50257` (integer
/// inputs take random values in [low, high) when none are given).
struct InputSpec {
  std::string name;
  c10::ScalarType dtype = c10::kFloat;
  std::vector<int64_t> shape;
  int64_t low = 0, high = 10;
  /// The spec in the syntax parseInputSpec reads.
  std::string str() const;
};

/// Parses `NAME:DTYPE[D0,D1,...]` with an optional `@LOW:HIGH` range.
/// DTYPE is one of f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool. Throws
/// std::invalid_argument saying what is wrong and what is expected.
InputSpec parseInputSpec(const std::string &text);

/// Random inputs matching `specs` (seeded, so reproducible): standard normal
/// floats for variant 0, uniform in (0, 1) for 1 and in (-1, 0) for 2;
/// integers uniform in [low, high); booleans fair coins.
std::vector<at::Tensor> randomInputs(const std::vector<InputSpec> &specs, uint64_t seed,
                                     int variant = 0);

/// The tensors of a TorchScript result (a tensor, or tuples and lists of
/// them, flattened in order), as Package::run returns them.
std::vector<at::Tensor> flattenOutputs(const c10::IValue &out);

/// One stored part of a package.
struct PackageSection {
  std::string name;    ///< "meta.json", "module.pt", "plan.0", "cpu.0.so", ...
  uint64_t stored = 0; ///< bytes in the file
  uint64_t raw = 0;    ///< bytes once decompressed
  bool compressed = false;
};

/// What the last run() did: segments run compiled vs. run as TorchScript
/// (guard miss, a branch not seen at compile time, or an eager segment).
struct PackageRunStats {
  int64_t compiled_segments = 0;
  int64_t eager_segments = 0;
  std::vector<int64_t> compiled_ids; ///< ids of the segments run compiled, in order
};

/// How Package::load may trust a file. Loading a package runs its native
/// code (its kernels are a shared object), like loading a shared library:
/// load only packages you would run as programs, or require a signature.
struct LoadOptions {
  /// Ed25519 public keys (`tgc-aot keygen`: the text of a .pub file, or its
  /// 64 hex digits). When any is given, the package must be signed by one of
  /// them (`tgc-aot compile --sign KEY`) and unchanged since, or load throws
  /// PackageError(Signature) before any part of it is decompressed or loaded.
  std::vector<std::string> trusted_keys;
};

class Package {
public:
  /// Reads and verifies `path` (versions, then every checksum, then the
  /// signature when `options` requires one), loads the TorchScript program
  /// and, for CPU packages, the kernels. Throws PackageError.
  static Package load(const std::string &path, const LoadOptions &options = {});

  /// Runs the package on `inputs` (one per InputSpec, any strides). Throws
  /// PackageError(Input) naming the input, what was expected and what came,
  /// and PackageError(Device) for a package this process cannot run.
  std::vector<at::Tensor> run(const std::vector<at::Tensor> &inputs) const;

  const std::vector<InputSpec> &inputs() const;
  std::string backend() const;            ///< "cpu" or "cuda"
  std::vector<std::string> archs() const; ///< GPU archs of the cubins
  std::string metadataJson() const;       ///< meta.json, pretty-printed
  const std::vector<PackageSection> &sections() const;
  uint64_t fileBytes() const;
  PackageRunStats lastRunStats() const;

private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

} // namespace tgc

#endif // TGC_PACKAGE_H
