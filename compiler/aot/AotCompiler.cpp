//===- AotCompiler.cpp - load, cut, capture, compile and package ----------===//
#include "compiler/aot/AotCompiler.h"

#include "compiler/aot/RegionCapture.h"
#include "compiler/aot/Regions.h"
#include "compiler/Executable.h"
#include "runtime/ArtifactCache.h"
#include "runtime/Backend.h"
#include "runtime/HostCompiler.h"
#include "runtime/Nvrtc.h"
#include "runtime/PackageFormat.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/serialization/import.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>

namespace tgc {

using nlohmann::json;
using Kind = AotError::Kind;

namespace {

std::string firstLine(const std::string &s) { return s.substr(0, s.find('\n')); }

/// The gist of an error: the interpreter prefixes a traceback, the message
/// proper follows its last "Error: ".
std::string gist(const std::string &s) {
  size_t at = s.rfind("Error: ");
  if (s.rfind("The following operation failed", 0) != 0 || at == std::string::npos)
    return firstLine(s);
  std::string rest = s.substr(at + 7);
  size_t start = rest.find_first_not_of(" \n");
  return firstLine(start == std::string::npos ? rest : rest.substr(start));
}

/// Loads, checks and freezes the model; `inputs` are put in forward's order.
torch::jit::Module loadFrozen(const AotOptions &o, std::vector<InputSpec> &inputs) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.model, ec))
    throw AotError(Kind::Model, "cannot read model " + o.model + ": no such file");
  torch::jit::Module module;
  try {
    module = torch::jit::load(o.model);
  } catch (const c10::Error &e) {
    throw AotError(Kind::Model, o.model + " is not a TorchScript module (save one with "
                                          "torch.jit.save): " +
                                    firstLine(e.what_without_backtrace()));
  }
  if (!module.find_method("forward"))
    throw AotError(Kind::Model, o.model + " has no forward method");
  const auto &args = module.get_method("forward").function().getSchema().arguments();
  std::vector<std::string> names;
  for (size_t i = 1; i < args.size(); ++i)
    names.push_back(args[i].name());
  std::string signature;
  for (const std::string &n : names)
    signature += (signature.empty() ? "" : ", ") + n;
  if (o.inputs.size() != names.size())
    throw AotError(Kind::Usage, "forward(" + signature + ") takes " +
                                    std::to_string(names.size()) + " input(s); " +
                                    std::to_string(o.inputs.size()) + " --input given");
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = std::find_if(o.inputs.begin(), o.inputs.end(),
                           [&](const InputSpec &s) { return s.name == names[i]; });
    if (it == o.inputs.end())
      throw AotError(Kind::Usage, "no --input names forward's argument '" + names[i] +
                                      "' (forward(" + signature + "))");
    if (args[i + 1].type()->kind() != c10::TypeKind::TensorType)
      throw AotError(Kind::Model, "forward's argument '" + names[i] + "' is a " +
                                      args[i + 1].type()->str() + "; packages take tensors");
    inputs.push_back(*it);
  }
  try {
    module.eval();
    return torch::jit::freeze(module);
  } catch (const c10::Error &e) {
    throw AotError(Kind::Model, "cannot freeze " + o.model + ": " +
                                    firstLine(e.what_without_backtrace()));
  }
}

/// Runs the cut graph on every sample with a CaptureTable current.
CaptureTable runSamples(const std::shared_ptr<torch::jit::Graph> &graph,
                        const Partition &part, const torch::jit::Module &module,
                        const std::vector<InputSpec> &inputs, int samples,
                        const AotProgress &progress) {
  CaptureTable table(part.regions);
  torch::jit::GraphFunction fn("forward", graph, nullptr);
  for (int s = 0; s < samples; ++s) {
    if (progress)
      progress("capture", s, samples);
    torch::jit::Stack stack{module._ivalue()};
    for (const at::Tensor &t : randomInputs(inputs, 1234 + s, s % 3))
      stack.emplace_back(t);
    try {
      SegmentTableScope scope(&table);
      fn.run(stack);
    } catch (const AotError &) {
      throw;
    } catch (const std::exception &e) {
      std::string specs;
      for (const InputSpec &i : inputs)
        specs += " " + i.str();
      const auto *c10e = dynamic_cast<const c10::Error *>(&e);
      throw AotError(Kind::Model, "the model fails on random inputs" + specs + ": " +
                                      gist(c10e ? c10e->what_without_backtrace() : e.what()));
    }
  }
  return table;
}

/// A captured segment's plan and kernels as package sections.
struct BuiltSegment {
  std::vector<SectionInput> sections;
  json meta;
  int kernels = 0;
  std::string error; ///< the pipeline could not compile it
};

/// Builds segment `id` through the JIT's graph cache and its backend (the
/// kernel cache), loads it as the JIT would (CPU), and lays its artifacts
/// out as package sections.
BuiltSegment buildSegment(int64_t id, const Segment &captured, const AotOptions &o,
                          const CompileConfig &config, AotSummary &summary) {
  BuiltSegment b;
  const DeviceBackend &backend = *backendFor(o.backend);
  const Segment moved = captured.on(o.backend);
  Segment storage;
  const Segment &seg = withFusedAttention(moved, config, storage);
  Plan plan;
  bool planCached = false;
  std::string error;
  if (!planSegment(seg, config, plan, error, &planCached)) {
    b.error = "the pipeline cannot compile it: " + firstLine(error);
    return b;
  }
  summary.graphsFromCache += planCached;
  const std::vector<std::string> archs =
      o.backend == "cuda" ? o.archs : std::vector<std::string>{"host"};
  KernelImages images;
  if (!backend.build(plan, archs, images, error))
    throw AotError(Kind::Compile, "segment " + std::to_string(id) + ": " + error);
  summary.kernelsCompiled += images.compiled;
  summary.kernelsCached += images.cached;
  // What a package loads: a graph that does not load here is not written.
  if (o.backend == "cpu" && !backend.load(plan, images, error))
    throw AotError(Kind::Compile, "segment " + std::to_string(id) + " does not load: " + error);

  const std::string tag = std::to_string(id);
  b.meta = {{"id", id}, {"status", "compiled"}, {"plan", "plan." + tag},
            {"ops", seg.nodes.size()}, {"kernels", json::array()}, {"guards", json::array()}};
  for (int v : plan.inputs)
    b.meta["guards"].push_back(guardText(plan.values[v]));
  b.sections.push_back({"plan." + tag, serializePlan(plan), o.compress});
  if (!images.object.empty()) {
    const std::string section = "cpu." + tag + ".so";
    b.sections.push_back({section, images.object, o.compress});
    b.meta["object"] = section;
    for (const KernelStep &k : plan.kernels)
      b.meta["kernels"].push_back({{"name", k.name}, {"sections", {section}}});
  }
  if (!images.cubins.empty()) {
    // cubins[a][k] and ptx[k] as KernelImages holds them (Package.cpp reads them back).
    b.meta["cubins"] = json::array();
    b.meta["ptx"] = json::array();
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      const std::string &name = plan.kernels[k].name;
      json kernel{{"name", name}, {"sections", json::array()}};
      for (size_t a = 0; a < images.archs.size(); ++a) {
        const std::string section = "cuda." + tag + "." + name + "." + images.archs[a] + ".cubin";
        b.sections.push_back({section, images.cubins[a][k], o.compress});
        if (k == 0)
          b.meta["cubins"].push_back(json::array());
        b.meta["cubins"][a].push_back(section);
        kernel["sections"].push_back(section);
      }
      const std::string ptx = "cuda." + tag + "." + name + ".ptx";
      b.sections.push_back({ptx, images.ptx[k], o.compress});
      b.meta["ptx"].push_back(ptx);
      kernel["sections"].push_back(ptx);
      b.meta["kernels"].push_back(kernel);
    }
  }
  b.kernels = plan.kernels.size();
  return b;
}

} // namespace

namespace {

/// Cuts and captures until no region breaks: each round leaves the nodes
/// the tracer broke at to TorchScript and cuts again.
struct CaptureResult {
  std::map<int64_t, std::string> excluded;
  std::map<int64_t, CapturedRegion> captured;
};

CaptureResult captureRegions(const std::shared_ptr<torch::jit::Graph> &pristine,
                             const torch::jit::Module &module,
                             const std::vector<InputSpec> &inputs, const AotOptions &o,
                             const AotProgress &progress) {
  CaptureResult c;
  for (int round = 0; round < 32; ++round) {
    std::shared_ptr<torch::jit::Graph> graph = pristine->copy();
    Partition part = partitionGraph(*graph, c.excluded);
    if (!part.recut.empty()) {
      c.excluded.insert(part.recut.begin(), part.recut.end());
      continue;
    }
    CaptureTable table = runSamples(graph, part, module, inputs, o.samples, progress);
    c.captured = table.captured();
    if (table.breaks().empty())
      return c;
    c.excluded.insert(table.breaks().begin(), table.breaks().end());
  }
  throw AotError(Kind::Compile, "capture did not settle after 32 rounds of graph breaks");
}

void checkOptions(const AotOptions &o) {
  if (o.backend != "cpu" && o.backend != "cuda")
    throw AotError(Kind::Usage, "--backend must be cpu or cuda, not '" + o.backend + "'");
  if (o.mode != "default" && o.mode != "max-autotune")
    throw AotError(Kind::Usage, "--mode must be default or max-autotune, not '" + o.mode + "'");
  if (o.backend == "cuda" && o.archs.empty())
    throw AotError(Kind::Usage, "--backend cuda needs --arch (e.g. --arch sm_90); "
                                "kernels are built with NVRTC, no GPU needed");
  if (o.backend == "cpu" && !o.archs.empty())
    throw AotError(Kind::Usage, "--arch is for --backend cuda");
  for (const std::string &a : o.archs)
    if (a.size() < 5 || a.rfind("sm_", 0) != 0 ||
        a.find_first_not_of("0123456789", 3) != std::string::npos)
      throw AotError(Kind::Usage, "--arch '" + a + "' is not of the form sm_XY (e.g. sm_90)");
  if (o.samples < 1)
    throw AotError(Kind::Usage, "--samples must be at least 1");
}

json metadata(const AotOptions &o, const std::vector<InputSpec> &inputs,
              const Partition &part) {
  json meta{{"format", kPackageFormat},
            {"tgc_version", kTgcVersion},
            {"torch_version", torchVersionString()},
            {"backend", o.backend},
            {"archs", o.archs},
            {"mode", o.mode},
            {"fullgraph", o.fullgraph},
            {"model", std::filesystem::path(o.model).filename().string()},
            {"inputs", json::array()},
            {"segments", json::array()},
            {"eager_ops", json::array()}};
  meta["toolchain"] = o.backend == "cuda" ? "nvrtc " + nvrtcVersion() : hostCompilerVersion();
  for (const InputSpec &s : inputs)
    meta["inputs"].push_back({{"name", s.name}, {"spec", s.str()}});
  for (const KeptNode &k : part.kept)
    if (!k.plumbing)
      meta["eager_ops"].push_back({{"op", k.op}, {"reason", k.reason}});
  return meta;
}

/// The first thing --fullgraph forbids, or "".
std::string fullgraphBreak(const Partition &part, const json &segments) {
  for (const KeptNode &k : part.kept)
    if (!k.plumbing)
      return "graph break at " + k.op + ": " + k.reason;
  for (const json &s : segments)
    if (s.at("status") != "compiled")
      return "segment " + std::to_string(s.at("id").get<int>()) + " is not compiled: " +
             s.at("reason").get<std::string>();
  return "";
}

} // namespace

AotSummary compilePackage(const AotOptions &o, const AotProgress &progress) {
  auto start = std::chrono::steady_clock::now();
  checkOptions(o);
  // A bad signing key fails before the compile, not after it.
  std::optional<SigningKey> key;
  if (!o.signingKey.empty()) {
    try {
      key = parseSecretKey(o.signingKey);
    } catch (const std::invalid_argument &e) {
      throw AotError(Kind::Usage, std::string("the signing key does not parse: ") + e.what());
    }
  }
  // The JIT's caches: a model the JIT compiled already reuses its graphs and kernels.
  CompileConfig config;
  if (!o.cacheDir.empty())
    config.cache = &ArtifactCache::forDirectory(o.cacheDir);
  config.options = "mode=" + o.mode;
  CacheScope scope(*config.cache);
  std::vector<InputSpec> inputs;
  torch::jit::Module frozen = loadFrozen(o, inputs);
  at::NoGradGuard noGrad;
  torch::jit::GraphOptimizerEnabledGuard noJitFusion(false);
  std::shared_ptr<torch::jit::Graph> graph =
      torch::jit::toGraphFunction(frozen.get_method("forward").function()).graph();
  prepareGraph(graph);
  CaptureResult cap = captureRegions(graph->copy(), frozen, inputs, o, progress);
  AotSummary summary;
  Partition part = partitionGraph(*graph, cap.excluded);
  if (!part.recut.empty())
    throw AotError(Kind::Compile, "internal error: the final partition splits an in-place "
                                  "write from the tensor it writes");

  json meta = metadata(o, inputs, part);
  std::vector<SectionInput> sections;
  for (const Region &r : part.regions) {
    if (progress)
      progress("compile", r.id, part.regions.size());
    const CapturedRegion &c = cap.captured[r.id];
    BuiltSegment b;
    if (c.state == CapturedRegion::Captured)
      b = buildSegment(r.id, c.segment, o, config, summary);
    else
      b.error = c.state == CapturedRegion::Failed
                    ? c.reason
                    : "not reached by the sample inputs (a branch not taken)";
    if (!b.error.empty()) {
      meta["segments"].push_back({{"id", r.id}, {"status", "eager"}, {"reason", b.error}});
      summary.segmentsEager++;
      continue;
    }
    meta["segments"].push_back(b.meta);
    sections.insert(sections.end(), b.sections.begin(), b.sections.end());
    summary.segmentsCompiled++;
    summary.kernels += b.kernels;
  }
  if (o.fullgraph)
    if (std::string why = fullgraphBreak(part, meta["segments"]); !why.empty())
      throw AotError(Kind::Model, "--fullgraph: " + why);
  std::map<std::string, int> eagerOps;
  for (const json &e : meta["eager_ops"])
    eagerOps[e.at("op").get<std::string>() + ": " + e.at("reason").get<std::string>()]++;
  for (const auto &[op, n] : eagerOps)
    summary.eagerOps.push_back(op + (n > 1 ? " (x" + std::to_string(n) + ")" : ""));

  if (progress)
    progress("write", 0, 1);
  std::ostringstream module;
  frozen.save(module);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  meta["compile_seconds"] = summary.seconds;
  sections.insert(sections.begin(), {{"meta.json", meta.dump(2)}, {"module.pt", module.str(), o.compress}});
  std::string bytes = encodePackage(sections, key ? &*key : nullptr);
  if (!writeFileAtomic(o.output, bytes))
    throw AotError(Kind::Io, "cannot write " + o.output);
  summary.bytes = bytes.size();
  if (progress)
    progress("write", 1, 1);
  return summary;
}

} // namespace tgc
