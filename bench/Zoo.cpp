//===- Zoo.cpp - tgc-zoo: public models, eager vs tgc::compile ------------===//
//
//   tgc-zoo --dir DIR [--model NAME ...] [--rounds N] [--check] [--json] [--threads N]
//           [--dtype f32|bf16] [--mode default|max-autotune]
//
// Loads each model tests/zoo/make_zoo.py traced into DIR (NAME.pt and its
// input specs NAME.json) twice, runs one copy eagerly and one through
// tgc::compile on the same random inputs, and reports per model: graphs,
// graph breaks per call, kernels and extern calls per call, captures after
// warm-up, the max error against eager (relative to the output's scale),
// the first call's time (capture and compile) and the median eager and tgc
// times of alternating rounds. --check exits 1 unless every model matches
// eager and is one compiled graph: no graph break, no capture after
// warm-up, no eager fallback; --json prints one JSON object per model instead of the
// table (bench/zoo_compare.py reads it).
//
// --dtype bf16 runs both copies in bfloat16 (NAME.bf16.pt, which make_zoo.py
// traces from the same weights, else NAME.pt with its floating weights,
// buffers and inputs converted); the errors are then against the f32 eager
// run of the same inputs, for eager's bf16 run and tgc's, and --check wants
// tgc's within twice eager's (plus 1% of the output's scale).
//
// --mode max-autotune compiles with tgc::Mode::MaxAutotune (the first call
// then includes the tuning; "tuned" counts the candidates benchmarked, 0
// when every choice came from the cache).
//
//===----------------------------------------------------------------------===//
#include <tgc/Package.h>
#include <tgc/tgc.h>

#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Result {
  std::string name, family;
  bool ok = false;
  std::string error;
  int64_t graphs = 0, breaksPerCall = 0, kernelsPerCall = 0, externsPerCall = 0, boxedPerCall = 0;
  int64_t capturesAfterWarmup = 0, fallbacks = 0;
  int64_t tuned = 0; ///< candidates max-autotune benchmarked in the first call
  double maxError = 0, scale = 0;
  double eagerError = 0; ///< bf16: eager's bf16 run against its f32 run
  double firstCallMs = 0, eagerMs = 0, tgcMs = 0;
};

std::vector<at::Tensor> run(const torch::jit::Module &m, const std::vector<at::Tensor> &in) {
  return tgc::flattenOutputs(const_cast<torch::jit::Module &>(m).forward(
      std::vector<c10::IValue>(in.begin(), in.end())));
}

/// The largest |got - want| over all outputs (into `error`), and the
/// largest |want| (into `scale`). `sameType`: the dtypes must agree too.
void compare(const std::vector<at::Tensor> &got, const std::vector<at::Tensor> &want, double &error,
             double &scale, bool sameType = true) {
  if (got.size() != want.size())
    throw std::runtime_error("tgc returned " + std::to_string(got.size()) + " outputs, eager " +
                             std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].sizes() != want[i].sizes() ||
        (sameType && got[i].scalar_type() != want[i].scalar_type()))
      throw std::runtime_error("output " + std::to_string(i) + " has another shape or dtype");
    at::Tensor g = got[i].to(at::kDouble), w = want[i].to(at::kDouble);
    error = std::max(error, (g - w).abs().max().item<double>());
    scale = std::max(scale, w.abs().max().item<double>());
  }
}

/// `m`'s floating parameters and buffers in `dtype`, the others (token
/// type ids, position indices) as they are: what Python's Module.to(dtype)
/// does (the C++ jit::Module::to converts every tensor).
void floatingTo(torch::jit::Module &m, at::ScalarType dtype) {
  for (const torch::jit::Module &sub : m.modules()) {
    for (const auto &p : sub.named_parameters(false))
      if (p.value.is_floating_point())
        p.value.set_data(p.value.to(dtype));
    for (const auto &b : sub.named_buffers(false))
      if (b.value.is_floating_point())
        b.value.set_data(b.value.to(dtype));
  }
}

/// `in` with its floating tensors in `dtype`.
std::vector<at::Tensor> inDtype(const std::vector<at::Tensor> &in, at::ScalarType dtype) {
  std::vector<at::Tensor> out;
  for (const at::Tensor &t : in)
    out.push_back(t.is_floating_point() ? t.to(dtype) : t);
  return out;
}

Result runModel(const std::string &dir, const std::string &name, int rounds, at::ScalarType dtype,
                tgc::Mode mode) {
  Result r;
  r.name = name;
  json meta;
  std::ifstream(dir + "/" + name + ".json") >> meta;
  r.family = meta.at("family");
  std::vector<tgc::InputSpec> specs;
  for (const json &s : meta.at("inputs"))
    specs.push_back(tgc::parseInputSpec(s.get<std::string>()));
  const bool reduced = dtype != at::kFloat;
  torch::jit::Module eager = torch::jit::load(dir + "/" + name + ".pt");
  eager.eval();
  torch::jit::Module reference; // f32, when measuring another dtype
  if (reduced) {
    reference = eager.clone();
  }
  // make_zoo.py traces a bf16 copy too (a graph traced in f32 can hold
  // f32 constants a converted module trips on); without it, the f32 module
  // converted.
  const std::string traced16 = dir + "/" + name + ".bf16.pt";
  const bool own = dtype == at::kBFloat16 && std::filesystem::exists(traced16);
  if (own)
    eager = torch::jit::load(traced16);
  else if (reduced)
    floatingTo(eager, dtype);
  eager.eval();
  torch::jit::Module toCompile = torch::jit::load(own ? traced16 : dir + "/" + name + ".pt");
  if (reduced && !own)
    floatingTo(toCompile, dtype);
  tgc::Options options;
  options.mode = mode;
  auto compiled = tgc::compile(toCompile, options);
  at::NoGradGuard noGrad;
  std::vector<at::Tensor> in32 = tgc::randomInputs(specs, 7);
  std::vector<at::Tensor> in = inDtype(in32, dtype);
  // Errors: against eager in the same dtype, or for a reduced dtype against
  // eager in f32 (and eager's own error so).
  auto check = [&](const std::vector<at::Tensor> &got, const std::vector<at::Tensor> &x32,
                   const std::vector<at::Tensor> &x) {
    if (!reduced)
      return compare(got, run(eager, x), r.maxError, r.scale);
    std::vector<at::Tensor> want = run(reference, x32), mine = run(eager, x);
    double ignored = 0;
    compare(got, mine, ignored, ignored); // shapes and dtypes as eager's
    compare(got, want, r.maxError, r.scale, false);
    compare(mine, want, r.eagerError, r.scale, false);
  };

  tgc::reset();
  auto start = Clock::now();
  std::vector<at::Tensor> got = tgc::flattenOutputs(
      compiled->forward(std::vector<c10::IValue>(in.begin(), in.end())));
  r.firstCallMs = msSince(start);
  r.tuned = tgc::stats().autotune_benchmarks;
  check(got, in32, in);
  r.graphs = tgc::stats().graphs_compiled;
  // Warm-up on fresh inputs of the same properties, then one counted call.
  std::vector<at::Tensor> in2_32 = tgc::randomInputs(specs, 8);
  std::vector<at::Tensor> in2 = inDtype(in2_32, dtype);
  for (int i = 0; i < 2; ++i)
    check(tgc::flattenOutputs(compiled->forward(std::vector<c10::IValue>(in2.begin(), in2.end()))),
          in2_32, in2);
  tgc::Stats before = tgc::stats();
  compiled->forward(std::vector<c10::IValue>(in.begin(), in.end()));
  tgc::Stats after = tgc::stats();
  r.breaksPerCall = after.graph_breaks - before.graph_breaks;
  r.kernelsPerCall = after.kernel_launches - before.kernel_launches;
  r.externsPerCall = after.extern_calls - before.extern_calls;
  r.boxedPerCall = after.boxed_calls - before.boxed_calls;
  r.capturesAfterWarmup = after.captures - before.captures;
  r.fallbacks = after.eager_fallbacks;
  r.graphs = after.graphs_compiled;

  std::vector<c10::IValue> args(in.begin(), in.end());
  std::vector<double> te, tt;
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    eager.forward(args);
    te.push_back(msSince(t0));
    t0 = Clock::now();
    compiled->forward(args);
    tt.push_back(msSince(t0));
  }
  r.eagerMs = median(te);
  r.tgcMs = median(tt);
  r.ok = true;
  return r;
}

std::vector<std::string> allModels(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json")
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

int main(int argc, char **argv) {
  std::string dir;
  std::vector<std::string> models;
  int rounds = 10;
  int threads = std::max(1, (int)std::thread::hardware_concurrency());
  bool check = false, asJson = false;
  double tolerance = 1e-4; // of the output's scale, f32 through deep models
  at::ScalarType dtype = at::kFloat;
  tgc::Mode mode = tgc::Mode::Default;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tgc-zoo: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--dir")
      dir = value();
    else if (a == "--model")
      models.push_back(value());
    else if (a == "--rounds")
      rounds = std::stoi(value());
    else if (a == "--check")
      check = true;
    else if (a == "--json")
      asJson = true;
    else if (a == "--tolerance")
      tolerance = std::stod(value());
    else if (a == "--threads")
      threads = std::max(1, std::stoi(value()));
    else if (a == "--dtype") {
      std::string d = value();
      if (d == "bf16" || d == "bfloat16")
        dtype = at::kBFloat16;
      else if (d != "f32" && d != "float32") {
        std::fprintf(stderr, "tgc-zoo: --dtype f32 or bf16, not %s\n", d.c_str());
        return 2;
      }
    } else if (a == "--mode") {
      std::string m = value();
      if (m == "max-autotune")
        mode = tgc::Mode::MaxAutotune;
      else if (m != "default") {
        std::fprintf(stderr, "tgc-zoo: --mode default or max-autotune, not %s\n", m.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: tgc-zoo --dir DIR [--model NAME ...] [--rounds N] [--check] "
                           "[--json] [--tolerance T] [--threads N] [--dtype f32|bf16] "
                           "[--mode default|max-autotune]\n");
      return 2;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "tgc-zoo: --dir DIR (where tests/zoo/make_zoo.py wrote the models)\n");
    return 2;
  }
  if (models.empty())
    models = allModels(dir);
  torch::set_num_threads(threads);
  bool failed = false;
  const bool reduced = dtype != at::kFloat;
  if (!asJson)
    std::printf("%-20s %-18s %6s %6s %7s %7s %5s %5s %9s%s %9s %9s %9s %7s\n", "model", "family",
                "graphs", "breaks", "kernels", "externs", "boxed", "recap",
                reduced ? "tgc err" : "max err", reduced ? " eager err" : "", "1st (ms)",
                "eager ms", "tgc ms", "speedup");
  for (const std::string &name : models) {
    Result r;
    try {
      r = runModel(dir, name, rounds, dtype, mode);
    } catch (const std::exception &e) {
      r.name = name;
      r.error = e.what();
      if (std::getenv("TGC_ZOO_FULL_ERRORS") == nullptr)
        r.error = r.error.substr(0, r.error.find('\n'));
    }
    double rel = r.maxError / std::max(1.0, r.scale);
    double eagerRel = r.eagerError / std::max(1.0, r.scale);
    // A reduced dtype's error is against f32: tgc's within twice eager's.
    const double limit = reduced ? 2 * eagerRel + 0.01 : tolerance;
    // The zoo's targets: right, compiled, one graph replayed (no breaks, no
    // capture after warm-up, nothing run eagerly).
    bool bad = !r.ok || rel > limit || r.graphs == 0 || r.breaksPerCall != 0 ||
               r.capturesAfterWarmup != 0 || r.fallbacks != 0;
    failed = failed || bad;
    if (asJson) {
      json j{{"model", r.name},
             {"family", r.family},
             {"ok", r.ok},
             {"error", r.error},
             {"graphs", r.graphs},
             {"breaks_per_call", r.breaksPerCall},
             {"kernels_per_call", r.kernelsPerCall},
             {"externs_per_call", r.externsPerCall},
             {"boxed_per_call", r.boxedPerCall},
             {"captures_after_warmup", r.capturesAfterWarmup},
             {"fallbacks", r.fallbacks},
             {"max_error", r.maxError},
             {"scale", r.scale},
             {"first_call_ms", r.firstCallMs},
             {"autotune_benchmarks", r.tuned},
             {"dtype", reduced ? "bf16" : "f32"},
             {"eager_error", r.eagerError},
             {"eager_ms", r.eagerMs},
             {"tgc_ms", r.tgcMs}};
      std::printf("%s\n", j.dump().c_str());
    } else if (!r.ok) {
      std::printf("%-20s FAILED: %s\n", r.name.c_str(), r.error.c_str());
    } else {
      char eagerErr[32] = "";
      if (reduced)
        std::snprintf(eagerErr, sizeof eagerErr, " %9.2e", eagerRel);
      std::printf(
          "%-20s %-18s %6lld %6lld %7lld %7lld %5lld %5lld %9.2e%s %9.0f %9.2f %9.2f %6.2fx%s\n",
          r.name.c_str(), r.family.c_str(), (long long)r.graphs, (long long)r.breaksPerCall,
          (long long)r.kernelsPerCall, (long long)r.externsPerCall, (long long)r.boxedPerCall,
          (long long)r.capturesAfterWarmup, rel, eagerErr, r.firstCallMs, r.eagerMs, r.tgcMs,
          r.eagerMs / std::max(1e-9, r.tgcMs),
          rel > limit             ? "  MISMATCH"
          : r.graphs == 0         ? "  NOTHING COMPILED"
          : r.breaksPerCall != 0  ? "  GRAPH BREAKS"
          : r.capturesAfterWarmup ? "  RECAPTURED"
          : r.fallbacks != 0      ? "  EAGER FALLBACKS"
                                  : "");
    }
    std::fflush(stdout);
  }
  return check && failed ? 1 : 0;
}
