// Replay overhead per plan step (the real-model issue's lean executor): 100-step
// plans of tiny ATen calls, views and kernels, where the work of each step is
// a few nanoseconds, run eagerly and compiled in alternating rounds in one
// process. overhead/step = (tgc - eager) / steps: what tgc adds per step on
// top of the same ATen calls (its guards and per-call work amortized over
// the steps). Prints one table; medians of the rounds.
//
//   tgc-bench-step-overhead [--rounds N] [--calls N]
#include <tgc/tgc.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using Fn = std::function<torch::Tensor(torch::Tensor, torch::Tensor)>;

struct Program {
  std::string name;
  Fn fn;
};

/// 50 GEMMs, each result transposed (a view between ATen calls: a plan step).
torch::Tensor mmViews(torch::Tensor x, torch::Tensor w) {
  torch::Tensor z = x;
  for (int i = 0; i < 50; ++i)
    z = torch::mm(z, w).t();
  return z * 1;
}

/// 50 GEMMs, each followed by a relu (a generated kernel).
torch::Tensor mmKernels(torch::Tensor x, torch::Tensor w) {
  torch::Tensor z = x;
  for (int i = 0; i < 50; ++i)
    z = torch::relu(torch::mm(z, w));
  return z;
}

/// 25 x (GEMM, view, GEMM-with-bias via addmm, kernel).
torch::Tensor mixed(torch::Tensor x, torch::Tensor w) {
  torch::Tensor z = x;
  torch::Tensor b = w.select(0, 0);
  for (int i = 0; i < 25; ++i)
    z = torch::sigmoid(torch::addmm(b, torch::mm(z, w).t(), w));
  return z;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double usPerCall(const Fn &f, const torch::Tensor &x, const torch::Tensor &w, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    f(x, w);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         calls;
}

} // namespace

int main(int argc, char **argv) {
  int rounds = 21, calls = 50;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--calls"))
      calls = std::atoi(argv[++i]);
  }
  at::set_num_threads(1);
  torch::NoGradGuard noGrad;
  torch::manual_seed(0);
  // A permutation matrix: values neither grow nor vanish over 50 GEMMs.
  torch::Tensor w = torch::eye(4).index_select(0, torch::randperm(4));
  torch::Tensor x = torch::randn({4, 4});
  std::vector<Program> programs = {
      {"50 x (mm, t)", mmViews}, {"50 x (mm, relu)", mmKernels}, {"25 x (mm, t, addmm, sigmoid)", mixed}};
  std::printf("%-30s %6s %7s %9s %9s %10s %9s %7s\n", "plan", "steps", "views", "eager us",
              "tgc us", "tgc/step", "overhead", "max err");
  std::printf("%-30s %6s %7s %9s %9s %10s %9s %7s\n", "", "/call", "made", "/call", "/call", "us",
              "us/step", "");
  for (const Program &p : programs) {
    auto compiled = tgc::compile(p.fn);
    torch::Tensor want = p.fn(x, w), got = compiled(x, w);
    compiled(x, w);
    double err = (got - want).abs().max().item<double>();
    tgc::Stats before = tgc::stats();
    compiled(x, w);
    tgc::Stats after = tgc::stats();
    const int64_t runs = std::max<int64_t>(after.plan_runs - before.plan_runs, 1);
    const int64_t steps = (after.kernel_launches - before.kernel_launches) +
                          (after.extern_calls - before.extern_calls) +
                          (after.view_calls - before.view_calls) +
                          (after.views_resolved - before.views_resolved);
    const int64_t views = after.views_resolved - before.views_resolved;
    std::vector<double> te, tt;
    for (int r = 0; r < rounds; ++r) {
      te.push_back(usPerCall(p.fn, x, w, calls));
      tt.push_back(usPerCall([&](torch::Tensor a, torch::Tensor b) { return compiled(a, b); }, x, w,
                             calls));
    }
    const double e = median(te), t = median(tt);
    std::printf("%-30s %6lld %7lld %9.1f %9.1f %10.3f %9.3f %7.1e\n", p.name.c_str(),
                (long long)steps, (long long)views, e, t, t / double(steps),
                (t - e) / double(steps), err);
    if (runs != 1)
      std::printf("  (%lld compiled graphs per call)\n", (long long)runs);
  }
  std::printf("overhead/step = (tgc - eager) / steps; goal < 0.5 us (1 thread)\n");
  return 0;
}
