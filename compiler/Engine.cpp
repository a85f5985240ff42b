//===- Engine.cpp - guards, capture, compilation and replay ---------------===//
#include "tgc/tgc.h"

#include "compiler/capture/Tracer.h"
#include "compiler/pipeline/Pipeline.h"
#include "runtime/Counters.h"
#include "runtime/Executor.h"
#include "runtime/Log.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

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
  return s;
}

namespace {

/// Every live engine, so reset() can drop their compiled graphs.
std::mutex registryMutex;
std::vector<detail::Engine *> &registry() {
  static std::vector<detail::Engine *> engines;
  return engines;
}

/// One compiled (or eagerly run) specialization of a callable.
struct Entry {
  std::shared_ptr<CompiledGraph> graph; ///< null: run eagerly
  std::vector<at::Tensor> lifted;       ///< captured tensors, extra inputs
  std::string reason;                   ///< why it runs eagerly
};

/// The guard key: everything a compiled graph is specialized on.
std::string guardKey(const std::vector<at::Tensor> &inputs,
                     const std::string &scalars) {
  std::ostringstream k;
  k << (at::GradMode::is_enabled() ? 'G' : 'g') << '|' << scalars << '|';
  for (const at::Tensor &t : inputs) {
    if (!t.defined()) {
      k << "undef;";
      continue;
    }
    k << c10::toString(t.scalar_type()) << '@' << t.device() << (t.requires_grad() ? "+rg" : "")
      << t.sizes() << t.strides() << ';';
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

} // namespace

struct detail::Engine::Impl {
  Options options;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries;
  int compiles = 0;
  bool limitLogged = false;

  std::shared_ptr<Entry> capture(const std::vector<at::Tensor> &inputs,
                                 const Body &body);
  std::shared_ptr<Entry> eager(std::string reason) {
    auto e = std::make_shared<Entry>();
    e->reason = std::move(reason);
    log("fallbacks", "running eagerly: " + e->reason);
    return e;
  }
};

std::shared_ptr<Entry>
detail::Engine::Impl::capture(const std::vector<at::Tensor> &inputs,
                              const Body &body) {
  if (at::GradMode::is_enabled())
    for (const at::Tensor &t : inputs)
      if (t.defined() && t.requires_grad())
        return eager("an input requires grad; compiled training is not "
                     "implemented yet");
  std::string device = "cpu";
  for (const at::Tensor &t : inputs)
    if (t.defined()) {
      device = t.device().str();
      break;
    }
  for (const at::Tensor &t : inputs)
    if (!t.defined() || t.device().str() != device)
      return eager("inputs are undefined or on different devices");

  TraceContext ctx(device);
  try {
    std::vector<at::Tensor> outputs;
    {
      TraceGuard guard(ctx);
      outputs = body(ctx.makeInputs(inputs));
    }
    ctx.setOutputs(outputs);
  } catch (const GraphBreak &b) {
    counters().graphBreaks++;
    log("graph_breaks", "break at " + b.op + ": " + b.reason);
    if (options.fullgraph)
      TORCH_CHECK(false, "tgc::compile(fullgraph=true): graph break at ",
                  b.op, ": ", b.reason);
    return eager("graph break at " + b.op + ": " + b.reason);
  } catch (const c10::Error &e) {
    if (options.fullgraph)
      throw;
    return eager(std::string("capture failed: ") + e.what_without_backtrace());
  }
  if (at::GradMode::is_enabled())
    for (const at::Tensor &t : ctx.lifted())
      if (t.requires_grad())
        return eager("a captured tensor requires grad; compiled training is "
                     "not implemented yet");

  PipelineResult r = runPipeline(ctx.segment());
  dumpDebug(r, ctx.segment());
  if (!r.ok)
    return eager("compilation failed: " + r.error);
  std::string error;
  auto graph = CompiledGraph::load(std::move(r.plan), error);
  if (!graph)
    return eager("kernel build failed: " + error);
  counters().graphsCompiled++;
  counters().kernelsCompiled += graph->kernelsCompiled();
  auto e = std::make_shared<Entry>();
  e->graph = std::move(graph);
  e->lifted = ctx.lifted();
  return e;
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
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = impl_->entries.find(key);
    if (it != impl_->entries.end()) {
      entry = it->second;
      counters().cacheHitsMemory++;
    } else if (impl_->compiles >= impl_->options.recompile_limit) {
      if (!impl_->limitLogged)
        warn("recompile_limit (" +
             std::to_string(impl_->options.recompile_limit) +
             ") reached; running eagerly from now on. Last guard key: " + key);
      impl_->limitLogged = true;
      entry = impl_->eager("recompile_limit reached");
    } else {
      if (impl_->compiles > 0) {
        counters().recompiles++;
        log("recompiles", "guard miss, recompiling for " + key);
      }
      impl_->compiles++;
      entry = impl_->capture(inputs, body);
      impl_->entries[key] = entry;
    }
  }
  if (!entry->graph) {
    counters().eagerFallbacks++;
    return body(inputs);
  }
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), entry->lifted.begin(), entry->lifted.end());
  return entry->graph->run(all);
}

void reset() {
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    for (detail::Engine *e : registry())
      e->clear();
  }
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
}

void detail::Engine::clear() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->entries.clear();
  impl_->compiles = 0;
  impl_->limitLogged = false;
}

} // namespace tgc
