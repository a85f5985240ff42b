//===- EmulatedGraph.cpp - capture on the CPU, compile for CUDA, emulate --===//
#include "tests/emu/EmulatedGraph.h"

#include "compiler/capture/Tracer.h"
#include "compiler/ops/OpRegistry.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/training/JointGraph.h"
#include "compiler/training/Partition.h"
#include "runtime/Executor.h"
#include "runtime/TrainingGraph.h"
#include "runtime/Nvrtc.h"
#include "tests/emu/CudaEmulator.h"
#include "tests/emu/EmulatedPlan.h"
#include "tests/gpu/GpuCaseBuilder.h"

#include <ATen/core/grad_mode.h>

#include <cctype>
#include <cstdlib>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace tgc::emu {

namespace {

/// Compiles `seg` for CUDA into a graph whose kernels run in the emulator;
/// appends its plan to `run.plans`.
std::shared_ptr<CompiledGraph> loadEmulated(const Segment &seg, unsigned maxGrid, EmulatedRun &run) {
  PipelineResult r = runPipeline(seg.device.rfind("cuda", 0) == 0 ? seg : seg.on("cuda"));
  if (!r.ok)
    throw std::runtime_error("pipeline for cuda: " + r.error);
  auto graph = loadEmulatedPlan(r.plan, maxGrid);
  run.plans.push_back(std::move(r.plan));
  return graph;
}

/// Runs `seg` compiled for CUDA, emulated, on CPU tensors.
std::vector<at::Tensor> runSegment(const Segment &seg, const std::vector<at::Tensor> &inputs,
                                   unsigned maxGrid, EmulatedRun &run) {
  run.segments.push_back(seg);
  run.segmentInputs.push_back(inputs);
  return loadEmulated(seg, maxGrid, run)->run(inputs);
}

/// Runs `seg` as a CUDA training graph, emulated, when autograd needs one.
std::vector<at::Tensor> runTrainingSegment(const Segment &seg,
                                           const std::vector<at::Tensor> &inputs,
                                           unsigned maxGrid, EmulatedRun &run) {
  std::vector<bool> grad;
  bool any = false;
  for (const at::Tensor &t : inputs) {
    grad.push_back(t.requires_grad());
    any = any || t.requires_grad();
  }
  if (!any || !at::GradMode::is_enabled())
    return runSegment(seg, inputs, maxGrid, run);
  Segment cuda = seg.on("cuda:0"); // the joint graph of a CUDA segment, as on a GPU
  JointGraph joint;
  std::string error;
  if (!buildJointGraph(cuda, grad, joint, error))
    throw std::runtime_error("joint graph: " + error);
  TrainingPartition p = partitionJoint(joint);
  if (p.forward.device != cuda.device || p.backward.device != cuda.device)
    throw std::runtime_error("the partition lost the segment's device");
  run.segments.push_back(seg);
  run.segmentInputs.push_back(inputs);
  auto g = std::make_shared<TrainingGraph>();
  g->forward = loadEmulated(p.forward, maxGrid, run);
  g->backward = loadEmulated(p.backward, maxGrid, run);
  g->layout = p.layout;
  return applyTraining(g, inputs);
}

using Runner = std::vector<at::Tensor> (*)(const Segment &, const std::vector<at::Tensor> &,
                                           unsigned, EmulatedRun &);

EmulatedRun capture(const Program &fn, const std::vector<at::Tensor> &inputs, unsigned maxGrid,
                    Runner runner) {
  EmulatedRun run;
  // At a graph break the pending segment runs emulated, as the JIT would
  // run it compiled, and capture resumes.
  TraceContext ctx("cpu", [&](const Segment &seg, const std::vector<at::Tensor> &in) {
    return runner(seg, in, maxGrid, run);
  });
  {
    TraceGuard guard(ctx);
    run.outputs = ctx.finish(fn(ctx.makeInputs(inputs)));
  }
  if (!ctx.hadBreaks()) {
    std::vector<at::Tensor> all = inputs;
    for (const at::Tensor &t : ctx.lifted())
      all.push_back(t);
    run.outputs = runner(ctx.segment(), all, maxGrid, run);
  }
  return run;
}

} // namespace

EmulatedCudaBackend::EmulatedCudaBackend(unsigned maxGrid) : maxGrid_(maxGrid) {}

bool EmulatedCudaBackend::build(const Plan &plan, const std::vector<std::string> &,
                                KernelImages &, std::string &error, bool) const {
  // Nothing to build ahead: the emulator compiles each kernel's source at
  // its first launch (tests/emu/CudaEmulator.h).
  if (!plan.isCuda() || plan.cudaSources.size() != plan.kernels.size()) {
    error = "the CUDA emulator takes a CUDA plan (one source per kernel); this one is for " +
            plan.device;
    return false;
  }
  return true;
}

namespace {

/// A CUDA plan's backward ops take statistics in float where CPU ATen wants
/// the data's half type (ops::statsArgsOf): the emulator's CPU calls get a
/// rounded copy, made by an ATen call inserted before each.
void adaptStatisticsForCpu(Plan &plan) {
  std::vector<Step> steps;
  for (const Step &st : plan.steps) {
    if (st.kind == Step::Extern) {
      const ExternStep &e = plan.externs[st.index];
      uint16_t stats = ops::statsArgsOf(e.op, e.overload);
      if (stats && e.args.size() > 1 && e.args[1].kind == ArgValue::Tensor) {
        DType data = plan.values[e.args[1].tensors[0]].dtype;
        for (size_t k = 0; k < plan.externs[st.index].args.size() && k < 16; ++k) {
          // A copy: the push_back below may move the externs.
          ArgValue a = plan.externs[st.index].args[k];
          if (!(stats >> k & 1) || a.kind != ArgValue::Tensor ||
              plan.values[a.tensors[0]].dtype == data)
            continue;
          TensorSpec spec = plan.values[a.tensors[0]];
          spec.dtype = data;
          int copy = (int)plan.values.size();
          plan.values.push_back(spec);
          ArgValue dtype, none, no;
          dtype.kind = ArgValue::Int;
          dtype.i = (int64_t)toScalarType(data);
          no.kind = ArgValue::Bool;
          no.b = false;
          plan.externs.push_back({"aten::_to_copy", "", {a, dtype, none, none, none, no, none},
                                  {copy}});
          steps.push_back({Step::Extern, (int)plan.externs.size() - 1});
          plan.externs[st.index].args[k].tensors = {copy};
        }
      }
    }
    steps.push_back(st);
  }
  plan.steps = std::move(steps);
}

} // namespace

std::shared_ptr<CompiledGraph> EmulatedCudaBackend::load(Plan plan, const KernelImages &,
                                                         std::string &error) const {
  // Extern steps run on CPU ATen here: factories (dropout's seed, say) that
  // name the plan's CUDA device make CPU tensors instead.
  for (ExternStep &e : plan.externs)
    retargetDeviceArgs(e.args, "cpu");
  adaptStatisticsForCpu(plan);
  auto modules = std::make_shared<std::map<size_t, std::shared_ptr<Module>>>();
  auto lock = std::make_shared<std::mutex>(); // a backward runs on autograd's thread
  const std::vector<std::string> sources = plan.cudaSources;
  const unsigned maxGrid = maxGrid_;
  auto values = std::make_shared<const std::vector<TensorSpec>>(plan.values);
  KernelLauncher launch = [modules, lock, sources, maxGrid, values](
                              size_t index, const KernelStep &k, const at::Device &, void **args) {
    std::shared_ptr<Module> m;
    {
      std::lock_guard<std::mutex> held(*lock);
      std::shared_ptr<Module> &slot = (*modules)[index];
      if (!slot)
        slot = Module::compile(sources[index]);
      m = slot;
    }
    unsigned grid = (unsigned)std::max<int64_t>(1, std::min<int64_t>(k.grid, maxGrid));
    launchStep(*m, *values, k, LaunchConfig{{grid}, {(unsigned)k.block}}, args);
  };
  return CompiledGraph::loadWithLauncher(std::move(plan), launch, error);
}

std::shared_ptr<CompiledGraph> loadEmulatedPlan(const Plan &cudaPlan, unsigned maxGrid) {
  std::string error;
  int64_t compiled = 0;
  auto graph = EmulatedCudaBackend(maxGrid).compile(cudaPlan, compiled, error);
  if (!graph)
    throw std::runtime_error("loading the emulated plan: " + error);
  return graph;
}

EmulatedRun runEmulated(const Program &fn, const std::vector<at::Tensor> &inputs,
                        unsigned maxGrid) {
  return capture(fn, inputs, maxGrid, runSegment);
}

EmulatedRun runEmulatedTraining(const Program &fn, const std::vector<at::Tensor> &inputs,
                                unsigned maxGrid) {
  return capture(fn, inputs, maxGrid, runTrainingSegment);
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

std::string checkKernelResources(const KernelStep &k, const NvrtcResult &r,
                                 const std::string &arch) {
  KernelResources res = kernelResources(r, k.name);
  std::string where = k.name + " (" + arch + "): ";
  if (!res.reported)
    return where + "no ptxas report in NVRTC's log";
  if (res.spillStoreBytes || res.spillLoadBytes)
    return where + "spills " + std::to_string(res.spillStoreBytes) + " bytes stored, " +
           std::to_string(res.spillLoadBytes) + " loaded";
  // sm_80 and sm_90: 64K 32-bit registers per SM, allocated per warp in
  // units of 256, at most 255 per thread; 48 KiB of static shared memory.
  int64_t perWarp = (int64_t(res.registers) * 32 + 255) / 256 * 256;
  int64_t warps = (k.block + 31) / 32;
  if (res.registers > 255 || perWarp * warps > 65536)
    return where + std::to_string(res.registers) + " registers x " + std::to_string(k.block) +
           " threads exceed the SM's register file";
  if (res.sharedBytes > 48 * 1024)
    return where + std::to_string(res.sharedBytes) + " bytes of static shared memory";
  if (res.maxThreads != k.block)
    return where + ".maxntid " + std::to_string(res.maxThreads) + " but the launch block is " +
           std::to_string(k.block);
  size_t expected = k.inputs.size() + k.outputs.size() + (k.checks.empty() ? 0 : 1);
  if (res.params != int(expected))
    return where + std::to_string(res.params) + " parameters for " + std::to_string(k.inputs.size()) +
           " inputs, " + std::to_string(k.outputs.size()) + " outputs" +
           (k.checks.empty() ? "" : " and the error record");
  return "";
}

std::string compileAllWithNvrtc(const std::vector<Plan> &plans, const std::string &arch) {
  std::vector<std::string> sources, names;
  std::vector<const KernelStep *> steps;
  for (const Plan &plan : plans)
    for (size_t i = 0; i < plan.kernels.size(); ++i) {
      sources.push_back(plan.cudaSources[i]);
      names.push_back(plan.kernels[i].name);
      steps.push_back(&plan.kernels[i]);
    }
  std::vector<NvrtcResult> results = compileCudaAll(sources, names, arch);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok)
      return results[i].error;
    if (std::string bad = checkKernelResources(*steps[i], results[i], arch); !bad.empty())
      return bad;
  }
  return "";
}

} // namespace tgc::emu
