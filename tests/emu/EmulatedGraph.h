//===- EmulatedGraph.h - capture on the CPU, compile for CUDA, emulate ----===//
//
// The CUDA backend checked without a GPU: a program is captured on CPU
// tensors, its segment recompiled for device "cuda", and the Plan run by
// tgc's own executor with CPU buffers, its kernels (the exact generated
// CUDA sources) in the emulator and its extern steps through CPU ATen.
#ifndef TGC_TESTS_EMU_EMULATEDGRAPH_H
#define TGC_TESTS_EMU_EMULATEDGRAPH_H

#include "compiler/capture/Segment.h"
#include "runtime/Backend.h"
#include "runtime/Nvrtc.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace tgc::emu {

using Program = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor> &)>;

struct EmulatedRun {
  std::vector<at::Tensor> outputs;
  std::vector<Plan> plans;                ///< the CUDA plan of each segment that ran
  std::vector<Segment> segments;          ///< each segment, as captured
  std::vector<std::vector<at::Tensor>> segmentInputs; ///< what each segment ran on
};

/// The CUDA backend of the tests: CUDA plans run on CPU tensors, their
/// kernels in the emulator (each compiled on first launch) with every
/// launch's grid capped at `maxGrid`, extern steps through CPU ATen.
class EmulatedCudaBackend final : public DeviceBackend {
public:
  explicit EmulatedCudaBackend(unsigned maxGrid = 1u << 20);
  const char *name() const override { return "cuda"; }
  /// The buffers live in host memory.
  c10::DeviceType deviceType() const override { return c10::DeviceType::CPU; }
  std::vector<std::string> jitArchs(std::string &) const override { return {"emulated"}; }
  bool build(const Plan &plan, const std::vector<std::string> &archs, KernelImages &out,
             std::string &error, bool useCache = true) const override;
  std::shared_ptr<CompiledGraph> load(Plan plan, const KernelImages &images,
                                      std::string &error) const override;

private:
  unsigned maxGrid_;
};

/// A CUDA plan loaded through EmulatedCudaBackend. Throws when it does not
/// load.
std::shared_ptr<CompiledGraph> loadEmulatedPlan(const Plan &plan, unsigned maxGrid = 1u << 20);

/// Captures `fn` on `inputs`, compiles each segment (one per graph break)
/// for CUDA and runs it emulated. `maxGrid` caps every launch's grid, so
/// grid-stride loops take several trips. Throws on a pipeline error;
/// kernel errors (a bad index) raise as from the JIT.
EmulatedRun runEmulated(const Program &fn, const std::vector<at::Tensor> &inputs,
                        unsigned maxGrid = 1u << 20);

/// runEmulated with autograd: a segment whose inputs (lifted parameters
/// included) require grad, in grad mode, becomes a training graph as in the
/// JIT (joint graph from autograd on the "cuda" segment, min-cut
/// partition); both halves compile for CUDA and run emulated, joined by
/// tgc's autograd Function, so `backward()` on the outputs runs the
/// emulated backward. `plans` lists every forward and backward plan.
EmulatedRun runEmulatedTraining(const Program &fn, const std::vector<at::Tensor> &inputs,
                                unsigned maxGrid = 1u << 20);

/// With TGC_GPU_CORPUS_DIR set, writes a single-segment run as
/// `<dir>/<name>.tgccase` (tests/gpu/GpuCase.h: plan, sm_90 cubins, eager
/// plan, inputs, `expected`, `tol`) for tgc_gpu_corpus_tests to run on a
/// GPU; a no-op otherwise and for runs with graph breaks.
void recordGpuCase(const std::string &name, const EmulatedRun &run,
                   const std::vector<at::Tensor> &expected, double tol);

/// What a GPU would refuse or run badly, from ptxas's report and the PTX of
/// kernel step `k` built for `arch`: any register spill, registers x block
/// beyond the SM's register file, static shared memory beyond 48 KiB, a
/// `.maxntid` other than the launch block, a parameter count other than
/// inputs + outputs (+ the error record). "" when none.
std::string checkKernelResources(const KernelStep &k, const NvrtcResult &r, const std::string &arch);

/// NVRTC-compiles every CUDA source of `plans` for `arch` (in parallel, via
/// the kernel cache) and checks each kernel's resources
/// (checkKernelResources); "" when all pass, else the first failure.
std::string compileAllWithNvrtc(const std::vector<Plan> &plans, const std::string &arch);

} // namespace tgc::emu

#endif // TGC_TESTS_EMU_EMULATEDGRAPH_H
