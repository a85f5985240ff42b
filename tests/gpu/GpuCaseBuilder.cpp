//===- GpuCaseBuilder.cpp - GpuCases from programs (development machine) --===//
#include "tests/gpu/GpuCaseBuilder.h"

#include "compiler/capture/Tracer.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/training/JointGraph.h"
#include "compiler/training/Partition.h"

#include <ATen/core/grad_mode.h>

#include <stdexcept>

namespace tgc::gpu {

namespace {

/// Captures `fn` on `inputs` as one segment; its inputs then lifted tensors.
Segment captureOne(const Program &fn, const std::vector<at::Tensor> &inputs,
                   std::vector<at::Tensor> &planInputs) {
  TraceContext ctx("cpu");
  {
    TraceGuard guard(ctx);
    ctx.finish(fn(ctx.makeInputs(inputs)));
  }
  planInputs = inputs;
  for (const at::Tensor &t : ctx.lifted())
    planInputs.push_back(t);
  return ctx.segment();
}

Plan cudaPlanOf(const std::string &name, const Segment &seg) {
  PipelineResult r = runPipeline(seg.on("cuda"));
  if (!r.ok)
    throw std::runtime_error(name + ": the pipeline for cuda failed: " + r.error);
  return std::move(r.plan);
}

} // namespace

GpuCase caseFromSegment(const std::string &name, const Segment &seg, Plan cudaPlan) {
  GpuCase c;
  c.name = name;
  c.plan = std::move(cudaPlan);
  c.eager = seg.on("cuda").toExternPlan(); // factories were made on the CPU at capture
  std::string error = buildImages(c, "sm_90");
  if (!error.empty())
    throw std::runtime_error(name + ": " + error);
  return c;
}

GpuCase caseFromProgram(const std::string &name, const Program &fn,
                        const std::vector<at::Tensor> &inputs,
                        std::vector<at::Tensor> &planInputs) {
  Segment seg = captureOne(fn, inputs, planInputs);
  return caseFromSegment(name, seg, cudaPlanOf(name, seg));
}

GpuTrainingCase trainingCaseFromProgram(const std::string &name, const Program &fn,
                                        const std::vector<at::Tensor> &inputs,
                                        std::vector<at::Tensor> &planInputs) {
  at::AutoGradMode grad(true);
  Segment seg = captureOne(fn, inputs, planInputs);
  GpuTrainingCase c;
  c.name = name;
  for (const at::Tensor &t : planInputs)
    c.requiresGrad.push_back(t.requires_grad());
  Segment cuda = seg.on("cuda");
  JointGraph joint;
  std::string error;
  if (!buildJointGraph(cuda, c.requiresGrad, joint, error))
    throw std::runtime_error(name + ": no joint graph: " + error);
  TrainingPartition p = partitionJoint(joint);
  c.forward = caseFromSegment(name + ".forward", p.forward, cudaPlanOf(name, p.forward));
  c.backward = caseFromSegment(name + ".backward", p.backward, cudaPlanOf(name, p.backward));
  c.layout = p.layout;
  c.eager = seg.on("cuda").toExternPlan(); // factories were made on the CPU at capture
  return c;
}

} // namespace tgc::gpu
