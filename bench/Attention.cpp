// Decomposed attention (the real-model issue, point 5): q k^T * scale + mask,
// softmax, times v, at the zoo's shapes, run four ways in alternating rounds
// in one process:
//   eager      the decomposed ops through ATen (what the traced model does);
//   tgc bmm    tgc with Options::fuse_attention = false: the two bmms as
//              ATen calls, scale, mask and softmax one generated row kernel;
//   tgc sdpa   tgc as it ships: one ATen CPU flash-attention call;
//   aten sdpa  at::scaled_dot_product_attention called directly.
// Prints microseconds per call (medians of the rounds) and the speedups
// over eager; max error of each against eager.
//
//   tgc-bench-attention [--rounds N] [--calls N] [--threads N] [--shape NAME]
#include "Timing.h"

#include <tgc/tgc.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using tgc::bench::median;
using tgc::bench::usPerCall;

struct Shape {
  const char *model;
  int64_t b, h, l, e;
  bool fullMask; ///< [1, h, l, l] bias (Swin, T5) rather than [b, 1, 1, l] padding
};

torch::Tensor decomposed(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor m) {
  torch::Tensor s = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(q.size(-1)));
  return torch::matmul(torch::softmax(s + m, -1), v);
}


double maxError(const torch::Tensor &a, const torch::Tensor &b) {
  return (a - b).abs().max().item<double>();
}

} // namespace

int main(int argc, char **argv) {
  int rounds = 11, calls = 0, threads = 2;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--calls"))
      calls = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--shape"))
      only = argv[i + 1];
  }
  torch::set_num_threads(threads);
  torch::NoGradGuard noGrad;
  // q/k/v shapes [b, h, l, e] of the zoo: swin_small's three window stages
  // (64-, 16- and 4-window batches of 16 tokens, head size 24), a 32-token
  // encoder, vit/deit (197 tokens), a 256-token decoder.
  const std::vector<Shape> shapes = {
      {"swin st1", 16, 2, 16, 24, true},  {"swin st2", 4, 4, 16, 24, true},
      {"swin st3", 1, 8, 16, 24, true},   {"bert", 1, 4, 32, 32, false},
      {"gpt2-256", 1, 2, 256, 64, false}, {"vit-b", 8, 12, 197, 64, false},
  };
  std::printf("threads %d, %d rounds; us per call (median), speedup over eager\n", threads, rounds);
  std::printf("%-10s %-18s %10s %10s %10s %10s %8s %8s %10s\n", "shape", "[b,h,l,e]", "eager",
              "tgc bmm", "tgc sdpa", "aten sdpa", "bmm x", "sdpa x", "max err");
  std::vector<double> logBmm, logSdpa;
  for (const Shape &s : shapes) {
    if (!only.empty() && only != s.model)
      continue;
    torch::manual_seed(1);
    torch::Tensor q = torch::randn({s.b, s.h, s.l, s.e}), k = torch::randn({s.b, s.h, s.l, s.e}),
                  v = torch::randn({s.b, s.h, s.l, s.e});
    torch::Tensor m = s.fullMask ? torch::randn({1, s.h, s.l, s.l})
                                 : torch::where(torch::rand({s.b, 1, 1, s.l}) < 0.2,
                                                torch::full({}, -1e4), torch::zeros({}));
    tgc::Options off;
    off.fuse_attention = false;
    auto bmm = tgc::compile(decomposed, off);
    auto sdpa = tgc::compile(decomposed);
    torch::Tensor want = decomposed(q, k, v, m);
    double err = std::max({maxError(bmm(q, k, v, m), want), maxError(sdpa(q, k, v, m), want),
                           maxError(at::scaled_dot_product_attention(q, k, v, m), want)});
    const int n =
        calls > 0 ? calls : std::max<int>(5, int(2e5 / (s.b * s.h * s.l * s.l * s.e / 64 + 1)));
    std::vector<double> te, tb, ts, ta;
    for (int r = 0; r < rounds; ++r) {
      te.push_back(usPerCall([&] { decomposed(q, k, v, m); }, n));
      tb.push_back(usPerCall([&] { bmm(q, k, v, m); }, n));
      ts.push_back(usPerCall([&] { sdpa(q, k, v, m); }, n));
      ta.push_back(usPerCall([&] { at::scaled_dot_product_attention(q, k, v, m); }, n));
    }
    double e = median(te), b = median(tb), sd = median(ts), a = median(ta);
    char dims[64];
    std::snprintf(dims, sizeof dims, "[%lld,%lld,%lld,%lld]", (long long)s.b, (long long)s.h,
                  (long long)s.l, (long long)s.e);
    std::printf("%-10s %-18s %10.1f %10.1f %10.1f %10.1f %7.2fx %7.2fx %10.2e\n", s.model, dims, e,
                b, sd, a, e / b, e / sd, err);
    logBmm.push_back(std::log(e / b));
    logSdpa.push_back(std::log(e / sd));
  }
  auto geo = [](const std::vector<double> &l) {
    double t = 0;
    for (double x : l)
      t += x;
    return std::exp(t / double(l.size()));
  };
  std::printf("%-10s %-18s %10s %10s %10s %10s %7.2fx %7.2fx\n", "geomean", "", "", "", "", "",
              geo(logBmm), geo(logSdpa));
  return 0;
}
