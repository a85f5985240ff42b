//===- Executable.cpp - segments compiled, cached and run -----------------===//
#include "compiler/Executable.h"

#include "compiler/capture/Attention.h"
#include "compiler/capture/SegmentText.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/training/Partition.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unordered_map>

namespace tgc {

namespace {

void dumpDebug(const PipelineResult &r, const Segment &seg) {
  const char *dir = std::getenv("TGC_DEBUG_DIR");
  if (!dir || !*dir)
    return;
  static std::atomic<int> counter{0};
  std::filesystem::create_directories(dir);
  std::string stem = std::string(dir) + "/graph" + std::to_string(counter++);
  // The lossless text form: `tgc-opt --import-segment` reads it back.
  std::ofstream(stem + ".segment.txt") << printSegment(seg);
  std::ofstream(stem + ".tg.mlir") << r.importedIR;
  std::ofstream(stem + ".tgk.mlir") << r.finalIR;
  std::ofstream(stem + ".plan.txt") << r.plan.str();
  if (!r.plan.cpuSource.empty())
    std::ofstream(stem + ".cpp") << r.plan.cpuSource;
  for (size_t i = 0; i < r.plan.cudaSources.size(); ++i)
    std::ofstream(stem + ".k" + std::to_string(i) + ".cu") << r.plan.cudaSources[i];
}

/// Values built once per key and shared by every engine. Concurrent misses
/// may each build; the first value stored wins.
template <class V> class Memo {
public:
  /// The value of `key`, built by `build()` on a miss; `hit()` runs on hits.
  template <class Build, class Hit> V get(const std::string &key, Build build, Hit hit) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = values_.find(key);
      if (it != values_.end()) {
        hit();
        return it->second;
      }
    }
    V v = build();
    std::lock_guard<std::mutex> lock(mutex_);
    return values_.emplace(key, std::move(v)).first->second;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    values_.clear();
  }

private:
  std::mutex mutex_;
  std::unordered_map<std::string, V> values_;
};

/// Compiled segments by config and structural key: the same graph reached
/// from two callables (or twice lazily) compiles once.
class SegmentCache {
public:
  std::shared_ptr<CompiledGraph> get(const Segment &seg, const CompileConfig &config) {
    Compiled c = graphs_.get(config.memoPrefix() + seg.structuralKey(),
                             [&] { return compile(seg, config); },
                             [] { counters().cacheHitsMemory++; });
    TORCH_CHECK(c.failure.empty() || !config.fullgraph,
                "tgc::compile(fullgraph=true): a graph did not compile: ", c.failure);
    return c.graph;
  }
  void clear() { graphs_.clear(); }

private:
  /// A compiled graph, or the op-by-op run of one that failed to compile
  /// and why (kept: the failure is not retried on later calls).
  struct Compiled {
    std::shared_ptr<CompiledGraph> graph;
    std::string failure;
  };
  static Compiled compile(const Segment &seg, const CompileConfig &config) {
    CacheScope scope(*config.cache); // kernels go where the graph goes
    Plan plan;
    std::string error;
    Compiled c;
    try { // the host compiler, NVRTC and loading
      if (planSegment(seg, config, plan, error))
        c.graph = CompiledGraph::load(std::move(plan), error);
    } catch (...) {
      error = "building or loading the compiled graph failed: " + currentExceptionText();
    }
    if (!c.graph) {
      c.failure = error;
      c.graph = fallBack("segment runs op by op through ATen: " + error, [&] { return opByOp(seg); });
      return c;
    }
    counters().graphsCompiled++;
    counters().kernelsCompiled += c.graph->kernelsCompiled();
    return c;
  }
  Memo<Compiled> graphs_;
};

SegmentCache &segmentCache() {
  static SegmentCache cache;
  return cache;
}


/// Training graphs by config, segment and requires_grad pattern: a joint
/// graph from autograd, partitioned by the min-cut, both halves compiled
/// (and cached like any graph). Null with `error` when autograd cannot run
/// on the graph.
class TrainingCache {
public:
  std::shared_ptr<const TrainingGraph> get(const Segment &seg, const std::vector<at::Tensor> &inputs,
                                           const CompileConfig &config, std::string &error) {
    std::vector<bool> grad;
    std::string key = config.memoPrefix() + seg.structuralKey() + "|grad:";
    for (const at::Tensor &t : inputs) {
      grad.push_back(t.requires_grad());
      key += t.requires_grad() ? '1' : '0';
    }
    Built b = graphs_.get(key, [&] {
      Built fresh;
      fresh.graph = build(seg, grad, config, fresh.error);
      return fresh;
    }, [] {});
    error = b.error;
    return b.graph;
  }
  void clear() { graphs_.clear(); }

private:
  static std::shared_ptr<const TrainingGraph> build(const Segment &seg, const std::vector<bool> &grad,
                                                    const CompileConfig &config, std::string &error) {
    JointGraph joint;
    TrainingPartition p;
    auto g = std::make_shared<TrainingGraph>();
    try { // autograd on the segment, the partitioner, both halves' compiles
      if (!buildJointGraph(seg, grad, joint, error))
        return nullptr;
      p = partitionJoint(joint);
      g->forward = segmentCache().get(p.forward, config);
      g->backward = segmentCache().get(p.backward, config);
    } catch (...) {
      error = currentExceptionText();
      return nullptr;
    }
    g->layout = p.layout;
    counters().trainingGraphs++;
    counters().savedBytes = p.layout.savedBytes;
    counters().recomputedOps = p.recomputedNodes;
    log("training", "training graph: forward " + std::to_string(p.forward.nodes.size()) +
                        " ops, backward " + std::to_string(p.backward.nodes.size()) + " ops (" +
                        std::to_string(p.recomputedNodes) + " recomputed), " +
                        std::to_string(p.layout.savedBytes) + " bytes saved");
    return g;
  }
  /// A training graph, or why there is none (kept: a graph autograd
  /// cannot run on is not retried each call).
  struct Built {
    std::shared_ptr<const TrainingGraph> graph;
    std::string error;
  };
  Memo<Built> graphs_;
};

TrainingCache &trainingCache() {
  static TrainingCache cache;
  return cache;
}

/// Removes the `guards` last outputs; false when a guard failed (then the
/// outputs are not the program's and the call must run eagerly).
bool guardsHold(std::vector<at::Tensor> &outputs, size_t guards) {
  bool hold = true;
  for (size_t i = outputs.size() - guards; i < outputs.size(); ++i)
    hold = hold && !outputs[i].item<bool>();
  outputs.resize(outputs.size() - guards);
  return hold;
}

} // namespace

bool needsTraining(const std::vector<at::Tensor> &inputs) {
  if (!at::GradMode::is_enabled())
    return false;
  for (const at::Tensor &t : inputs)
    if (t.defined() && t.requires_grad())
      return true;
  return false;
}

std::string currentExceptionText() {
  try {
    throw;
  } catch (const c10::Error &e) {
    return e.what_without_backtrace();
  } catch (const std::bad_alloc &) {
    return "out of memory (std::bad_alloc)";
  } catch (const std::exception &e) {
    return e.what();
  } catch (...) {
    return "an exception of unknown type";
  }
}

std::shared_ptr<CompiledGraph> opByOp(const Segment &seg) {
  std::string error;
  std::shared_ptr<CompiledGraph> ops = CompiledGraph::load(seg.toExternPlan(), error);
  TORCH_CHECK(ops, "tgc: cannot run a captured segment: ", error);
  return ops;
}

bool planSegment(const Segment &seg, const CompileConfig &config, Plan &plan, std::string &error,
                 bool *fromCache) {
  KeyInputs k = baseKeyInputs();
  k.content = seg.structuralKey();
  k.arch = seg.device;
  k.options = config.options;
  const std::string key = buildKey(k);
  ArtifactCache &cache = *config.cache;
  if (fromCache)
    *fromCache = false;
  if (std::optional<std::string> bytes = cache.get(Layer::Graph, key)) {
    if (deserializePlan(*bytes, plan, error)) {
      counters().cacheHitsDisk++;
      if (fromCache)
        *fromCache = true;
      return true;
    }
    warn("cached graph " + key + " does not parse (" + error + "); recompiling it");
  }
  counters().pipelinesRun++;
  PipelineResult r;
  try { // import, the passes and codegen: whatever throws is this graph's error
    r = runPipeline(seg);
  } catch (...) {
    error = "the compilation pipeline failed: " + currentExceptionText();
    return false;
  }
  dumpDebug(r, seg);
  if (!r.ok) {
    error = r.error;
    return false;
  }
  plan = std::move(r.plan);
  cache.put(Layer::Graph, key, serializePlan(plan));
  return true;
}

const CompileConfig &defaultConfig() {
  static const CompileConfig config;
  return config;
}

std::optional<std::vector<at::Tensor>> Executable::run(const std::vector<at::Tensor> &inputs) const {
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), lifted.begin(), lifted.end());
  all.insert(all.end(), constants.begin(), constants.end());
  std::vector<at::Tensor> outs = training ? applyTraining(training, all) : graph->run(all);
  if (!guardsHold(outs, guards))
    return std::nullopt;
  return outs;
}

bool Executable::stale() const {
  for (size_t i = 0; i < lifted.size(); ++i)
    if (!fitsSpec(lifted[i], liftedSpecs[i], liftedDevices[i]) ||
        lifted[i].requires_grad() != liftedGrad[i])
      return true;
  return weightsChanged();
}

void Executable::guardFrozen(std::vector<at::Tensor> sources) {
  frozenSources = std::move(sources);
  frozenVersions.clear();
  frozenData.clear();
  for (const at::Tensor &t : frozenSources) {
    frozenVersions.push_back(t._version());
    frozenData.push_back(t.data_ptr());
  }
}

bool Executable::weightsChanged() const {
  for (size_t i = 0; i < frozenSources.size(); ++i)
    if (frozenSources[i]._version() != frozenVersions[i] ||
        frozenSources[i].data_ptr() != frozenData[i])
      return true;
  return false;
}

void Executable::lift(std::vector<at::Tensor> tensors) {
  lifted = std::move(tensors);
  liftedSpecs.clear();
  liftedDevices.clear();
  liftedGrad.clear();
  for (const at::Tensor &t : lifted) {
    liftedSpecs.push_back(specOf(t));
    liftedDevices.push_back(t.device().type());
    liftedGrad.push_back(t.requires_grad());
  }
}

const Segment &withFusedAttention(const Segment &seg, const CompileConfig &config,
                                  Segment &storage) {
  if (!config.fuseAttention)
    return seg;
  bool bmm = false;
  for (const SegmentNode &n : seg.nodes)
    bmm = bmm || n.op == "aten::bmm";
  if (!bmm)
    return seg;
  storage = seg;
  const int fused = fuseAttention(storage);
  if (fused == 0)
    return seg;
  counters().fusedAttentions += fused;
  log("attention", std::to_string(fused) + " decomposed attention" + (fused > 1 ? "s" : "") +
                       " made one SDPA call each");
  return storage;
}

bool compileSegment(const Segment &seg, const std::vector<at::Tensor> &inputs,
                    const CompileConfig &config, Executable &exe, std::string &why) {
  if (!needsTraining(inputs)) {
    Segment fused;
    exe.graph = segmentCache().get(withFusedAttention(seg, config, fused), config);
    return true;
  }
  std::string error;
  exe.training = trainingCache().get(seg, inputs, config, error);
  if (!exe.training)
    why = "compiled training is unavailable for this graph: " + error;
  return exe.training != nullptr;
}

std::vector<at::Tensor> runSegment(const Segment &seg, const std::vector<at::Tensor> &inputs,
                                   const CompileConfig &config) {
  Executable exe;
  std::string why;
  if (compileSegment(seg, inputs, config, exe, why))
    return *exe.run(inputs); // no guards: always the outputs
  // Op by op through the dispatcher: autograd records every op.
  return fallBack("segment runs op by op through ATen for autograd: " + why,
                  [&] { return opByOp(seg)->run(inputs); });
}

void clearCompiledSegments() {
  segmentCache().clear();
  trainingCache().clear();
}

} // namespace tgc
