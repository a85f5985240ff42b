//===- EmulatedPlan.cpp - a CUDA Plan's kernel steps run by the emulator --===//
#include "tests/emu/EmulatedPlan.h"
#include "runtime/MemoryPlan.h" // spanBytes (tgc_runtime, which every user of this file links)

#include <algorithm>
#include <cstdlib>
#include <string>

namespace tgc::emu {

LaunchConfig gridStrideLaunch(const KernelStep &k, unsigned maxBlocks) {
  int64_t block = std::max<int64_t>(k.block, 1);
  int64_t blocks = std::min<int64_t>(k.grid, maxBlocks);
  return LaunchConfig{{(unsigned)std::max<int64_t>(blocks, 1)}, {(unsigned)block}};
}

void launchStep(const Module &m, const std::vector<TensorSpec> &values, const KernelStep &k,
                const LaunchConfig &config, void **args) {
  const size_t buffers = k.inputs.size() + k.outputs.size();
  const size_t count = buffers + (k.checks.empty() ? 0 : 1);
  const char *guard = std::getenv("TGC_EMU_GUARD");
  if (guard && std::string(guard) == "0") {
    m.launch(k.name, config, args, count);
    return;
  }
  std::vector<void *> pointers, guardedArgs(args, args + count);
  std::vector<size_t> bytes;
  for (size_t i = 0; i < buffers; ++i) {
    int v = i < k.inputs.size() ? k.inputs[i] : k.outputs[i - k.inputs.size()];
    if (v < 0 || (size_t)v >= values.size())
      throw EmuError(k.name + " uses value " + std::to_string(v) + ", which the plan lacks");
    pointers.push_back(*static_cast<void **>(args[i]));
    bytes.push_back((size_t)spanBytes(values[v]));
  }
  GuardedBuffers guarded(pointers, bytes);
  std::vector<void *> moved(buffers);
  for (size_t i = 0; i < buffers; ++i) {
    moved[i] = guarded.at(i);
    guardedArgs[i] = &moved[i];
  }
  m.launch(k.name, config, guardedArgs.data(), count);
  for (size_t i = k.inputs.size(); i < buffers; ++i)
    guarded.copyBack(i);
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
    launchStep(*m, plan.values, k, shape(k), args.data());
  }
}

} // namespace tgc::emu
