//===- Commands.cpp - tgc-aot compile, run and inspect --------------------===//
#include "tools/tgc-aot/Commands.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <nlohmann/json.hpp>

#include "runtime/ArtifactCache.h"
#include "runtime/PackageFormat.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <unistd.h>

namespace tgc {

namespace {

using nlohmann::json;

int fail(int code, const std::string &message) {
  std::cerr << "tgc-aot: error: " << message << "\n";
  return code;
}

int exitFor(const PackageError &e) {
  switch (e.kind()) {
  case PackageError::Kind::Input: return kExitUsage;
  case PackageError::Kind::Device: return kExitNoDevice;
  case PackageError::Kind::Signature: return kExitUntrusted;
  default: return kExitBadPackage;
  }
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
class ProgressBar {
public:
  explicit ProgressBar(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO)) {}
  ~ProgressBar() { done(); }
  void update(const std::string &stage, int done, int total) {
    if (!enabled_)
      return;
    constexpr int kWidth = 30;
    int filled = total > 0 ? kWidth * done / total : 0;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "\r%-8s [%s%s] %d/%d  %.1fs ", stage.c_str(),
                 std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                 done, total, seconds);
    std::fflush(stderr);
    drawn_ = true;
  }
  void done() {
    if (drawn_)
      std::fputs("\n", stderr);
    drawn_ = false;
  }

private:
  bool enabled_, drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// Reads a tensor written by torch.save (Python) or torch::save (C++).
at::Tensor loadTensor(const std::string &name, const std::string &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw PackageError(PackageError::Kind::Input, "--input " + name + "=" + file +
                                                      ": cannot read " + file);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    c10::IValue v = torch::jit::pickle_load(bytes);
    if (v.isTensor())
      return v.toTensor();
  } catch (const c10::Error &) {
  }
  throw PackageError(PackageError::Kind::Input, "--input " + name + "=" + file +
                                                    ": not a tensor saved by torch.save");
}

std::vector<at::Tensor> runInputs(const Package &pkg, const RunOptions &o) {
  std::vector<at::Tensor> inputs = randomInputs(pkg.inputs(), o.seed);
  for (const std::string &given : o.inputs) {
    size_t eq = given.find('=');
    if (eq == std::string::npos)
      throw PackageError(PackageError::Kind::Input,
                         "--input '" + given + "' must be NAME=FILE (a torch.save'd tensor)");
    std::string name = given.substr(0, eq);
    size_t k = 0;
    while (k < pkg.inputs().size() && pkg.inputs()[k].name != name)
      ++k;
    if (k == pkg.inputs().size())
      throw PackageError(PackageError::Kind::Input, "--input " + name + ": the package has "
                                                        "no input of that name");
    inputs[k] = loadTensor(name, given.substr(eq + 1));
  }
  return inputs;
}

/// Default tolerances of a comparison with eager, by dtype.
std::pair<double, double> tolerances(c10::ScalarType t) {
  switch (t) {
  case c10::kDouble: return {1e-8, 1e-7};
  case c10::kFloat: return {1e-4, 1e-4};
  case c10::kHalf: return {1e-2, 1e-2};
  case c10::kBFloat16: return {2e-2, 2e-2};
  default: return {0, 0};
  }
}

/// Compares with eager TorchScript; prints the max error of each output.
int checkAgainst(const std::vector<at::Tensor> &outs, const std::vector<at::Tensor> &inputs,
                 const RunOptions &o, bool quiet) {
  torch::jit::Module model;
  try {
    model = torch::jit::load(o.model);
  } catch (const c10::Error &e) {
    return fail(kExitBadModel, o.model + " is not a TorchScript module: " +
                                   std::string(e.what_without_backtrace()).substr(0, 200));
  }
  model.eval();
  std::vector<c10::IValue> args(inputs.begin(), inputs.end());
  at::NoGradGuard noGrad;
  std::vector<at::Tensor> ref = flattenOutputs(model.forward(args));
  if (ref.size() != outs.size())
    return fail(kExitFailure, "the package returned " + std::to_string(outs.size()) +
                                  " outputs, eager " + std::to_string(ref.size()));
  bool ok = true;
  for (size_t i = 0; i < ref.size(); ++i) {
    auto [atol, rtol] = tolerances(ref[i].scalar_type());
    atol = o.atol >= 0 ? o.atol : atol;
    rtol = o.rtol >= 0 ? o.rtol : rtol;
    bool same = outs[i].sizes() == ref[i].sizes() && outs[i].dtype() == ref[i].dtype();
    at::Tensor got = outs[i].to(c10::kDouble), want = ref[i].to(c10::kDouble);
    double err = same ? got.sub(want).abs().max().item<double>() : INFINITY;
    bool close = same && got.allclose(want, rtol, atol);
    ok &= close;
    if (!quiet || !close)
      std::printf("output %zu: max abs error %.3g vs eager (atol %g, rtol %g): %s\n", i, err,
                  atol, rtol, close ? "ok" : "MISMATCH");
  }
  return ok ? kExitOk : fail(kExitFailure, "outputs differ from eager " + o.model +
                                               " beyond the tolerances");
}

std::string humanBytes(uint64_t b) {
  char buf[32];
  if (b >= (1u << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)b);
  return buf;
}

} // namespace

int compileCommand(AotOptions options, const std::vector<std::string> &inputs, bool quiet) {
  if (!options.signingKey.empty()) { // a path until here; compilePackage parses the key first
    std::string text;
    if (!readKeyFile(options.signingKey, text))
      return kExitUsage;
    options.signingKey = text;
  }
  try {
    for (const std::string &text : inputs)
      options.inputs.push_back(parseInputSpec(text));
  } catch (const std::invalid_argument &e) {
    return fail(kExitUsage, e.what());
  }
  ProgressBar bar(!quiet);
  AotSummary s;
  try {
    s = compilePackage(options, [&](const std::string &stage, int done, int total) {
      bar.update(stage, done, total);
    });
  } catch (const AotError &e) {
    bar.done();
    switch (e.kind()) {
    case AotError::Kind::Usage: return fail(kExitUsage, e.what());
    case AotError::Kind::Model: return fail(kExitBadModel, e.what());
    default: return fail(kExitFailure, e.what());
    }
  } catch (const std::exception &e) {
    bar.done();
    return fail(kExitFailure, std::string("compiling ") + options.model + " failed: " + e.what());
  }
  bar.done();
  if (!quiet) {
    std::printf("wrote %s: %d segment(s) compiled, %d left to TorchScript, %d kernel(s) "
                "(%lld built, %lld from the cache), %s, in %.1f s\n",
                options.output.c_str(), s.segmentsCompiled, s.segmentsEager, s.kernels,
                (long long)s.kernelsCompiled, (long long)s.kernelsCached,
                humanBytes(s.bytes).c_str(), s.seconds);
    for (const std::string &op : s.eagerOps)
      std::printf("  runs as TorchScript: %s\n", op.c_str());
  }
  return kExitOk;
}

bool readKeyFile(const std::string &path, std::string &text) {
  if (readFile(path, text))
    return true;
  std::cerr << "tgc-aot: error: cannot read key file " << path << "\n";
  return false;
}

int keygenCommand(const std::string &name, bool quiet) {
  const std::string secret = name + ".key", pub = name + ".pub";
  std::error_code ec;
  if (std::filesystem::exists(secret, ec) || std::filesystem::exists(pub, ec))
    return fail(kExitUsage, secret + " or " + pub + " exists: not overwriting a key");
  SigningKey key = generateSigningKey();
  if (!writeFileAtomic(secret, secretKeyText(key), 0600) ||
      !writeFileAtomic(pub, publicKeyText(key.publicKey), 0644))
    return fail(kExitFailure, "cannot write " + secret + " and " + pub);
  if (!quiet)
    std::printf("wrote %s (secret: keep it private) and %s (public: give it to whoever loads "
                "your packages)\n",
                secret.c_str(), pub.c_str());
  return kExitOk;
}

int runCommand(const RunOptions &o, bool quiet) {
  try {
    LoadOptions load;
    for (const std::string &file : o.verifyKeys) {
      std::string text;
      if (!readKeyFile(file, text))
        return kExitUsage;
      load.trusted_keys.push_back(text);
    }
    Package pkg = Package::load(o.package, load);
    std::vector<at::Tensor> inputs = runInputs(pkg, o);
    auto start = std::chrono::steady_clock::now();
    std::vector<at::Tensor> outs = pkg.run(inputs);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!quiet) {
      PackageRunStats st = pkg.lastRunStats();
      std::printf("ran %s in %.2f ms: %lld segment run(s) compiled, %lld as TorchScript\n",
                  o.package.c_str(), ms, (long long)st.compiled_segments,
                  (long long)st.eager_segments);
      for (size_t i = 0; i < outs.size(); ++i) {
        InputSpec shape{"out" + std::to_string(i), outs[i].scalar_type(), outs[i].sizes().vec()};
        std::printf("output %zu: %s\n", i, shape.str().c_str() + shape.name.size() + 1);
      }
    }
    return o.model.empty() ? kExitOk : checkAgainst(outs, inputs, o, quiet);
  } catch (const PackageError &e) {
    return fail(exitFor(e), e.what());
  } catch (const std::exception &e) {
    return fail(kExitFailure, std::string("running ") + o.package + " failed: " + e.what());
  }
}

int inspectCommand(const std::string &path, bool asJson) {
  try {
    Package pkg = Package::load(path);
    if (asJson) {
      std::printf("%s\n", pkg.metadataJson().c_str());
      return kExitOk;
    }
    json meta = json::parse(pkg.metadataJson());
    std::printf("package %s: %s\n", path.c_str(), humanBytes(pkg.fileBytes()).c_str());
    std::printf("tgc %s, LibTorch %s, backend %s, mode %s, toolchain %s\n",
                meta.value("tgc_version", "?").c_str(), meta.value("torch_version", "?").c_str(),
                pkg.backend().c_str(), meta.value("mode", "?").c_str(),
                meta.value("toolchain", "?").c_str());
    std::printf("model: %s, compiled in %.1f s\ninputs:\n", meta.value("model", "?").c_str(),
                meta.value("compile_seconds", 0.0));
    for (const InputSpec &s : pkg.inputs())
      std::printf("  %s\n", s.str().c_str());
    std::printf("segments:\n");
    for (const json &s : meta.at("segments")) {
      std::printf("  segment %d: %s", s.at("id").get<int>(), s.at("status").get<std::string>().c_str());
      if (s.at("status") == "compiled") {
        std::printf(", %d ops, %zu kernel(s)\n", s.value("ops", 0), s.at("kernels").size());
        for (const json &g : s.at("guards"))
          std::printf("    guard: %s\n", g.get<std::string>().c_str());
        for (const json &k : s.at("kernels"))
          std::printf("    kernel %s in %s\n", k.at("name").get<std::string>().c_str(),
                      k.at("sections").dump().c_str());
      } else {
        std::printf(" (%s)\n", s.value("reason", "").c_str());
      }
    }
    for (const json &e : meta.at("eager_ops"))
      std::printf("runs as TorchScript: %s: %s\n", e.at("op").get<std::string>().c_str(),
                  e.at("reason").get<std::string>().c_str());
    std::printf("sections:\n");
    for (const PackageSection &s : pkg.sections())
      std::printf("  %-40s %10llu bytes%s\n", s.name.c_str(), (unsigned long long)s.stored,
                  s.compressed ? (" (zstd, " + std::to_string(s.raw) + " raw)").c_str() : "");
    return kExitOk;
  } catch (const PackageError &e) {
    return fail(exitFor(e), e.what());
  } catch (const std::exception &e) {
    return fail(kExitBadPackage, path + ": " + e.what());
  }
}

} // namespace tgc
