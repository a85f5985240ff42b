//===- Engine.cpp - options, guards, capture and replay -------------------===//
//
// A compiled callable (detail::Engine) keeps one Entry per specialization
// (guard key). An entry holds an Executable (compiler/Executable.h: an
// inference graph or a training pair, with the tensors capture lifted)
// replayed by one run path, or says the callable re-traces lazily (graph
// breaks), or why it runs eagerly. Every eager run goes through fallBack().
//
//===----------------------------------------------------------------------===//
#include "tgc/tgc.h"

#include "compiler/Executable.h"
#include "compiler/capture/Tracer.h"
#include "compiler/freeze/Freeze.h"
#include "runtime/Profile.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace tgc {

Stats stats() {
  Counters &c = counters();
  Stats s;
#define TGC_COUNTER(name, member, doc) s.name = c.member;
#include "tgc/Counters.def"
  return s;
}

std::string Stats::str() const {
  const int64_t values[] = {
#define TGC_COUNTER(name, member, doc) name,
#include "tgc/Counters.def"
  };
  std::string text = countersText(values);
  if (plan_runs > 0) {
    auto per = [&](int64_t n) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f", double(n) / double(plan_runs));
      return std::string(buf);
    };
    text += "per plan run: extern_calls " + per(extern_calls) + ", view_calls " + per(view_calls) +
            ", views_resolved " + per(views_resolved) + ", boxed_calls " + per(boxed_calls) +
            ", executor_allocations " + per(executor_allocations) + ", kernel_launches " +
            per(kernel_launches) + "\n";
  }
  return text;
}

namespace {

/// Every live engine, so reset() can drop their compiled graphs.
std::mutex registryMutex;
std::vector<detail::Engine *> &registry() {
  static std::vector<detail::Engine *> engines;
  return engines;
}

/// Each Mode: its name in cache keys and logs, and what is missing when
/// it is not implemented yet (it then compiles as Default).
struct ModeInfo {
  Mode mode;
  const char *name;
  const char *missing;
};
constexpr ModeInfo kModes[] = {
    {Mode::Default, "default", nullptr},
    {Mode::ReduceOverhead, "reduce-overhead", "CUDA graphs are not implemented yet"},
    {Mode::MaxAutotune, "max-autotune", nullptr},
};

const ModeInfo &modeInfo(Mode mode) {
  for (const ModeInfo &m : kModes)
    if (m.mode == mode)
      return m;
  throw std::invalid_argument("tgc::compile: unknown Options::mode " +
                              std::to_string(static_cast<int>(mode)));
}

/// Says once per process and mode that a mode compiles as Default.
void warnUnimplemented(const ModeInfo &m) {
  static std::once_flag once[std::size(kModes)];
  if (m.missing)
    std::call_once(once[&m - kModes], [&] {
      warn(std::string("mode ") + m.name + ": " + m.missing + "; compiling as mode default");
    });
}

/// The device type Backend asks for, or nullopt for Auto.
std::optional<c10::DeviceType> backendDevice(Backend b) {
  switch (b) {
  case Backend::Auto: return std::nullopt;
  case Backend::Cpu: return c10::DeviceType::CPU;
  case Backend::Cuda: return c10::DeviceType::CUDA;
  }
  throw std::invalid_argument("tgc::compile: unknown Options::backend");
}

/// Throws when an input is not on the device `options.backend` asks for.
void checkBackend(const Options &options, const std::vector<at::Tensor> &inputs) {
  std::optional<c10::DeviceType> want = backendDevice(options.backend);
  for (size_t i = 0; want && i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].device().type() != *want)
      throw std::invalid_argument(
          "tgc: this callable was compiled with Options::backend = " +
          c10::DeviceTypeName(*want) + " but tensor input " + std::to_string(i) + " is on " +
          inputs[i].device().str() + "; move the inputs there or use Backend::Auto");
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

std::string deviceOf(const std::vector<at::Tensor> &inputs) {
  for (const at::Tensor &t : inputs)
    if (t.defined())
      return t.device().str();
  return "cpu";
}

/// One specialization of a callable (one guard key).
struct Entry {
  /// Single-segment captures replay this without running user code.
  Executable exe;
  /// Captures with graph breaks re-run the user code each call, tracing
  /// lazily; their segments come from the segment cache.
  bool lazy = false;
  /// Whether capture predicts host reads; false once a prediction had to be
  /// dropped, so lazy calls do not capture twice each time.
  std::atomic<bool> predict{true};
  std::string reason; ///< why it runs eagerly (exe empty and not lazy)
};

/// After SpeculationAborted: this callable captures without predictions.
void dropPredictions(Entry &entry, const std::string &why) {
  log("graph_breaks", "capturing again without predictions: " + why);
  entry.predict = false;
}

} // namespace

struct detail::Engine::Impl {
  Options options;
  CompileConfig config;
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
  /// The entry of guard key `key`; on a miss a new one, `fresh` when it is
  /// to be captured (else it runs eagerly, with its reason).
  std::shared_ptr<Entry> lookup(const std::string &key, const std::vector<at::Tensor> &inputs,
                                bool &fresh);
  /// Makes `key`'s calls run eagerly from now on, for `reason`.
  void remember(const std::string &key, const std::string &reason) {
    auto eager = std::make_shared<Entry>();
    eager->reason = reason;
    std::lock_guard<std::mutex> lock(mutex);
    entries[key] = std::move(eager);
  }
  /// Captures a fresh entry's first call and publishes the entry.
  std::vector<at::Tensor> captureFresh(const std::string &key, const std::vector<at::Tensor> &inputs,
                                       const Body &body, const std::shared_ptr<Entry> &entry);
  /// Captures `body` on `inputs`, running it; returns the real outputs and
  /// fills `entry` with how to run this specialization next time.
  std::vector<at::Tensor> capture(const std::vector<at::Tensor> &inputs,
                                  const Body &body, Entry &entry);
  /// Runs `body` under the tracer into `ctx`, with the real outputs in
  /// `reals`; false (with `entry.reason`) when capture failed before any
  /// break, so running eagerly loses nothing.
  bool trace(const std::vector<at::Tensor> &inputs, const Body &body, Entry &entry,
             std::unique_ptr<TraceContext> &ctx, std::vector<at::Tensor> &reals);
};

namespace {

/// `exe` on `inputs`, or the user code eagerly when a guard of a predicted
/// host read fails.
std::vector<at::Tensor> runOrFallBack(const Executable &exe, const std::vector<at::Tensor> &inputs,
                                      const detail::Engine::Body &body) {
  if (std::optional<std::vector<at::Tensor>> outs = exe.run(inputs))
    return std::move(*outs);
  return fallBack("a predicted host read did not hold (equal(x, x) on a tensor with a NaN); "
                  "this call runs eagerly",
                  [&] { return body(inputs); });
}

} // namespace

bool detail::Engine::Impl::trace(const std::vector<at::Tensor> &inputs, const Body &body,
                                 Entry &entry, std::unique_ptr<TraceContext> &ctx,
                                 std::vector<at::Tensor> &reals) {
  SegmentRunner runner;
  if (!options.fullgraph)
    runner = [this](const Segment &seg, const std::vector<at::Tensor> &in) {
      return runSegment(seg, in, config);
    };
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
      return true;
    } catch (const GraphBreak &b) {
      if (!ctx->aborted())
        throw; // fullgraph: captureFresh names the break
      dropPredictions(entry, b.what());
    } catch (...) { // any type: c10::Error, std::bad_alloc, one rewrapped by TorchScript
      const std::string what = currentExceptionText();
      if (ctx->aborted()) { // rewrapped on its way out (TorchScript's interpreter)
        dropPredictions(entry, what);
        continue;
      }
      TORCH_CHECK(!options.fullgraph, "tgc::compile(fullgraph=true): capture failed: ", what);
      // Segments and breaking ops ran for real: running the call again is
      // only right when none of them can have written a tensor.
      TORCH_CHECK(!ctx->ranWrites(), "tgc: capture failed after a graph break ran ops that "
                  "write tensors, so this call cannot be run again eagerly: ", what);
      entry.reason = "capture failed: " + what;
      return false;
    }
  }
  return true;
}

std::vector<at::Tensor>
detail::Engine::Impl::capture(const std::vector<at::Tensor> &inputs,
                              const Body &body, Entry &entry) {
  counters().captures++;
  std::unique_ptr<TraceContext> ctx;
  std::vector<at::Tensor> reals;
  if (!trace(inputs, body, entry, ctx, reals))
    return fallBack("running eagerly: " + entry.reason, [&] { return body(inputs); });
  if (ctx->hadBreaks()) {
    entry.lazy = true;
    return reals;
  }
  entry.exe.guards = ctx->guards().size();
  entry.exe.lift(ctx->lifted());
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), entry.exe.lifted.begin(), entry.exe.lifted.end());
  const Segment *seg = &ctx->segment();
  Frozen frozen;
  if (options.freeze && !needsTraining(all)) {
    std::string why;
    FreezeOptions fo;
    fo.autotune = options.mode == Mode::MaxAutotune;
    fo.cache = config.cache;
    if (freezeSegment(*seg, inputs.size(), entry.exe.lifted, entry.exe.guards, frozen, why, fo)) {
      counters().frozenGraphs++;
      counters().foldedOps += frozen.foldedOps + frozen.foldedBatchNorms;
      counters().onednnConvolutions += frozen.fusedConvolutions;
      counters().atenConvolutions += frozen.atenConvolutions;
      counters().packedLinears += frozen.packedLinears;
      entry.exe.lift(frozen.kept);
      entry.exe.constants = frozen.constants;
      entry.exe.guardFrozen(frozen.sources);
      seg = &frozen.segment;
      all = inputs;
      all.insert(all.end(), frozen.kept.begin(), frozen.kept.end());
      all.insert(all.end(), frozen.constants.begin(), frozen.constants.end());
    } else {
      log("freeze", "not frozen: " + why);
    }
  }
  if (!compileSegment(*seg, all, config, entry.exe, entry.reason)) {
    TORCH_CHECK(!options.fullgraph, "tgc::compile(fullgraph=true): ", entry.reason);
    return fallBack("running eagerly: " + entry.reason, [&] { return body(inputs); });
  }
  return runOrFallBack(entry.exe, inputs, body);
}

std::shared_ptr<Entry> detail::Engine::Impl::lookup(const std::string &key,
                                                    const std::vector<at::Tensor> &inputs,
                                                    bool &fresh) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = entries.find(key);
  // A captured tensor resized, re-strided or (un)frozen since: capture again.
  if (it != entries.end() && !it->second->exe.stale()) {
    if (it->second->exe)
      counters().cacheHitsMemory++;
    return it->second;
  }
  // Frozen weights updated in place (an optimizer step): freeze them again.
  // The graph itself is the same (served from memory), so this is not a
  // recompile and does not count against recompile_limit.
  const bool refreeze = it != entries.end() && it->second->exe.weightsChanged();
  if (refreeze) {
    log("recompiles", "frozen weights changed in place; freezing them again");
    auto entry = std::make_shared<Entry>();
    fresh = true;
    return entry;
  }
  checkBackend(options, inputs);
  auto entry = std::make_shared<Entry>();
  if (compiles >= options.recompile_limit) {
    if (!limitLogged)
      warn("recompile_limit (" + std::to_string(options.recompile_limit) +
           ") reached; this callable runs eagerly for new input properties. "
           "The guard that kept failing was the input signature " + key);
    limitLogged = true;
    entry->reason = "recompile_limit reached";
    return entry;
  }
  if (compiles > 0) {
    counters().recompiles++;
    log("recompiles", "guard miss, recompiling for " + key);
  }
  compiles++;
  entry->reason = unsupported(inputs);
  fresh = entry->reason.empty();
  if (!fresh)
    entries[key] = entry;
  return entry;
}

std::vector<at::Tensor>
detail::Engine::Impl::captureFresh(const std::string &key, const std::vector<at::Tensor> &inputs,
                                   const Body &body, const std::shared_ptr<Entry> &entry) {
  // The first call of a specialization captures and runs it, then publishes
  // the entry; concurrent first calls each capture (the segment cache
  // compiles each graph once) and the first published entry wins.
  try {
    std::vector<at::Tensor> out = capture(inputs, body, *entry);
    std::lock_guard<std::mutex> lock(mutex);
    auto [it, added] = entries.emplace(key, entry);
    if (!added && it->second->exe.stale())
      it->second = entry; // replaces a specialization whose weights changed
    return out;
  } catch (const GraphBreak &b) {
    TORCH_CHECK(!options.fullgraph, "tgc::compile(fullgraph=true): graph break at ", b.op, ": ",
                b.reason);
    throw;
  }
}

detail::Engine::Engine(Options options) : impl_(std::make_unique<Impl>()) {
  if (options.dynamic)
    throw std::invalid_argument(
        "tgc::compile: Options::dynamic = true is not implemented yet (issue 19, symbolic "
        "shapes); leave it false: shapes are specialized and each new shape recompiles, up to "
        "recompile_limit");
  backendDevice(options.backend); // rejects a value outside the enum
  const ModeInfo &mode = modeInfo(options.mode);
  warnUnimplemented(mode);
  impl_->config.options = std::string("mode=") + mode.name;
  impl_->config.fullgraph = options.fullgraph;
  impl_->config.fuseAttention = options.fuse_attention;
  if (!options.cache_dir.empty())
    impl_->config.cache = &ArtifactCache::forDirectory(options.cache_dir);
  impl_->options = std::move(options);
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
  bool fresh = false;
  std::shared_ptr<Entry> entry = impl_->lookup(key, inputs, fresh);
  if (fresh)
    return impl_->captureFresh(key, inputs, body, entry);
  if (entry->exe)
    return runOrFallBack(entry->exe, inputs, body);
  if (entry->lazy) {
    Entry scratch;
    scratch.predict = entry->predict.load();
    std::vector<at::Tensor> out = impl_->capture(inputs, body, scratch);
    entry->predict = scratch.predict.load();
    if (!scratch.lazy && !scratch.exe) // it failed: later calls run eagerly, not retry
      impl_->remember(key, scratch.reason);
    return out;
  }
  return fallBack("running eagerly: " + entry->reason, [&] { return body(inputs); });
}

void reset() {
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    for (detail::Engine *e : registry())
      e->clear();
  }
  clearCompiledSegments();
  resetCounters();
  resetProfiles();
}

std::string profile() { return profileReport(); }

void detail::Engine::clear() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->entries.clear();
  impl_->compiles = 0;
  impl_->limitLogged = false;
}

Explanation detail::explainCall(
    const std::vector<at::Tensor> &inputs,
    const std::function<std::vector<at::Tensor>(const std::vector<at::Tensor> &)> &body) {
  SegmentRunner runner = [](const Segment &seg, const std::vector<at::Tensor> &in) {
    return runSegment(seg, in, defaultConfig());
  };
  // As the JIT captures: predictions first, then without if one is dropped.
  std::unique_ptr<TraceContext> captured;
  for (bool speculate : {true, false}) {
    auto ctx = std::make_unique<TraceContext>(deviceOf(inputs), runner);
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
