//===- EmulatedGraph.cpp - capture on the CPU, compile for CUDA, emulate --===//
#include "tests/emu/EmulatedGraph.h"

#include "compiler/capture/Tracer.h"
#include "compiler/pipeline/Pipeline.h"
#include "runtime/Executor.h"
#include "runtime/Nvrtc.h"
#include "tests/emu/CudaEmulator.h"
#include "tests/gpu/GpuCaseBuilder.h"

#include <cctype>
#include <cstdlib>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace tgc::emu {

namespace {

/// Compiles `seg` for CUDA and runs its plan on CPU tensors, kernels in the
/// emulator; appends the plan to `plans`.
std::vector<at::Tensor> runSegment(Segment seg, const std::vector<at::Tensor> &inputs,
                                   unsigned maxGrid, EmulatedRun &run) {
  run.segments.push_back(seg);
  run.segmentInputs.push_back(inputs);
  seg.device = "cuda";
  PipelineResult r = runPipeline(seg);
  if (!r.ok)
    throw std::runtime_error("pipeline for cuda: " + r.error);
  auto modules = std::make_shared<std::map<size_t, std::shared_ptr<Module>>>();
  const std::vector<std::string> sources = r.plan.cudaSources;
  KernelLauncher launch = [modules, sources, maxGrid](size_t index, const KernelStep &k,
                                                      const at::Device &, void **args) {
    std::shared_ptr<Module> &m = (*modules)[index];
    if (!m)
      m = Module::compile(sources[index]);
    unsigned grid = (unsigned)std::max<int64_t>(1, std::min<int64_t>(k.grid, maxGrid));
    m->launch(k.name, LaunchConfig{{grid}, {(unsigned)k.block}}, args);
  };
  std::string error;
  auto graph = CompiledGraph::loadWithLauncher(r.plan, launch, error);
  if (!graph)
    throw std::runtime_error("loading the emulated plan: " + error);
  run.plans.push_back(std::move(r.plan));
  return graph->run(inputs);
}

} // namespace

EmulatedRun runEmulated(const Program &fn, const std::vector<at::Tensor> &inputs,
                        unsigned maxGrid) {
  EmulatedRun run;
  // At a graph break the pending segment runs emulated, as the JIT would
  // run it compiled, and capture resumes.
  TraceContext ctx("cpu", [&](const Segment &seg, const std::vector<at::Tensor> &in) {
    return runSegment(seg, in, maxGrid, run);
  });
  {
    TraceGuard guard(ctx);
    run.outputs = ctx.finish(fn(ctx.makeInputs(inputs)));
  }
  if (!ctx.hadBreaks()) {
    std::vector<at::Tensor> all = inputs;
    for (const at::Tensor &t : ctx.lifted())
      all.push_back(t);
    run.outputs = runSegment(ctx.segment(), all, maxGrid, run);
  }
  return run;
}

void recordGpuCase(const std::string &name, const EmulatedRun &run,
                   const std::vector<at::Tensor> &expected, double tol) {
  const char *dir = std::getenv("TGC_GPU_CORPUS_DIR");
  if (!dir || !*dir || run.plans.size() != 1)
    return;
  gpu::GpuCase c = gpu::caseFromSegment(name, run.segments[0], run.plans[0]);
  c.inputs = run.segmentInputs[0];
  for (const at::Tensor &t : expected)
    c.expected.push_back(t.contiguous());
  c.tol = tol;
  std::string file = name;
  for (char &ch : file)
    if (!std::isalnum((unsigned char)ch) && ch != '_' && ch != '-')
      ch = '_';
  gpu::writeGpuCase(c, std::string(dir) + "/" + file + ".tgccase");
}

std::string compileAllWithNvrtc(const std::vector<Plan> &plans, const std::string &arch) {
  std::vector<std::string> sources, names;
  for (const Plan &plan : plans)
    for (size_t i = 0; i < plan.kernels.size(); ++i) {
      sources.push_back(plan.cudaSources[i]);
      names.push_back(plan.kernels[i].name);
    }
  for (const NvrtcResult &r : compileCudaAll(sources, names, arch))
    if (!r.ok)
      return r.error;
  return "";
}

} // namespace tgc::emu
