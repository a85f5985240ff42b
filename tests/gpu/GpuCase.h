//===- GpuCase.h - a compiled CUDA program as a file, for GPU machines ----===//
//
// GPU machines may lack MLIR (the H200 check machine does), so the JIT
// cannot run there. A GpuCase is what a development machine compiled for
// them: tgc's CUDA plan with cubins, the same segment as ATen calls (eager,
// op by op), the inputs and the expected outputs. tgc_runtime and LibTorch
// run it; nothing else is needed.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TESTS_GPU_GPUCASE_H
#define TGC_TESTS_GPU_GPUCASE_H

#include "runtime/Executor.h"
#include "runtime/TrainingGraph.h"

#include <string>
#include <vector>

namespace tgc::gpu {

struct GpuCase {
  std::string name;
  Plan plan;                        ///< tgc's CUDA plan
  Plan eager;                       ///< the segment's ops as ATen calls, device cuda
  std::string arch;                 ///< what `images` were built for ("sm_90")
  std::vector<std::string> images;  ///< cubin per kernel of `plan`
  std::vector<at::Tensor> inputs;   ///< CPU tensors, one per plan input
  std::vector<at::Tensor> expected; ///< CPU reference outputs (may be empty)
  double tol = 0;                   ///< rtol = atol for `expected`; 0: exact
};

/// Writes `c` to `path` (atomically); throws std::runtime_error on failure.
void writeGpuCase(const GpuCase &c, const std::string &path);
/// Reads a file written by writeGpuCase; throws std::runtime_error.
GpuCase readGpuCase(const std::string &path);

/// Compiles the plan's kernels for `arch` with NVRTC and fills `images`;
/// "" on success, else NVRTC's error.
std::string buildImages(GpuCase &c, const std::string &arch);

/// Loads `c.plan` for the current CUDA device: the stored cubins when the
/// device is `c.arch`, else NVRTC on this machine. Null with `error`.
std::shared_ptr<CompiledGraph> loadOnDevice(const GpuCase &c, std::string &error);

/// A training step compiled for a GPU: tgc's forward and backward plans (as
/// cases with cubins; their `eager` plans are unused), how they connect,
/// and the user's segment as ATen calls, which eager runs under autograd.
/// Plan inputs: the segment's inputs, then the weights capture lifted.
struct GpuTrainingCase {
  std::string name;
  GpuCase forward, backward;
  TrainingLayout layout;
  Plan eager;                     ///< the user's segment, op by op, device cuda
  std::vector<bool> requiresGrad; ///< per input of `eager`
};

/// Writes `c` to `path` (atomically); throws std::runtime_error on failure.
void writeGpuTrainingCase(const GpuTrainingCase &c, const std::string &path);
/// Reads a file written by writeGpuTrainingCase; throws std::runtime_error.
GpuTrainingCase readGpuTrainingCase(const std::string &path);

/// Both halves of `c` loaded for the current CUDA device (as loadOnDevice),
/// joined as tgc's training graph (run it with applyTraining). Null with
/// `error`.
std::shared_ptr<TrainingGraph> loadTrainingOnDevice(const GpuTrainingCase &c, std::string &error);

/// Why this process cannot run CUDA plans ("" when it can).
std::string whyNoGpu();

} // namespace tgc::gpu

#endif // TGC_TESTS_GPU_GPUCASE_H
