//===- Tracer.h - capture of ATen ops at the dispatcher -------------------===//
//
// Tracer tensors are storage-less TensorImpls on the PrivateUse2 backend key.
// A boxed fallback on that key records every ATen op that reaches it, runs
// the op's Meta kernel for output shapes, strides and dtypes, and returns new
// tracer tensors. It sits below Autograd and ADInplaceOrView, like
// torch::lazy and PyTorch/XLA, so composite ops arrive decomposed.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_CAPTURE_TRACER_H
#define TGC_COMPILER_CAPTURE_TRACER_H

#include "compiler/capture/Segment.h"

#include <ATen/core/Tensor.h>

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace tgc {

/// Thrown when capture cannot continue: the program needs a value on the
/// host, or an op cannot be traced. Carries the op and the reason.
class GraphBreak : public std::runtime_error {
public:
  GraphBreak(std::string op, std::string reason)
      : std::runtime_error(op + ": " + reason), op(std::move(op)),
        reason(std::move(reason)) {}
  std::string op, reason;
};

/// The recording state of one capture.
class TraceContext {
public:
  explicit TraceContext(std::string device) { segment_.device = std::move(device); }

  /// Tracer tensors standing for `inputs` (graph inputs, in order).
  std::vector<at::Tensor> makeInputs(const std::vector<at::Tensor> &inputs);

  /// The value id of `t`: a tracer of this context, or a real tensor lifted
  /// as an extra graph input (parameters, tensors captured by a lambda).
  int valueOf(const at::Tensor &t);

  /// Marks `outputs` as the segment's results.
  void setOutputs(const std::vector<at::Tensor> &outputs);

  const Segment &segment() const { return segment_; }
  /// Real tensors lifted as graph inputs after the user's inputs, in order.
  const std::vector<at::Tensor> &lifted() const { return lifted_; }

  /// The context being recorded on this thread, if any.
  static TraceContext *current();

  // Used by the dispatcher fallback.
  int addValue(const at::Tensor &meta);
  at::Tensor makeTracer(int id, const at::Tensor &meta);
  const at::Tensor &metaOf(int id) const;
  void addNode(SegmentNode node) { segment_.nodes.push_back(std::move(node)); }
  const std::string &device() const { return segment_.device; }

private:
  friend class TraceGuard;
  Segment segment_;
  std::vector<at::Tensor> lifted_;
  std::vector<at::Tensor> metas_; ///< Meta stand-in of every value
  std::unordered_map<const void *, int> liftedIds_;
};

/// Makes `ctx` current on this thread and routes every ATen op, factories
/// included, through the tracer while alive.
class TraceGuard {
public:
  explicit TraceGuard(TraceContext &ctx);
  ~TraceGuard();
  TraceGuard(const TraceGuard &) = delete;
  TraceGuard &operator=(const TraceGuard &) = delete;

private:
  TraceContext *previous_;
  struct Impl;
  Impl *impl_;
};

/// Whether `t` is a tracer tensor.
bool isTracer(const at::Tensor &t);

} // namespace tgc

#endif // TGC_COMPILER_CAPTURE_TRACER_H
