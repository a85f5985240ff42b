//===- Freeze.h - weights as constants of an inference graph --------------===//
//
// Freezing (issue 17), like Inductor's `freezing`: in an inference graph,
// the lifted tensors that no op writes and that do not require grad
// (a module's weights in eval mode under NoGradGuard) are constants. Then
//  - every op whose tensor arguments are all constants runs once, here, at
//    compile time (weight transposes, reshapes, dtype casts): its results
//    are new constants and the op leaves the graph;
//  - an eval-mode batch norm after a convolution is folded into the
//    convolution's weight and bias;
//  - a 2-d convolution (with the activation or residual add after it)
//    becomes one oneDNN call, mkldnn::_convolution_pointwise, with its
//    weight reordered once into oneDNN's blocked layout
//    (mkldnn::_reorder_convolution_weight), or stays ATen's (small 1x1);
//  - a linear layer becomes a GEMM with a prepacked weight (MKL's for
//    large f32 layers, oneDNN's with the activation fused for bf16);
//  - under Mode::MaxAutotune those choices are measured instead
//    (FreezeOptions::autotune).
// The constants are graph inputs after the user's and the remaining lifted
// tensors; the Executable keeps them and the tensors they were computed
// from, whose version counters guard them: an in-place update of a weight
// (an optimizer step, load_state_dict) makes the specialization stale, and
// the next call captures and freezes again.
//
// LibTorch side only (no MLIR): the result is a Segment for the pipeline.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_FREEZE_FREEZE_H
#define TGC_COMPILER_FREEZE_FREEZE_H

#include "compiler/capture/Segment.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace tgc {

struct Frozen {
  /// Inputs: the user's, then `kept` (lifted tensors still read per call),
  /// then `constants`.
  Segment segment;
  std::vector<at::Tensor> kept;
  std::vector<at::Tensor> constants;
  /// The lifted tensors the constants were computed from (Executable
  /// guards them: Executable::guardFrozen).
  std::vector<at::Tensor> sources;
  int foldedOps = 0;        ///< ops run at compile time
  int foldedBatchNorms = 0; ///< batch norms folded into a convolution
  int fusedConvolutions = 0; ///< convolutions made oneDNN calls
  int atenConvolutions = 0;  ///< small 1x1 convolutions left to ATen (faster than oneDNN's call)
  int fusedActivations = 0;  ///< activations fused into them
  int fusedResiduals = 0;    ///< residual adds fused into them
  int packedLinears = 0;     ///< linear layers made packed MKL/oneDNN GEMMs
};

class ArtifactCache;

struct FreezeOptions {
  /// Mode::MaxAutotune: each convolution's and linear layer's
  /// implementation (ATen's call, oneDNN's fused one, MKL's packed GEMM)
  /// is the fastest measured (compiler/autotune/Autotune.h) instead of the
  /// default mode's heuristic choice.
  bool autotune = false;
  /// Where autotune results persist (nullptr: ArtifactCache::current()).
  ArtifactCache *cache = nullptr;
};

/// Freezes `seg` (inputs: `userInputs` of the user's, then `lifted`; its
/// last `guards` outputs are guards, which may fold to constants).
/// False, with `why`, when nothing can be frozen (no constant, or a
/// constant is written by the graph): then the segment stays as it is.
bool freezeSegment(const Segment &seg, size_t userInputs, const std::vector<at::Tensor> &lifted,
                   size_t guards, Frozen &out, std::string &why,
                   const FreezeOptions &options = {});

} // namespace tgc

#endif // TGC_COMPILER_FREEZE_FREEZE_H
