//===- Zoo.cpp - tgc-zoo: public models, eager vs tgc::compile ------------===//
//
//   tgc-zoo --dir DIR [--model NAME ...] [--rounds N] [--check] [--json] [--threads N]
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
  int64_t graphs = 0, breaksPerCall = 0, kernelsPerCall = 0, externsPerCall = 0;
  int64_t capturesAfterWarmup = 0, fallbacks = 0;
  double maxError = 0, scale = 0;
  double firstCallMs = 0, eagerMs = 0, tgcMs = 0;
};

std::vector<at::Tensor> run(const torch::jit::Module &m, const std::vector<at::Tensor> &in) {
  return tgc::flattenOutputs(const_cast<torch::jit::Module &>(m).forward(
      std::vector<c10::IValue>(in.begin(), in.end())));
}

/// The largest |got - want| over all outputs, and the largest |want|.
void compare(const std::vector<at::Tensor> &got, const std::vector<at::Tensor> &want,
             Result &r) {
  if (got.size() != want.size())
    throw std::runtime_error("tgc returned " + std::to_string(got.size()) + " outputs, eager " +
                             std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].sizes() != want[i].sizes() || got[i].scalar_type() != want[i].scalar_type())
      throw std::runtime_error("output " + std::to_string(i) + " has another shape or dtype");
    at::Tensor g = got[i].to(at::kDouble), w = want[i].to(at::kDouble);
    r.maxError = std::max(r.maxError, (g - w).abs().max().item<double>());
    r.scale = std::max(r.scale, w.abs().max().item<double>());
  }
}

Result runModel(const std::string &dir, const std::string &name, int rounds) {
  Result r;
  r.name = name;
  json meta;
  std::ifstream(dir + "/" + name + ".json") >> meta;
  r.family = meta.at("family");
  std::vector<tgc::InputSpec> specs;
  for (const json &s : meta.at("inputs"))
    specs.push_back(tgc::parseInputSpec(s.get<std::string>()));
  torch::jit::Module eager = torch::jit::load(dir + "/" + name + ".pt");
  eager.eval();
  auto compiled = tgc::compile(torch::jit::load(dir + "/" + name + ".pt"));
  at::NoGradGuard noGrad;
  std::vector<at::Tensor> in = tgc::randomInputs(specs, 7);

  tgc::reset();
  auto start = Clock::now();
  std::vector<at::Tensor> got = tgc::flattenOutputs(
      compiled->forward(std::vector<c10::IValue>(in.begin(), in.end())));
  r.firstCallMs = msSince(start);
  compare(got, run(eager, in), r);
  r.graphs = tgc::stats().graphs_compiled;
  // Warm-up on fresh inputs of the same properties, then one counted call.
  std::vector<at::Tensor> in2 = tgc::randomInputs(specs, 8);
  for (int i = 0; i < 2; ++i)
    compare(tgc::flattenOutputs(compiled->forward(std::vector<c10::IValue>(in2.begin(), in2.end()))),
            run(eager, in2), r);
  tgc::Stats before = tgc::stats();
  compiled->forward(std::vector<c10::IValue>(in.begin(), in.end()));
  tgc::Stats after = tgc::stats();
  r.breaksPerCall = after.graph_breaks - before.graph_breaks;
  r.kernelsPerCall = after.kernel_launches - before.kernel_launches;
  r.externsPerCall = after.extern_calls - before.extern_calls;
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
    else {
      std::fprintf(stderr, "usage: tgc-zoo --dir DIR [--model NAME ...] [--rounds N] [--check] "
                           "[--json] [--tolerance T] [--threads N]\n");
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
  if (!asJson)
    std::printf("%-20s %-18s %6s %6s %7s %7s %5s %9s %9s %9s %9s %7s\n", "model", "family", "graphs",
                "breaks", "kernels", "externs", "recap", "max err", "1st (ms)", "eager ms",
                "tgc ms", "speedup");
  for (const std::string &name : models) {
    Result r;
    try {
      r = runModel(dir, name, rounds);
    } catch (const std::exception &e) {
      r.name = name;
      r.error = e.what();
      r.error = r.error.substr(0, r.error.find('\n'));
    }
    double rel = r.maxError / std::max(1.0, r.scale);
    // The zoo's targets: right, compiled, one graph replayed (no breaks, no
    // capture after warm-up, nothing run eagerly).
    bool bad = !r.ok || rel > tolerance || r.graphs == 0 || r.breaksPerCall != 0 ||
               r.capturesAfterWarmup != 0 || r.fallbacks != 0;
    failed = failed || bad;
    if (asJson) {
      json j{{"model", r.name}, {"family", r.family}, {"ok", r.ok}, {"error", r.error},
             {"graphs", r.graphs}, {"breaks_per_call", r.breaksPerCall},
             {"kernels_per_call", r.kernelsPerCall}, {"externs_per_call", r.externsPerCall},
             {"captures_after_warmup", r.capturesAfterWarmup}, {"fallbacks", r.fallbacks},
             {"max_error", r.maxError}, {"scale", r.scale}, {"first_call_ms", r.firstCallMs},
             {"eager_ms", r.eagerMs}, {"tgc_ms", r.tgcMs}};
      std::printf("%s\n", j.dump().c_str());
    } else if (!r.ok) {
      std::printf("%-20s FAILED: %s\n", r.name.c_str(), r.error.c_str());
    } else {
      std::printf("%-20s %-18s %6lld %6lld %7lld %7lld %5lld %9.2e %9.0f %9.2f %9.2f %6.2fx%s\n",
                  r.name.c_str(), r.family.c_str(), (long long)r.graphs, (long long)r.breaksPerCall,
                  (long long)r.kernelsPerCall, (long long)r.externsPerCall,
                  (long long)r.capturesAfterWarmup, rel, r.firstCallMs, r.eagerMs, r.tgcMs,
                  r.eagerMs / std::max(1e-9, r.tgcMs),
                  rel > tolerance          ? "  MISMATCH"
                  : r.graphs == 0          ? "  NOTHING COMPILED"
                  : r.breaksPerCall != 0   ? "  GRAPH BREAKS"
                  : r.capturesAfterWarmup  ? "  RECAPTURED"
                  : r.fallbacks != 0       ? "  EAGER FALLBACKS"
                                           : "");
    }
    std::fflush(stdout);
  }
  return check && failed ? 1 : 0;
}
