//===- Engine.cpp - guards, capture, compilation and replay ---------------===//
#include "tgc/tgc.h"

#include "compiler/capture/Tracer.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/training/Partition.h"
#include "runtime/ArtifactCache.h"
#include "runtime/Counters.h"
#include "runtime/Executor.h"
#include "runtime/Log.h"
#include "runtime/TrainingGraph.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace tgc {

Stats stats() {
  Counters &c = counters();
  Stats s;
  s.graphs_compiled = c.graphsCompiled;
  s.kernels_compiled = c.kernelsCompiled;
  s.graph_breaks = c.graphBreaks;
  s.recompiles = c.recompiles;
  s.cache_hits_memory = c.cacheHitsMemory;
  s.cache_hits_disk = c.cacheHitsDisk;
  s.eager_fallbacks = c.eagerFallbacks;
  s.kernel_launches = c.kernelLaunches;
  s.extern_calls = c.externCalls;
  s.view_calls = c.viewCalls;
  s.arena_bytes = c.arenaBytes;
  s.unshared_bytes = c.unsharedBytes;
  s.captures = c.captures;
  s.pipelines_run = c.pipelinesRun;
  s.training_graphs = c.trainingGraphs;
  s.saved_activation_bytes = c.savedBytes;
  s.recomputed_ops = c.recomputedOps;
  return s;
}

namespace {

/// Every live engine, so reset() can drop their compiled graphs.
std::mutex registryMutex;
std::vector<detail::Engine *> &registry() {
  static std::vector<detail::Engine *> engines;
  return engines;
}

/// One specialization of a callable (one guard key).
struct Entry {
  /// Single-segment captures replay this plan without running user code.
  std::shared_ptr<CompiledGraph> graph;
  /// ... or, when something requires grad, this forward/backward pair.
  std::shared_ptr<const TrainingGraph> training;
  std::vector<bool> liftedGrad; ///< requires_grad of the lifted tensors when captured
  std::vector<at::Tensor> lifted;    ///< captured tensors, extra inputs
  std::vector<TensorSpec> liftedSpecs; ///< their layout when captured
  /// Captures with graph breaks re-run the user code each call, tracing
  /// lazily; their segments come from the segment cache.
  bool lazy = false;
  /// The graph's last outputs are guards of predicted host reads (see
  /// TraceContext::allowSpeculation): all false, or the call runs eagerly.
  size_t guards = 0;
  /// Whether capture predicts host reads; false once a prediction had to be
  /// dropped, so lazy calls do not capture twice each time.
  std::atomic<bool> predict{true};
  std::string reason; ///< why it runs eagerly (graph and lazy unset)
};

/// After SpeculationAborted: this callable captures without predictions.
void dropPredictions(Entry &entry, const std::string &why) {
  log("graph_breaks", "capturing again without predictions: " + why);
  entry.predict = false;
}

/// Removes the `guards` last outputs; false when a guard failed (then the
/// outputs are not the program's and the call must run eagerly).
bool guardsHold(std::vector<at::Tensor> &outputs, size_t guards) {
  bool hold = true;
  for (size_t i = outputs.size() - guards; i < outputs.size(); ++i)
    hold = hold && !outputs[i].item<bool>();
  outputs.resize(outputs.size() - guards);
  if (!hold) {
    counters().eagerFallbacks++;
    log("fallbacks", "a predicted host read did not hold (equal(x, x) on a tensor with a NaN); "
                     "this call runs eagerly");
  }
  return hold;
}

TensorSpec specOf(const at::Tensor &t) {
  TensorSpec s;
  s.sizes = t.sizes().vec();
  s.strides = t.strides().vec();
  fromScalarType(t.scalar_type(), s.dtype);
  return s;
}

bool sameSpec(const TensorSpec &a, const TensorSpec &b) {
  return a.sizes == b.sizes && a.strides == b.strides && a.dtype == b.dtype;
}

/// The guard key: everything a compiled graph is specialized on.
std::string guardKey(const std::vector<at::Tensor> &inputs,
                     const std::string &scalars) {
  std::ostringstream k;
  k << (at::GradMode::is_enabled() ? "grad" : "nograd") << '|' << scalars << '|';
  for (const at::Tensor &t : inputs) {
    if (!t.defined()) {
      k << "undef;";
      continue;
    }
    k << c10::toString(t.scalar_type()) << '@' << t.device()
      << (t.requires_grad() ? "+rg" : "") << t.sizes() << t.strides() << ';';
  }
  return k.str();
}

void dumpDebug(const PipelineResult &r, const Segment &seg) {
  const char *dir = std::getenv("TGC_DEBUG_DIR");
  if (!dir || !*dir)
    return;
  static std::atomic<int> counter{0};
  std::filesystem::create_directories(dir);
  std::string stem = std::string(dir) + "/graph" + std::to_string(counter++);
  std::ofstream(stem + ".segment.txt") << seg.str();
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

/// Compiled segments by structural key: the same graph reached from two
/// callables (or twice lazily) compiles once.
class SegmentCache {
public:
  std::shared_ptr<CompiledGraph> get(const Segment &seg) {
    return graphs_.get(seg.structuralKey(), [&] { return compile(seg); },
                       [] { counters().cacheHitsMemory++; });
  }
  void clear() { graphs_.clear(); }

private:
  /// The graph layer key of a segment.
  static std::string graphKey(const Segment &seg) {
    KeyInputs k = baseKeyInputs();
    k.content = seg.structuralKey();
    k.arch = seg.device;
    k.options = "mode=default";
    return buildKey(k);
  }

  /// A plan from the graph layer of the disk cache, or from the pipeline
  /// (then stored there).
  static bool planFor(const Segment &seg, Plan &plan, std::string &error) {
    std::string key = graphKey(seg);
    ArtifactCache &cache = ArtifactCache::instance();
    if (std::optional<std::string> bytes = cache.get(Layer::Graph, key)) {
      if (deserializePlan(*bytes, plan, error)) {
        counters().cacheHitsDisk++;
        return true;
      }
      warn("cached graph " + key + " does not parse (" + error + "); recompiling it");
    }
    counters().pipelinesRun++;
    PipelineResult r = runPipeline(seg);
    dumpDebug(r, seg);
    if (!r.ok) {
      error = r.error;
      return false;
    }
    plan = std::move(r.plan);
    cache.put(Layer::Graph, key, serializePlan(plan));
    return true;
  }

  static std::shared_ptr<CompiledGraph> compile(const Segment &seg) {
    Plan plan;
    std::string error;
    std::shared_ptr<CompiledGraph> g;
    if (planFor(seg, plan, error))
      g = CompiledGraph::load(std::move(plan), error);
    if (g) {
      counters().graphsCompiled++;
      counters().kernelsCompiled += g->kernelsCompiled();
      return g;
    }
    // Nothing is lost: the segment's ops run through ATen as eager would.
    log("fallbacks", "segment runs op by op through ATen: " + error);
    counters().eagerFallbacks++;
    g = CompiledGraph::load(seg.toExternPlan(), error);
    TORCH_CHECK(g, "tgc: cannot run a captured segment: ", error);
    return g;
  }
  Memo<std::shared_ptr<CompiledGraph>> graphs_;
};

SegmentCache &segmentCache() {
  static SegmentCache cache;
  return cache;
}

/// Whether a graph on `inputs` must be differentiable.
bool needsTraining(const std::vector<at::Tensor> &inputs) {
  if (!at::GradMode::is_enabled())
    return false;
  for (const at::Tensor &t : inputs)
    if (t.defined() && t.requires_grad())
      return true;
  return false;
}

/// Training graphs by segment and requires_grad pattern: a joint graph from
/// autograd, partitioned by the min-cut, both halves compiled (and cached
/// like any graph). Null with `error` when autograd cannot run on the graph.
class TrainingCache {
public:
  std::shared_ptr<const TrainingGraph> get(const Segment &seg, const std::vector<at::Tensor> &inputs,
                                           std::string &error) {
    std::vector<bool> grad;
    std::string key = seg.structuralKey() + "|grad:";
    for (const at::Tensor &t : inputs) {
      grad.push_back(t.requires_grad());
      key += t.requires_grad() ? '1' : '0';
    }
    Built b = graphs_.get(key, [&] {
      Built fresh;
      fresh.graph = build(seg, grad, fresh.error);
      return fresh;
    }, [] {});
    error = b.error;
    return b.graph;
  }
  void clear() { graphs_.clear(); }

private:
  static std::shared_ptr<const TrainingGraph> build(const Segment &seg, const std::vector<bool> &grad,
                                                    std::string &error) {
    JointGraph joint;
    if (!buildJointGraph(seg, grad, joint, error))
      return nullptr;
    TrainingPartition p = partitionJoint(joint);
    auto g = std::make_shared<TrainingGraph>();
    g->forward = segmentCache().get(p.forward);
    g->backward = segmentCache().get(p.backward);
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

std::vector<at::Tensor> runSegment(const Segment &seg,
                                   const std::vector<at::Tensor> &inputs) {
  if (needsTraining(inputs)) {
    std::string error;
    if (auto g = trainingCache().get(seg, inputs, error))
      return applyTraining(g, inputs);
    // Op by op through the dispatcher: autograd records every op.
    log("fallbacks", "segment runs op by op through ATen for autograd: " + error);
    counters().eagerFallbacks++;
    std::shared_ptr<CompiledGraph> ops = CompiledGraph::load(seg.toExternPlan(), error);
    TORCH_CHECK(ops, "tgc: cannot run a captured segment: ", error);
    return ops->run(inputs);
  }
  return segmentCache().get(seg)->run(inputs);
}

std::string deviceOf(const std::vector<at::Tensor> &inputs) {
  for (const at::Tensor &t : inputs)
    if (t.defined())
      return t.device().str();
  return "cpu";
}

} // namespace

struct detail::Engine::Impl {
  Options options;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries;
  int compiles = 0;
  bool limitLogged = false;

  /// Why `inputs` cannot be compiled, or "".
  std::string unsupported(const std::vector<at::Tensor> &inputs) {
    std::string device = deviceOf(inputs);
    for (const at::Tensor &t : inputs) {
      if (!t.defined() || t.device().str() != device)
        return "inputs are undefined or on different devices";
    }
    return "";
  }
  /// Captures `body` on `inputs`, running it; returns the real outputs and
  /// fills `entry` with how to run this specialization next time.
  std::vector<at::Tensor> capture(const std::vector<at::Tensor> &inputs,
                                  const Body &body, Entry &entry);
};

std::vector<at::Tensor>
detail::Engine::Impl::capture(const std::vector<at::Tensor> &inputs,
                              const Body &body, Entry &entry) {
  counters().captures++;
  SegmentRunner runner;
  if (!options.fullgraph)
    runner = runSegment;
  std::unique_ptr<TraceContext> ctx;
  std::vector<at::Tensor> reals;
  // First with host reads predicted where capture can (one graph instead of
  // a break); if a break or a write follows a prediction, nothing real has
  // run yet, so capture again without.
  for (bool speculate : {entry.predict.load(), false}) {
    ctx = std::make_unique<TraceContext>(deviceOf(inputs), runner);
    ctx->allowSpeculation(speculate);
    try {
      TraceGuard guard(*ctx);
      std::vector<at::Tensor> outputs = body(ctx->makeInputs(inputs));
      reals = ctx->finish(outputs);
      break;
    } catch (const c10::Error &e) {
      if (ctx->aborted()) { // rewrapped on its way out (TorchScript's interpreter)
        dropPredictions(entry, e.what_without_backtrace());
        continue;
      }
      // Capture ran nothing yet (no break): running eagerly loses nothing.
      if (ctx->hadBreaks() || options.fullgraph)
        throw;
      entry.reason = std::string("capture failed: ") + e.what_without_backtrace();
      log("fallbacks", "running eagerly: " + entry.reason);
      counters().eagerFallbacks++;
      return body(inputs);
    } catch (const std::exception &e) {
      if (!ctx->aborted())
        throw;
      dropPredictions(entry, e.what());
    }
  }
  if (ctx->hadBreaks()) {
    entry.lazy = true;
    return reals;
  }
  entry.guards = ctx->guards().size();
  entry.lifted = ctx->lifted();
  for (const at::Tensor &t : entry.lifted) {
    entry.liftedSpecs.push_back(specOf(t));
    entry.liftedGrad.push_back(t.requires_grad());
  }
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), entry.lifted.begin(), entry.lifted.end());
  std::vector<at::Tensor> outs;
  if (needsTraining(all)) {
    std::string error;
    entry.training = trainingCache().get(ctx->segment(), all, error);
    if (!entry.training) {
      entry.reason = "compiled training is unavailable for this graph: " + error;
      log("fallbacks", "running eagerly: " + entry.reason);
      counters().eagerFallbacks++;
      return body(inputs);
    }
    outs = applyTraining(entry.training, all);
  } else {
    entry.graph = segmentCache().get(ctx->segment());
    outs = entry.graph->run(all);
  }
  return guardsHold(outs, entry.guards) ? outs : body(inputs);
}

detail::Engine::Engine(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (!impl_->options.cache_dir.empty())
    setenv("TGC_CACHE_DIR", impl_->options.cache_dir.c_str(), 1);
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().push_back(this);
}

detail::Engine::~Engine() {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto &r = registry();
  r.erase(std::remove(r.begin(), r.end(), this), r.end());
}

std::vector<at::Tensor>
detail::Engine::call(const std::vector<at::Tensor> &inputs,
                     const std::string &scalarKey, const Body &body) {
  std::string key = guardKey(inputs, scalarKey);
  std::shared_ptr<Entry> entry;
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = impl_->entries.find(key);
    if (it != impl_->entries.end()) {
      entry = it->second;
      // A captured tensor resized, re-strided or (un)frozen since: capture again.
      bool replays = entry->graph || entry->training;
      for (size_t i = 0; replays && i < entry->lifted.size(); ++i)
        if (!sameSpec(specOf(entry->lifted[i]), entry->liftedSpecs[i]) ||
            entry->lifted[i].requires_grad() != entry->liftedGrad[i]) {
          entry = nullptr;
          break;
        }
    }
    if (entry) {
      if (entry->graph || entry->training)
        counters().cacheHitsMemory++;
    } else if (impl_->compiles >= impl_->options.recompile_limit) {
      if (!impl_->limitLogged)
        warn("recompile_limit (" + std::to_string(impl_->options.recompile_limit) +
             ") reached; this callable runs eagerly for new input properties. "
             "The guard that kept failing was the input signature " + key);
      impl_->limitLogged = true;
      entry = std::make_shared<Entry>();
      entry->reason = "recompile_limit reached";
    } else {
      if (impl_->compiles > 0) {
        counters().recompiles++;
        log("recompiles", "guard miss, recompiling for " + key);
      }
      impl_->compiles++;
      entry = std::make_shared<Entry>();
      entry->reason = impl_->unsupported(inputs);
      if (!entry->reason.empty())
        log("fallbacks", "running eagerly: " + entry->reason);
      fresh = entry->reason.empty();
      if (!fresh)
        impl_->entries[key] = entry;
    }
  }
  if (fresh) {
    // The first call of a specialization captures and runs it, then
    // publishes the entry; concurrent first calls each capture (the segment
    // cache compiles each graph once) and the first published entry wins.
    try {
      std::vector<at::Tensor> out = impl_->capture(inputs, body, *entry);
      std::lock_guard<std::mutex> lock(impl_->mutex);
      impl_->entries.emplace(key, entry);
      return out;
    } catch (const GraphBreak &b) {
      TORCH_CHECK(!impl_->options.fullgraph, "tgc::compile(fullgraph=true): graph break at ",
                  b.op, ": ", b.reason);
      throw;
    }
  }
  if (entry->graph || entry->training) {
    std::vector<at::Tensor> all = inputs;
    all.insert(all.end(), entry->lifted.begin(), entry->lifted.end());
    std::vector<at::Tensor> outs =
        entry->training ? applyTraining(entry->training, all) : entry->graph->run(all);
    return guardsHold(outs, entry->guards) ? outs : body(inputs);
  }
  if (entry->lazy) {
    Entry scratch;
    scratch.predict = entry->predict.load();
    std::vector<at::Tensor> out = impl_->capture(inputs, body, scratch);
    entry->predict = scratch.predict.load();
    return out;
  }
  counters().eagerFallbacks++;
  return body(inputs);
}

void reset() {
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    for (detail::Engine *e : registry())
      e->clear();
  }
  segmentCache().clear();
  trainingCache().clear();
  Counters &c = counters();
  c.graphsCompiled = 0;
  c.kernelsCompiled = 0;
  c.graphBreaks = 0;
  c.recompiles = 0;
  c.cacheHitsMemory = 0;
  c.cacheHitsDisk = 0;
  c.eagerFallbacks = 0;
  c.kernelLaunches = 0;
  c.externCalls = 0;
  c.viewCalls = 0;
  c.captures = 0;
  c.pipelinesRun = 0;
  c.trainingGraphs = 0;
  c.savedBytes = 0;
  c.recomputedOps = 0;
}

void detail::Engine::clear() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->entries.clear();
  impl_->compiles = 0;
  impl_->limitLogged = false;
}

} // namespace tgc

namespace tgc {

Explanation detail::explainCall(
    const std::vector<at::Tensor> &inputs,
    const std::function<std::vector<at::Tensor>(const std::vector<at::Tensor> &)> &body) {
  // As the JIT captures: predictions first, then without if one is dropped.
  std::unique_ptr<TraceContext> captured;
  for (bool speculate : {true, false}) {
    auto ctx = std::make_unique<TraceContext>(deviceOf(inputs), runSegment);
    ctx->allowSpeculation(speculate);
    try {
      TraceGuard guard(*ctx);
      ctx->finish(body(ctx->makeInputs(inputs)));
    } catch (const std::exception &) {
      if (!ctx->aborted())
        throw;
      continue;
    }
    captured = std::move(ctx);
    break;
  }
  TraceContext &ctx = *captured;
  Explanation e;
  for (const Segment &seg : ctx.segments()) {
    std::vector<std::string> ops;
    for (const SegmentNode &n : seg.nodes)
      ops.push_back(n.op + (n.overload.empty() ? "" : "." + n.overload));
    e.graph_ops.push_back(std::move(ops));
  }
  e.graph_count = e.graph_ops.size();
  for (const BreakInfo &b : ctx.breaks())
    e.breaks.push_back({b.reason, b.op, b.segment});
  e.graph_break_count = e.breaks.size();
  return e;
}

std::string Explanation::str() const {
  std::ostringstream os;
  os << graph_count << " graph" << (graph_count == 1 ? "" : "s") << ", "
     << graph_break_count << " graph break" << (graph_break_count == 1 ? "" : "s") << "\n";
  for (size_t g = 0; g < graph_ops.size(); ++g) {
    os << "graph " << g << " (" << graph_ops[g].size() << " ops):";
    for (const std::string &op : graph_ops[g])
      os << " " << op;
    os << "\n";
    for (const GraphBreakInfo &b : breaks)
      if (b.segment == (int)g)
        os << "  break after graph " << g << " at " << b.op << ": " << b.reason << "\n";
  }
  return os.str();
}

} // namespace tgc
