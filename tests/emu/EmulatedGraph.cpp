//===- EmulatedGraph.cpp - capture on the CPU, compile for CUDA, emulate --===//
#include "tests/emu/EmulatedGraph.h"

#include "compiler/capture/Tracer.h"
#include "compiler/pipeline/Pipeline.h"
#include "runtime/Executor.h"
#include "runtime/Nvrtc.h"
#include "tests/emu/CudaEmulator.h"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace tgc::emu {

EmulatedRun runEmulated(const Program &fn, const std::vector<at::Tensor> &inputs,
                        unsigned maxGrid) {
  TraceContext ctx("cpu");
  {
    TraceGuard guard(ctx);
    ctx.finish(fn(ctx.makeInputs(inputs)));
  }
  Segment seg = ctx.segment();
  seg.device = "cuda";
  std::vector<at::Tensor> all = inputs;
  for (const at::Tensor &t : ctx.lifted())
    all.push_back(t);
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
  return {graph->run(all), r.plan};
}

std::string compileAllWithNvrtc(const Plan &plan, const std::string &arch) {
  std::vector<std::string> names;
  for (const KernelStep &k : plan.kernels)
    names.push_back(k.name);
  for (const NvrtcResult &r : compileCudaAll(plan.cudaSources, names, arch))
    if (!r.ok)
      return r.error;
  return "";
}

} // namespace tgc::emu
