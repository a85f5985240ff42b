//===- Executable.h - compiled code of one specialization -----------------===//
//
// What the Engine runs for one specialization: an Executable (an inference
// graph or a training pair, with the tensors capture lifted), compiled from
// a captured segment through the in-memory segment and training caches and
// the callable's disk cache (CompileConfig). When a segment cannot be
// compiled it runs op by op; every such fallback goes through fallBack().
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_EXECUTABLE_H
#define TGC_COMPILER_EXECUTABLE_H

#include "compiler/capture/Segment.h"
#include "runtime/ArtifactCache.h"
#include "runtime/Counters.h"
#include "runtime/Executor.h"
#include "runtime/Log.h"
#include "runtime/TrainingGraph.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tgc {

/// The one fallback path: logs why (TGC_LOG=fallbacks), counts it in
/// eager_fallbacks, then runs `run` — the user code eagerly, or a segment op
/// by op through ATen. Nothing is lost either way: eager's ops run.
template <class Run> auto fallBack(const std::string &why, Run &&run) -> decltype(run()) {
  log("fallbacks", why);
  counters().eagerFallbacks++;
  return run();
}

/// The message of the exception being handled (inside a catch), whatever
/// its type: a failure in any stage becomes a reason, never a crash.
std::string currentExceptionText();

/// `seg`'s ops one by one through the dispatcher, as eager runs them (and
/// autograd records them).
std::shared_ptr<CompiledGraph> opByOp(const Segment &seg);

/// What a compiled callable compiles with: its cache directory and the
/// options that change compiled graphs. Graphs compiled with another config
/// are neither served from memory nor from disk.
struct CompileConfig {
  ArtifactCache *cache = &ArtifactCache::instance();
  std::string options = "mode=default"; ///< the graph layer key's options
  /// A segment that does not compile throws (Options::fullgraph) instead of
  /// running op by op. Not part of any key: the failure is cached either way.
  bool fullgraph = false;
  /// Inference segments get fuseAttention (compiler/capture/Attention.h)
  /// before planning. It changes the segment, hence the keys, by itself.
  bool fuseAttention = true;
  /// Prefix of in-memory keys: one graph per directory and options.
  std::string memoPrefix() const { return cache->dir() + '\n' + options + '\n'; }
};

/// The config of explain(): the environment's cache, mode default.
const CompileConfig &defaultConfig();

/// The Plan of `seg`: from the graph layer of `config`'s disk cache, else
/// from the pipeline (then stored there; TGC_DEBUG_DIR gets its stages).
/// `fromCache` says which. The JIT and tgc-aot both plan through this.
bool planSegment(const Segment &seg, const CompileConfig &config, Plan &plan, std::string &error,
                 bool *fromCache = nullptr);

/// `seg` with its decomposed attentions fused (fuseAttention) when
/// `config` asks for it and there is one; then the result is `storage`.
/// For inference segments only.
const Segment &withFusedAttention(const Segment &seg, const CompileConfig &config,
                                  Segment &storage);

/// One specialization's compiled code: an inference graph or, when
/// something requires grad, a forward/backward pair; with the tensors
/// capture lifted (extra inputs, appended) and the number of trailing
/// outputs that guard predicted host reads (see
/// TraceContext::allowSpeculation).
struct Executable {
  std::shared_ptr<CompiledGraph> graph;
  std::shared_ptr<const TrainingGraph> training;
  std::vector<at::Tensor> lifted;
  std::vector<TensorSpec> liftedSpecs; ///< their layout when captured
  std::vector<c10::DeviceType> liftedDevices;
  std::vector<bool> liftedGrad;        ///< their requires_grad when captured
  /// Frozen graphs (compiler/freeze/Freeze.h): constants passed after the
  /// lifted tensors, and the tensors they were computed from with their
  /// version counters then (an in-place update makes this stale).
  std::vector<at::Tensor> constants;
  std::vector<at::Tensor> frozenSources;
  std::vector<uint32_t> frozenVersions;
  std::vector<const void *> frozenData; ///< their data pointers then (set_data swaps them)
  size_t guards = 0;

  explicit operator bool() const { return graph || training; }
  /// The program's outputs on `inputs`, or nullopt when a guard failed.
  std::optional<std::vector<at::Tensor>> run(const std::vector<at::Tensor> &inputs) const;
  /// Whether a lifted tensor was resized, re-strided or (un)frozen since
  /// capture, or a frozen weight was written in place: then this
  /// specialization must be captured (and frozen) again.
  bool stale() const;
  /// Whether a frozen weight changed since it was frozen (part of stale()).
  bool weightsChanged() const;
  /// Keeps `sources` (the tensors frozen constants come from) with their
  /// version counters and data pointers now, for weightsChanged().
  void guardFrozen(std::vector<at::Tensor> sources);
  /// Lifts `tensors` as extra inputs, remembering their layout.
  void lift(std::vector<at::Tensor> tensors);
};

/// Whether a graph on `inputs` must be differentiable (grad mode, and an
/// input requires grad).
bool needsTraining(const std::vector<at::Tensor> &inputs);

/// Compiles `seg` for `inputs` (lifted tensors included) into `exe`: a
/// training pair when they need grad, else the inference graph (a segment
/// the pipeline rejects runs op by op inside it). False with `why` when
/// training cannot be compiled for this graph.
bool compileSegment(const Segment &seg, const std::vector<at::Tensor> &inputs,
                    const CompileConfig &config, Executable &exe, std::string &why);

/// Runs one segment of a capture with graph breaks (compiled, else op by op).
std::vector<at::Tensor> runSegment(const Segment &seg, const std::vector<at::Tensor> &inputs,
                                   const CompileConfig &config);

/// Forgets every compiled segment and training graph (tgc::reset()).
void clearCompiledSegments();

} // namespace tgc

#endif // TGC_COMPILER_EXECUTABLE_H
