// Linear layers (the real-model issue, point 2): which GEMM a frozen linear
// layer should call, at the zoo's shapes. Per shape and dtype, in
// alternating rounds in one process (microseconds per call, medians):
//   addmm     at::addmm(bias, x, w^T), what capture records;
//   packed    MKL's packed sgemm (mkl::_mkl_linear, f32) or oneDNN with a
//             prepacked weight (mkldnn::_linear_pointwise, bf16);
//   onednn    oneDNN with a prepacked weight in f32 too;
//   eager     the nn::Linear module;
//   tgc       that module through tgc::compile (frozen: the call freezing
//             picks, compiler/freeze/Freeze.cpp isLinear).
//
//   tgc-bench-linear [--rounds N] [--threads N]
#include "Timing.h"

#include <tgc/tgc.h>
#include <torch/torch.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using tgc::bench::median;
using tgc::bench::usPerCall;


/// One boxed call of `op` on `args`: its first result.
at::Tensor call(const char *op, const char *overload, std::vector<c10::IValue> args) {
  auto handle = c10::Dispatcher::singleton().findSchemaOrThrow(op, overload);
  handle.callBoxed(&args);
  return args.at(0).toTensor();
}

struct Shape {
  const char *where;
  int64_t m, k, n;
};

} // namespace

int main(int argc, char **argv) {
  int rounds = 9, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
  }
  torch::set_num_threads(threads);
  torch::NoGradGuard noGrad;
  const std::vector<Shape> shapes = {
      {"bert qkv", 32, 128, 128},   {"bert ffn", 32, 128, 256},  {"llama mlp", 32, 256, 512},
      {"deit qkv", 197, 192, 576}, {"deit ffn", 197, 768, 192}, {"mixer tok", 384, 196, 98},
      {"resnet18", 1, 512, 1000},  {"resnet50", 1, 2048, 1000},
  };
  std::printf("threads %d, %d rounds; us per call (median); 'x' columns: addmm's time over it\n",
              threads, rounds);
  std::printf("%-5s %-10s %-15s %9s %9s %7s %9s %7s %9s %9s %7s\n", "dtype", "layer", "m x k x n",
              "addmm", "packed", "x", "onednn", "x", "eager", "tgc", "x");
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (const Shape &s : shapes) {
      torch::manual_seed(2);
      torch::nn::Linear lin(s.k, s.n);
      lin->eval();
      lin->to(dtype);
      torch::Tensor x = torch::randn({s.m, s.k}).to(dtype);
      torch::Tensor w = lin->weight, b = lin->bias;
      tgc::reset();
      auto compiled = tgc::compile(lin);
      compiled->forward(x);
      const bool f32 = dtype == at::kFloat;
      at::Tensor packed =
          f32 ? call("mkl::_mkl_reorder_linear_weight", "", {w, s.m})
              : call("mkldnn::_reorder_linear_weight", "", {w, c10::IValue(s.m)});
      at::Tensor dnnPacked = call("mkldnn::_reorder_linear_weight", "", {w, c10::IValue(s.m)});
      auto runPacked = [&] {
        return f32 ? call("mkl::_mkl_linear", "", {x, packed, w, b, s.m})
                   : call("mkldnn::_linear_pointwise", "",
                          {x, packed, b, std::string("none"), c10::List<std::optional<at::Scalar>>(),
                           std::optional<std::string>()});
      };
      auto runDnn = [&] {
        return call("mkldnn::_linear_pointwise", "",
                    {x, dnnPacked, b, std::string("none"), c10::List<std::optional<at::Scalar>>(),
                     std::optional<std::string>()});
      };
      const double mac = double(s.m) * s.k * s.n;
      const int calls = std::max(20, int(4e8 / (mac + 2e5)));
      std::vector<double> ta, tp, td, te, tt;
      for (int r = 0; r < rounds; ++r) {
        ta.push_back(usPerCall([&] { at::addmm(b, x, w.t()); }, calls));
        tp.push_back(usPerCall(runPacked, calls));
        td.push_back(usPerCall(runDnn, calls));
        te.push_back(usPerCall([&] { lin->forward(x); }, calls));
        tt.push_back(usPerCall([&] { compiled->forward(x); }, calls));
      }
      double a = median(ta), p = median(tp), d = median(td), e = median(te), t = median(tt);
      char dims[32];
      std::snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)s.m, (long long)s.k,
                    (long long)s.n);
      std::printf("%-5s %-10s %-15s %9.1f %9.1f %6.2fx %9.1f %6.2fx %9.1f %9.1f %6.2fx  %s\n",
                  f32 ? "f32" : "bf16", s.where, dims, a, p, a / p, d, a / d, e, t, e / t,
                  tgc::stats().packed_linears ? "(tgc: packed)" : "(tgc: addmm)");
    }
  }
  return 0;
}
