//===- EmulatedPlan.h - a CUDA Plan's kernel steps run by the emulator ----===//
//
// For tests that take a Plan from the pipeline (device "cuda") and check its
// kernels on the CPU: buffers are host memory laid out as the Plan's specs.
#ifndef TGC_TESTS_EMU_EMULATEDPLAN_H
#define TGC_TESTS_EMU_EMULATEDPLAN_H

#include "runtime/Plan.h"
#include "tests/emu/CudaEmulator.h"

#include <functional>
#include <vector>

namespace tgc::emu {

/// The launch shape of one kernel step.
using LaunchShape = std::function<LaunchConfig(const KernelStep &)>;

/// The step's 1-D grid (codegen's launch config), at most `maxBlocks`, of
/// `block` threads. tgc's CUDA kernels are grid-stride loops: capping the
/// grid makes each thread take several trips through the loop.
LaunchConfig gridStrideLaunch(const KernelStep &k, unsigned maxBlocks = 65535);

/// Launches kernel step `k` of a plan whose values are `values`, with `args`
/// as cuLaunchKernel takes them (inputs, outputs, then the index-error record
/// when the step has checks): each input and output buffer (spanBytes of its
/// spec) is copied into a
/// GuardedBuffers mapping for the launch (a read or write past its end faults
/// and is reported), and the outputs are copied back. TGC_EMU_GUARD=0 launches
/// on the buffers themselves.
void launchStep(const Module &m, const std::vector<TensorSpec> &values, const KernelStep &k,
                const LaunchConfig &config, void **args);

/// Runs the steps of `plan` in order. `buffers[v]` is the host memory of value
/// v (every value the steps touch, allocated by the caller with its spec's
/// strides); kernel steps launch `plan.cudaSources[i]`'s kernel with the
/// step's inputs then outputs as arguments (through launchStep: guarded).
/// Extern steps go to `onExtern`;
/// without one they are an EmuError. Modules are compiled once per source.
void runPlanSteps(
    const Plan &plan, const std::vector<void *> &buffers,
    const LaunchShape &shape = [](const KernelStep &k) { return gridStrideLaunch(k); },
    const std::function<void(const ExternStep &)> &onExtern = {});

} // namespace tgc::emu

#endif // TGC_TESTS_EMU_EMULATEDPLAN_H
