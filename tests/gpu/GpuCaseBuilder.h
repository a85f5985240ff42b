//===- GpuCaseBuilder.h - GpuCases from programs (development machine) ----===//
//
// Needs the compiler (MLIR): used where cases are made, never where they run.
#ifndef TGC_TESTS_GPU_GPUCASEBUILDER_H
#define TGC_TESTS_GPU_GPUCASEBUILDER_H

#include "compiler/capture/Segment.h"
#include "tests/gpu/GpuCase.h"

#include <functional>

namespace tgc::gpu {

using Program = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor> &)>;

/// A case from a captured segment and its CUDA plan: the eager plan is the
/// segment's ops on device cuda, the images sm_90 cubins (throws on an
/// NVRTC error). Inputs and references are left to the caller.
GpuCase caseFromSegment(const std::string &name, const Segment &seg, Plan cudaPlan);

/// Captures `fn` on CPU `inputs` as one segment (throws on a graph break),
/// compiles it for CUDA; `inputs` then the tensors capture lifted (weights)
/// are the plan's inputs, returned in `planInputs`.
GpuCase caseFromProgram(const std::string &name, const Program &fn,
                        const std::vector<at::Tensor> &inputs,
                        std::vector<at::Tensor> &planInputs);

/// Captures `fn` on CPU `inputs` as one segment with grad mode on (weights
/// that require grad are lifted as inputs that require grad), builds the
/// joint graph of the segment as a CUDA one, partitions it and compiles
/// both halves for CUDA (sm_90 cubins). `planInputs` as for caseFromProgram.
GpuTrainingCase trainingCaseFromProgram(const std::string &name, const Program &fn,
                                        const std::vector<at::Tensor> &inputs,
                                        std::vector<at::Tensor> &planInputs);

} // namespace tgc::gpu

#endif // TGC_TESTS_GPU_GPUCASEBUILDER_H
