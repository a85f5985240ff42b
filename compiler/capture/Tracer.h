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

#include <c10/util/intrusive_ptr.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
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

/// Thrown when a prediction made during capture (see
/// TraceContext::allowSpeculation) cannot be kept because a graph break or
/// a write follows it. Nothing real has run since the capture began: the
/// caller captures again without speculating.
class SpeculationAborted : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class TracerTensorImpl;

/// A graph break: where, why, and in which segment it ended.
struct BreakInfo {
  std::string op, reason;
  int segment = 0;
};

/// Compiles (or finds) and runs one finished segment on real tensors, one
/// per `segment.inputs`; returns one real tensor per `segment.outputs`.
using SegmentRunner = std::function<std::vector<at::Tensor>(
    const Segment &segment, const std::vector<at::Tensor> &inputs)>;

/// The recording state of one capture. Without a runner a graph break is an
/// error (GraphBreak propagates); with one, the pending segment is run at the
/// break, the breaking op runs eagerly on real tensors, and capture resumes
/// with a new segment whose inputs include the values materialized so far.
class TraceContext {
public:
  explicit TraceContext(std::string device, SegmentRunner runner = nullptr);
  ~TraceContext();

  /// Tracer tensors standing for `inputs` (graph inputs, in order).
  std::vector<at::Tensor> makeInputs(const std::vector<at::Tensor> &inputs);

  /// Tracers for graph inputs added after the user's inputs (training's
  /// tangents): unlike makeInputs, lifted() does not count them.
  std::vector<at::Tensor> addInputs(const std::vector<at::Tensor> &like);

  /// The value id of `t` in the current segment: a tracer of it, or a real
  /// tensor (or a tracer materialized by an earlier segment) lifted as an
  /// extra graph input (parameters, tensors captured by a lambda).
  int valueOf(const at::Tensor &t);

  /// Ends the capture with `outputs`. Without breaks it only records them as
  /// the segment's results and returns {}; after breaks it runs the last
  /// segment and returns the real output tensors.
  std::vector<at::Tensor> finish(const std::vector<at::Tensor> &outputs);

  bool hadBreaks() const { return !breaks_.empty(); }
  /// Whether something that ran for real during this capture (a segment at
  /// a break, a breaking op) may have written a tensor: then the call cannot
  /// be run again eagerly should the capture fail after it.
  bool ranWrites() const { return ranWrites_; }
  void noteRanWrite() { ranWrites_ = true; }

  /// Lets capture predict a host read instead of breaking, guarded:
  /// `equal(x, x)` on one traced value is true unless x holds a NaN, so it
  /// answers true and records the guard `isnan(x).any()`. finish() appends
  /// the guards to the segment's outputs; whoever runs the graph must check
  /// them (all false) and otherwise discard the outputs and run eagerly.
  /// Only for graphs without breaks and without writes: a break or a
  /// mutating op after a prediction throws SpeculationAborted.
  void allowSpeculation(bool on) { speculate_ = on; }
  /// Declares that every value capture knows is fixed by what the caller
  /// guards anyway: tgc-aot's regions, where known values derive only from
  /// graph constants and the package's static shapes. Reads of them are
  /// answered without an in-graph guard.
  void knownValuesAreFixed(bool on) { knownFixed_ = on; }
  bool knownValuesFixed() const { return knownFixed_; }
  /// Gives input tracer `t` the value `value` (a graph constant the caller
  /// passes as an input), so reads and size arithmetic on it are answered.
  void know(const at::Tensor &t, const at::Tensor &value);
  bool canSpeculate() const { return speculate_ && breaks_.empty(); }
  void addGuard(int id) { guards_.push_back(id); }
  void setLastGuard(int id) { guards_.back() = id; }
  /// Throws SpeculationAborted (and remembers it) when a prediction was
  /// made: called before a graph break runs anything.
  void abortIfPredicted(const std::string &why);
  /// Whether this capture threw SpeculationAborted: its caller must capture
  /// again even if user code (or TorchScript's interpreter) caught or
  /// rewrapped the exception.
  bool aborted() const { return aborted_; }
  /// Alias tracking for that rule: values that are (views of) inputs, and
  /// whether an op wrote one (a write the caller could see).
  void noteInputAlias(int id) { inputAliases_.insert(id); }
  bool aliasesInput(int id) const { return inputAliases_.count(id) != 0; }
  void noteInputWrite() { wroteInput_ = true; }
  /// Value ids of the guards, in order (the segment's last outputs).
  const std::vector<int> &guards() const { return guards_; }
  const std::vector<BreakInfo> &breaks() const { return breaks_; }
  /// Every segment, finished ones first; the last is the current one.
  std::vector<Segment> segments() const;
  const Segment &segment() const { return segment_; }
  /// Real tensors lifted as graph inputs after the user's inputs, in order.
  std::vector<at::Tensor> lifted() const;

  /// The context being recorded on this thread, if any.
  static TraceContext *current();

  // Used by the dispatcher fallback.
  bool canBreak() const { return bool(runner_); }
  int addValue(const at::Tensor &meta);
  at::Tensor makeTracer(int id, const at::Tensor &meta);
  const at::Tensor &metaOf(int id) const;
  void addNode(SegmentNode node) { segment_.nodes.push_back(std::move(node)); }
  const std::string &device() const { return segment_.device; }
  /// The device tracer tensors report (the segment's unless set). Training
  /// replays a CUDA segment on tracers that say "cpu", so that autograd's
  /// engine runs the backward on this thread, where the capture is current;
  /// device arguments equal to it are recorded as the segment's device.
  void setTracerDevice(std::string device) { tracerDevice_ = std::move(device); }
  const std::string &tracerDevice() const {
    return tracerDevice_.empty() ? segment_.device : tracerDevice_;
  }
  int segmentIndex() const { return (int)finished_.size(); }
  /// Ends the current segment at a break and starts the next one; the
  /// caller then runs the breaking op on real tensors.
  void breakAt(const GraphBreak &why);
  /// The real tensor behind a tracer of an earlier segment.
  at::Tensor realOf(const at::Tensor &t) const;

private:
  int lift(const at::Tensor &real, const void *key);
  void flush(const std::vector<int> &outputs, std::vector<at::Tensor> *reals);

  Segment segment_;
  size_t userInputs_ = 0;
  std::vector<at::Tensor> inputsReal_; ///< real tensor of each segment input
  std::vector<at::Tensor> metas_;      ///< Meta stand-in of every value
  std::unordered_map<const void *, int> liftedIds_;
  bool knownFixed_ = false;
  std::vector<c10::weak_intrusive_ptr<TracerTensorImpl>> tracers_;
  std::vector<Segment> finished_;
  std::vector<BreakInfo> breaks_;
  SegmentRunner runner_;
  std::string tracerDevice_;
  bool speculate_ = false;
  bool aborted_ = false;
  std::vector<int> guards_;
  std::unordered_set<int> inputAliases_;
  bool wroteInput_ = false;
  bool ranWrites_ = false;
  bool finishedAll_ = false;
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

/// Inside a capture, ATen calls on real tensors (building a wrapped number,
/// say) while alive: the dispatch keys of the code around the outermost
/// capture are restored.
class UntracedScope {
public:
  UntracedScope();
  ~UntracedScope();
  UntracedScope(const UntracedScope &) = delete;
  UntracedScope &operator=(const UntracedScope &) = delete;

private:
  struct Impl;
  Impl *impl_;
};

/// Whether `t` is a tracer tensor.
bool isTracer(const at::Tensor &t);

} // namespace tgc

#endif // TGC_COMPILER_CAPTURE_TRACER_H
