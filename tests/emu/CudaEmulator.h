//===- CudaEmulator.h - run CUDA C++ kernels on the CPU, for tests --------===//
//
// The emitted CUDA source, unchanged, is compiled by the host compiler with a
// small prelude (tests/emu/include/cuda_emu.h) into a shared object (cached on
// disk) and each launch runs one fiber per CUDA thread. See
// docs/cuda-emulation.md for what is emulated and what is not.
//
//   auto m = tgc::emu::Module::compile(source);          // throws EmuError
//   float *x = ..., *y = ...; int n = ...;
//   void *args[] = {&x, &y, &n};                          // as cuLaunchKernel
//   m->launch("k0", {{blocks}, {256}, /*dynamicSharedBytes=*/0}, args, 3);
//   tgc::emu::launch(m, "k0", {{blocks}, {256}}, x, y, n); // the same, typed
#ifndef TGC_TESTS_EMU_CUDAEMULATOR_H
#define TGC_TESTS_EMU_CUDAEMULATOR_H

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tgc::emu {

/// A compile error (with the saved source's path and the compiler's output), a
/// bad launch, a deadlock (divergent barrier), a trap or a device assert.
class EmuError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  Dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

struct LaunchConfig {
  Dim3 grid, block;
  size_t dynamicSharedBytes = 0;
  /// OS threads running blocks; 0: TGC_EMU_THREADS, else the hardware's
  /// (at most 8). Results do not depend on it unless the kernel's do on the
  /// order of atomics across blocks.
  unsigned workers = 0;
  /// Stack per CUDA thread; 0: TGC_EMU_STACK_KB, else 64 KiB.
  size_t stackBytes = 0;
  /// The order in which a block's ready threads run between barriers. A
  /// kernel without races between barriers gives the same result under
  /// every order; comparing two orders finds a missing __syncthreads.
  /// Straggler: shuffled, and random warps of each block held back until no
  /// other thread can run (the others race ahead through warp operations).
  enum class Schedule { Default, Forward, Reverse, Shuffled, Straggler };
  /// Default: TGC_EMU_SCHEDULE (forward, reverse, shuffled or straggler),
  /// else Forward.
  Schedule schedule = Schedule::Default;
};

class Module {
public:
  /// Compiles `cudaSource` (cached by content in <cache>/emu, the cache
  /// directory being TGC_CACHE_DIR, $XDG_CACHE_HOME/tgc or ~/.cache/tgc) and
  /// loads it. Every `__global__` function gets an entry point.
  static std::shared_ptr<Module> compile(const std::string &cudaSource);

  /// The `__global__` functions found in the source, in order.
  const std::vector<std::string> &kernels() const { return kernels_; }
  /// Whether the shared object came from the disk cache.
  bool fromCache() const { return fromCache_; }

  /// Runs `kernel` over the grid; `args` as cuLaunchKernel's kernelParams:
  /// one pointer per parameter, to a value of exactly the parameter's type.
  /// `argCount` must be the kernel's parameter count (EmuError otherwise: a
  /// kernel would read a missing argument from beyond the array).
  void launch(const std::string &kernel, const LaunchConfig &config, void **args,
              size_t argCount) const;

  /// The kernel's parameter count; `sizes` gets sizeof of each parameter.
  int parameterSizes(const std::string &kernel, const unsigned **sizes) const;

  ~Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

private:
  Module() = default;
  std::string unknownKernel(const std::string &kernel) const;
  void findStaticShared();
  void *handle_ = nullptr;
  std::vector<std::string> kernels_;
  std::vector<unsigned> maxThreads_; ///< per kernel, from __launch_bounds__
  bool fromCache_ = false;
  /// The module's static __shared__: offset and size of the zero-initialized
  /// part of its thread-local storage, poisoned at every block start.
  size_t staticSharedOffset_ = 0, staticSharedBytes_ = 0;
};

/// Launches with typed arguments: each is passed as its own type, so a
/// pointer argument must already be the parameter's pointer type (or void*
/// where the kernel takes void*), and scalars must match (int vs long long).
/// The count and sizes are checked against the kernel's parameters.
template <class... A>
void launch(const std::shared_ptr<Module> &m, const std::string &kernel, const LaunchConfig &config,
            A... args) {
  const unsigned *sizes = nullptr;
  int n = m->parameterSizes(kernel, &sizes);
  const unsigned given[] = {(unsigned)sizeof(A)..., 0u};
  if (n != (int)sizeof...(A))
    throw EmuError(kernel + " takes " + std::to_string(n) + " parameters; the launch passes " +
                   std::to_string(sizeof...(A)));
  for (int i = 0; i < n; ++i)
    if (sizes[i] != given[i])
      throw EmuError(kernel + "'s parameter " + std::to_string(i) + " has " +
                     std::to_string(sizes[i]) + " bytes; the launch passes " +
                     std::to_string(given[i]) + " (int where long long is meant?)");
  std::tuple<A...> values(args...);
  std::apply(
      [&](auto &...v) {
        void *ptrs[] = {static_cast<void *>(&v)..., nullptr};
        m->launch(kernel, config, ptrs, sizeof...(A));
      },
      values);
}

/// Device buffers for one launch, each copied into its own mapping that ends
/// at a PROT_NONE page, so a kernel that reads or writes past a buffer's end
/// faults there (the fault handler names the kernel, block and thread)
/// instead of silently touching a neighbour. A zero-byte buffer is the
/// guard page itself. Ends are 16-byte aligned (vector loads stay aligned),
/// so up to 15 bytes past an end that is not a multiple of 16 go unseen.
class GuardedBuffers {
public:
  /// `buffers[i]` with `bytes[i]`: copied in now; `copyBack(i)` copies
  /// buffer i out again (the outputs).
  GuardedBuffers(const std::vector<void *> &buffers, const std::vector<size_t> &bytes);
  ~GuardedBuffers();
  void *at(size_t i) const { return guarded_[i]; }
  void copyBack(size_t i) const;
  GuardedBuffers(const GuardedBuffers &) = delete;
  GuardedBuffers &operator=(const GuardedBuffers &) = delete;

private:
  std::vector<void *> original_, guarded_, maps_;
  std::vector<size_t> bytes_, mapBytes_;
};

/// The compile flags and the prelude's include directory, for messages and
/// for tests that check what the emulator compiles with.
std::string emulatorCompileCommand();
std::string emulatorIncludeDir();

/// Rewrites what the prelude cannot express as a macro: each block-scope
/// `extern __shared__ T name[];` becomes a pointer to the launch's dynamic
/// shared memory; appends an entry point per kernel. `kernels` gets their
/// names, `maxThreads` their __launch_bounds__ (1024 without). For tests.
std::string emulatedSource(const std::string &cudaSource, std::vector<std::string> &kernels,
                           std::vector<unsigned> *maxThreads = nullptr);

} // namespace tgc::emu

#endif // TGC_TESTS_EMU_CUDAEMULATOR_H
