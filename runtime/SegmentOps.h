//===- SegmentOps.h - the TorchScript ops that call compiled segments -----===//
//
// A packaged TorchScript program calls its compiled regions through two
// custom ops that tgc_runtime registers:
//
//   %ok : bool = tgc::segment_guard(%id, %inputs)
//   %a, %b = prim::If(%ok)
//     block0(): %l = tgc::run_segment(%id, %inputs); -> ListUnpack(%l)
//     block1(): <the region's original TorchScript nodes>
//
// Both ask the SegmentTable current on this thread: a loaded package at run
// time, the AOT compiler's capture at compile time. With no table (the
// program loaded by plain torch::jit::load) every guard fails and the
// original nodes run, so a package's module.pt is still valid TorchScript.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_SEGMENTOPS_H
#define TGC_RUNTIME_SEGMENTOPS_H

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace tgc {

/// Qualified names of the two ops, for the compiler's graph rewrite.
constexpr const char *kSegmentGuardOp = "tgc::segment_guard";
constexpr const char *kRunSegmentOp = "tgc::run_segment";

class SegmentTable {
public:
  virtual ~SegmentTable() = default;
  /// Whether segment `id` can run compiled on `inputs`.
  virtual bool guard(int64_t id, const std::vector<at::Tensor> &inputs) = 0;
  /// Runs segment `id` (only after its guard passed).
  virtual std::vector<at::Tensor> run(int64_t id, const std::vector<at::Tensor> &inputs) = 0;
};

/// Makes `table` current on this thread while alive.
class SegmentTableScope {
public:
  explicit SegmentTableScope(SegmentTable *table);
  ~SegmentTableScope();
  SegmentTableScope(const SegmentTableScope &) = delete;
  SegmentTableScope &operator=(const SegmentTableScope &) = delete;

private:
  SegmentTable *previous_;
};

} // namespace tgc

#endif // TGC_RUNTIME_SEGMENTOPS_H
