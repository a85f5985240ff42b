//===- GpuCaseBuilder.cpp - GpuCases from programs (development machine) --===//
#include "tests/gpu/GpuCaseBuilder.h"

#include "compiler/capture/Tracer.h"
#include "compiler/pipeline/Pipeline.h"

#include <stdexcept>

namespace tgc::gpu {

GpuCase caseFromSegment(const std::string &name, const Segment &seg, Plan cudaPlan) {
  GpuCase c;
  c.name = name;
  c.plan = std::move(cudaPlan);
  c.eager = seg.toExternPlan();
  c.eager.device = "cuda";
  for (ExternStep &e : c.eager.externs) // factories were made on the CPU at capture
    for (ArgValue &a : e.args)
      if (a.kind == ArgValue::Device && a.s == "cpu")
        a.s = "cuda";
  std::string error = buildImages(c, "sm_90");
  if (!error.empty())
    throw std::runtime_error(name + ": " + error);
  return c;
}

GpuCase caseFromProgram(const std::string &name, const Program &fn,
                        const std::vector<at::Tensor> &inputs,
                        std::vector<at::Tensor> &planInputs) {
  TraceContext ctx("cpu");
  {
    TraceGuard guard(ctx);
    ctx.finish(fn(ctx.makeInputs(inputs)));
  }
  Segment seg = ctx.segment();
  planInputs = inputs;
  for (const at::Tensor &t : ctx.lifted())
    planInputs.push_back(t);
  Segment forCuda = seg;
  forCuda.device = "cuda";
  PipelineResult r = runPipeline(forCuda);
  if (!r.ok)
    throw std::runtime_error(name + ": the pipeline for cuda failed: " + r.error);
  return caseFromSegment(name, seg, std::move(r.plan));
}

} // namespace tgc::gpu
