//===- EmulatedPlan.cpp - a CUDA Plan's kernel steps run by the emulator --===//
#include "tests/emu/EmulatedPlan.h"

#include <algorithm>

namespace tgc::emu {

LaunchConfig gridStrideLaunch(const KernelStep &k, unsigned maxBlocks) {
  int64_t block = std::max<int64_t>(k.block, 1);
  int64_t blocks = std::min<int64_t>(k.grid, maxBlocks);
  return LaunchConfig{{(unsigned)std::max<int64_t>(blocks, 1)}, {(unsigned)block}};
}

void runPlanSteps(const Plan &plan, const std::vector<void *> &buffers, const LaunchShape &shape,
                  const std::function<void(const ExternStep &)> &onExtern) {
  if (plan.cudaSources.size() != plan.kernels.size())
    throw EmuError("the plan has " + std::to_string(plan.kernels.size()) + " kernels but " +
                   std::to_string(plan.cudaSources.size()) +
                   " CUDA sources: was it built for device \"cuda\"?");
  auto buffer = [&](int v) {
    if (v < 0 || (size_t)v >= buffers.size() || !buffers[v])
      throw EmuError("the plan uses value " + std::to_string(v) + ", which has no buffer");
    return buffers[v];
  };
  for (const Step &s : plan.steps) {
    if (s.kind == Step::Extern) {
      if (!onExtern)
        throw EmuError("the plan calls " + plan.externs[s.index].op +
                       " (an extern step) and no handler was given");
      onExtern(plan.externs[s.index]);
      continue;
    }
    const KernelStep &k = plan.kernels[s.index];
    std::shared_ptr<Module> m = Module::compile(plan.cudaSources[s.index]);
    std::vector<void *> pointers, args;
    for (int v : k.inputs)
      pointers.push_back(buffer(v));
    for (int v : k.outputs)
      pointers.push_back(buffer(v));
    for (void *&p : pointers)
      args.push_back(&p);
    m->launch(k.name, shape(k), args.data());
  }
}

} // namespace tgc::emu
