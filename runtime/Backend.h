//===- Backend.h - a device's artifacts: build, load, guard, retarget -----===//
//
// The runtime half of a backend (LibTorch, no MLIR): what turns a Plan's
// kernel sources into native artifacts (the host compiler's shared object
// for the CPU; NVRTC's cubins and PTX for CUDA), through the kernel layer of
// the artifact cache, and loads a Plan with its artifacts into a runnable
// CompiledGraph. The JIT (CompiledGraph::load), tgc-aot (build for named
// architectures, then the same load), packages (load from sections) and the
// tests' CUDA emulator (its own DeviceBackend) all go through this interface.
//
// The compiler half (the device's extra passes, prelude and emitters) is
// codegen/Backend.h, on the MLIR side: the two halves meet in the Plan.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_BACKEND_H
#define TGC_RUNTIME_BACKEND_H

#include "runtime/Executor.h"

#include <c10/core/DeviceType.h>

#include <memory>
#include <string>
#include <vector>

namespace tgc {

/// The native artifacts of one Plan's kernels.
struct KernelImages {
  /// CPU: the shared object holding every kernel, and its kernel-layer key.
  std::string object;
  std::string objectKey;
  /// CUDA: `cubins[a][k]` is kernel k built for `archs[a]` (empty when
  /// NVRTC gave only PTX, as for a "compute_XY" target); `ptx[k]` is kernel
  /// k's PTX for `archs[0]`, the fallback of a device no cubin fits.
  std::vector<std::string> archs;
  std::vector<std::vector<std::string>> cubins;
  std::vector<std::string> ptx;
  int64_t compiled = 0; ///< kernels built by this call (not from the cache)
  int64_t cached = 0;   ///< kernels taken from the kernel layer of the cache
};

class DeviceBackend {
public:
  virtual ~DeviceBackend() = default;
  /// "cpu", "cuda": the value of Plan::device (without an index) and of a
  /// package's "backend" field.
  virtual const char *name() const = 0;
  virtual c10::DeviceType deviceType() const = 0;
  /// The architectures a JIT compile in this process builds for: "host"
  /// on the CPU; the current device's (NVRTC's target for it) on CUDA.
  /// Empty with `error` set when this process cannot run the backend.
  virtual std::vector<std::string> jitArchs(std::string &error) const = 0;
  /// Builds every kernel of `plan` for each of `archs`, from the kernel
  /// layer of the current cache when it holds them (unless `useCache` is
  /// false), else compiling and storing them there. False with `error`.
  virtual bool build(const Plan &plan, const std::vector<std::string> &archs, KernelImages &out,
                     std::string &error, bool useCache = true) const = 0;
  /// `plan` with the kernels of `images`, ready to run. CUDA modules are
  /// loaded into a device at the first launch there (no GPU needed here).
  virtual std::shared_ptr<CompiledGraph> load(Plan plan, const KernelImages &images,
                                              std::string &error) const = 0;

  /// build() for jitArchs() then load(); a cached artifact that does not
  /// load is rebuilt once without the cache. `compiled` counts the kernels
  /// built (0 when every one came from the disk cache).
  std::shared_ptr<CompiledGraph> compile(Plan plan, int64_t &compiled, std::string &error) const;

  /// The guard of a compiled graph's input: see fitsSpec.
  bool fits(const at::Tensor &t, const TensorSpec &spec) const {
    return fitsSpec(t, spec, deviceType());
  }
};

/// The backend of device `device` ("cpu", "cuda", "cuda:1"), or null.
const DeviceBackend *backendFor(const std::string &device);
const DeviceBackend &cpuBackend();
const DeviceBackend &cudaBackend();

} // namespace tgc

#endif // TGC_RUNTIME_BACKEND_H
