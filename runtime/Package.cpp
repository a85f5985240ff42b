//===- Package.cpp - loading a package and running it ---------------------===//
#include "tgc/Package.h"

#include "runtime/ArtifactCache.h"
#include "runtime/Backend.h"
#include "runtime/Log.h"
#include "runtime/PackageFormat.h"
#include "runtime/SegmentOps.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/serialization/import.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <sstream>

namespace tgc {

namespace {

using Kind = PackageError::Kind;
using nlohmann::json;

/// `f32[1,3,64,64]`: a spec without name and range.
std::string layoutText(c10::ScalarType dtype, c10::IntArrayRef shape) {
  std::string text = InputSpec{"", dtype, shape.vec()}.str();
  return text.substr(1, text.find(']'));
}

std::string describe(const at::Tensor &t) {
  if (!t.defined())
    return "an undefined tensor";
  return layoutText(t.scalar_type(), t.sizes()) + " on " + t.device().str();
}

/// The run-time SegmentTable: compiled segments by id.
class PackageTable final : public SegmentTable {
public:
  bool guard(int64_t id, const std::vector<at::Tensor> &inputs) override {
    auto it = segments.find(id);
    bool ok = it != segments.end();
    if (ok) {
      const Plan &plan = it->second->plan();
      ok = inputs.size() == plan.inputs.size();
      const DeviceBackend *backend = backendFor(plan.device);
      for (size_t i = 0; ok && i < inputs.size(); ++i)
        ok = backend->fits(inputs[i], plan.values[plan.inputs[i]]);
      if (!ok)
        log("fallbacks", "package segment " + std::to_string(id) +
                             ": guard miss, running its TorchScript ops");
    }
    if (!ok)
      eager++;
    return ok;
  }
  std::vector<at::Tensor> run(int64_t id, const std::vector<at::Tensor> &inputs) override {
    compiled++;
    ran.push_back(id);
    return segments.at(id)->run(inputs);
  }
  std::map<int64_t, std::shared_ptr<CompiledGraph>> segments;
  int64_t compiled = 0, eager = 0;
  std::vector<int64_t> ran;
};

} // namespace

std::vector<at::Tensor> flattenOutputs(const c10::IValue &out) {
  if (out.isTensor())
    return {out.toTensor()};
  std::vector<at::Tensor> flat;
  if (out.isTuple()) {
    for (const c10::IValue &e : out.toTupleRef().elements())
      for (const at::Tensor &t : flattenOutputs(e))
        flat.push_back(t);
    return flat;
  }
  if (out.isTensorList())
    return out.toTensorVector();
  throw PackageError(Kind::Format, "the packaged program returned a " + out.tagKind() +
                                       "; packages return tensors, tuples or lists of them");
}

struct Package::Impl {
  std::string path;
  json meta;
  std::vector<InputSpec> inputs;
  std::vector<PackageSection> sections;
  uint64_t fileBytes = 0;
  mutable torch::jit::Module module;
  mutable PackageTable table;
  mutable std::mutex mutex; ///< one run at a time (stats, module state)

  void loadSegments(const DecodedPackage &pkg);
  void checkInputs(const std::vector<at::Tensor> &given) const;
};

void Package::Impl::loadSegments(const DecodedPackage &pkg) {
  auto section = [&](const std::string &name) -> const std::string & {
    auto it = pkg.sections.find(name);
    if (it == pkg.sections.end())
      throw PackageError(Kind::Format, path + ": section " + name + " is missing");
    return it->second;
  };
  const DeviceBackend *backend = backendFor(meta.at("backend"));
  if (!backend)
    throw PackageError(Kind::Format, path + ": unknown backend " + meta.at("backend").dump());
  const std::vector<std::string> archs = meta.value("archs", std::vector<std::string>{});
  for (const json &s : meta.at("segments")) {
    if (s.at("status") != "compiled")
      continue;
    int64_t id = s.at("id");
    const std::string where = path + ": segment " + std::to_string(id);
    Plan plan;
    std::string error;
    if (!deserializePlan(section(s.at("plan")), plan, error))
      throw PackageError(Kind::Format, where + ": " + error);
    if (backendFor(plan.device) != backend)
      throw PackageError(Kind::Format, where + ": its plan is for " + plan.device +
                                           ", the package for " + backend->name());
    for (const json &k : s.value("kernels", json::array()))
      for (const json &file : k.at("sections"))
        section(file);
    // The kernels as the backend built them (see tgc-aot's writer).
    KernelImages images;
    if (s.contains("object")) {
      images.object = section(s.at("object"));
      images.objectKey = path + ":" + s.at("object").get<std::string>();
    }
    if (s.contains("cubins")) {
      images.archs = archs;
      for (const json &perArch : s.at("cubins")) {
        images.cubins.emplace_back();
        for (const json &name : perArch)
          images.cubins.back().push_back(section(name));
      }
      for (const json &name : s.value("ptx", json::array()))
        images.ptx.push_back(section(name));
    }
    std::shared_ptr<CompiledGraph> g = backend->load(std::move(plan), images, error);
    if (!g)
      throw PackageError(Kind::Format, where + " does not load: " + error);
    table.segments[id] = g;
  }
}

Package Package::load(const std::string &path, const LoadOptions &options) {
  std::vector<std::string> trusted;
  for (const std::string &k : options.trusted_keys) {
    try {
      trusted.push_back(parsePublicKey(k));
    } catch (const std::invalid_argument &e) {
      throw PackageError(Kind::Signature, "a trusted key for " + path + " does not parse: " +
                                              e.what());
    }
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw PackageError(Kind::Io, "cannot read package " + path + ": no such file");
  auto impl = std::make_shared<Impl>();
  impl->path = path;
  std::string bytes;
  if (!readFile(path, bytes))
    throw PackageError(Kind::Io, "cannot read package " + path);
  DecodedPackage pkg = decodePackage(bytes, path, trusted);
  impl->fileBytes = bytes.size();
  impl->sections = pkg.infos;
  try {
    impl->meta = json::parse(pkg.sections.at("meta.json"));
    for (const json &in : impl->meta.at("inputs"))
      impl->inputs.push_back(parseInputSpec(in.at("spec")));
    impl->meta.at("segments").size();
    impl->meta.at("backend").get<std::string>();
  } catch (const std::exception &e) {
    throw PackageError(Kind::Format, path + ": meta.json is missing or malformed: " + e.what());
  }
  if (!pkg.sections.count("module.pt"))
    throw PackageError(Kind::Format, path + ": section module.pt is missing");
  try {
    std::istringstream in(pkg.sections.at("module.pt"));
    impl->module = torch::jit::load(in);
  } catch (const c10::Error &e) {
    throw PackageError(Kind::Format, path + ": module.pt does not load as TorchScript: " +
                                         e.what_without_backtrace());
  }
  impl->loadSegments(pkg);
  Package p;
  p.impl_ = std::move(impl);
  return p;
}

void Package::Impl::checkInputs(const std::vector<at::Tensor> &given) const {
  std::string expected;
  for (const InputSpec &s : inputs)
    expected += (expected.empty() ? "" : ", ") + s.str();
  if (given.size() != inputs.size())
    throw PackageError(Kind::Input, "the package takes " + std::to_string(inputs.size()) +
                                        " input(s) (" + expected + "), got " +
                                        std::to_string(given.size()));
  for (size_t i = 0; i < given.size(); ++i) {
    const InputSpec &s = inputs[i];
    const at::Tensor &t = given[i];
    if (t.defined() && t.device().is_cpu() && t.scalar_type() == s.dtype &&
        t.sizes() == c10::IntArrayRef(s.shape))
      continue;
    throw PackageError(Kind::Input, "input '" + s.name + "' (#" + std::to_string(i) +
                                        "): expected " + layoutText(s.dtype, s.shape) +
                                        " on cpu, got " + describe(t));
  }
}

std::vector<at::Tensor> Package::run(const std::vector<at::Tensor> &inputs) const {
  Impl &impl = *impl_;
  if (backend() != "cpu") {
    std::string archList;
    for (const std::string &a : archs())
      archList += (archList.empty() ? "" : ", ") + a;
    throw PackageError(Kind::Device,
                       impl.path + " targets " + backend() + " (" + archList +
                           "); running CUDA packages is not implemented yet: the packaged "
                           "program and its weights run on the CPU (its kernels do load "
                           "through the CUDA backend). Compile with --backend cpu to run "
                           "on this machine.");
  }
  impl.checkInputs(inputs);
  std::vector<c10::IValue> args;
  for (const at::Tensor &t : inputs)
    args.emplace_back(t.is_contiguous() ? t : t.contiguous());
  std::lock_guard<std::mutex> lock(impl.mutex);
  impl.table.compiled = 0;
  impl.table.eager = 0;
  impl.table.ran.clear();
  SegmentTableScope scope(&impl.table);
  at::NoGradGuard noGrad;
  // The JIT's own fusers and profiling passes stay off: tgc compiled it.
  torch::jit::GraphOptimizerEnabledGuard noJitFusion(false);
  return flattenOutputs(impl.module.forward(args));
}

const std::vector<InputSpec> &Package::inputs() const { return impl_->inputs; }
std::string Package::backend() const { return impl_->meta.at("backend"); }
std::vector<std::string> Package::archs() const {
  return impl_->meta.value("archs", std::vector<std::string>{});
}
std::string Package::metadataJson() const { return impl_->meta.dump(2); }
const std::vector<PackageSection> &Package::sections() const { return impl_->sections; }
uint64_t Package::fileBytes() const { return impl_->fileBytes; }
PackageRunStats Package::lastRunStats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return {impl_->table.compiled, impl_->table.eager, impl_->table.ran};
}

} // namespace tgc
