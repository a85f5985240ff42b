// A separate process for the cache tests: compiles a few programs, checks
// them against eager and prints tgc's counters.
//   cache-worker [VARIANT] [--extra]
//   cache-worker --train
// VARIANT (default 0) picks overlapping program sets, so several workers
// compile some programs in common. --train runs two compiled training steps
// (forward and backward) of a small MLP instead. Exit 0 when every result
// equals eager.
#include <tgc/tgc.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstring>

namespace {

bool check(const torch::Tensor &got, const torch::Tensor &want) {
  return got.sizes() == want.sizes() && torch::allclose(got, want, 1e-5, 1e-5);
}

} // namespace

/// Two training steps of an MLP, compiled and eager, from one initial state.
bool trainingSteps() {
  torch::manual_seed(7);
  auto make = [] {
    return torch::nn::Sequential(torch::nn::Linear(32, 64), torch::nn::GELU(),
                                 torch::nn::Linear(64, 8));
  };
  auto eager = make(), mine = make();
  {
    torch::NoGradGuard g;
    auto src = eager->parameters(), dst = mine->parameters();
    for (size_t i = 0; i < src.size(); ++i)
      dst[i].copy_(src[i]);
  }
  auto f = tgc::compile([&](torch::Tensor x) { return mine->forward(x); });
  bool ok = true;
  for (int step = 0; step < 2; ++step) {
    torch::Tensor x = torch::randn({16, 32});
    f(x).pow(2).mean().backward();
    eager->forward(x).pow(2).mean().backward();
    auto pe = eager->parameters(), pm = mine->parameters();
    for (size_t i = 0; i < pe.size(); ++i)
      ok &= check(pm[i].grad(), pe[i].grad());
  }
  return ok;
}

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--train") == 0) {
    bool ok = trainingSteps();
    tgc::Stats s = tgc::stats();
    std::printf("kernels_compiled=%lld cache_hits_disk=%lld pipelines_run=%lld "
                "training_graphs=%lld eager_fallbacks=%lld ok=%d\n",
                (long long)s.kernels_compiled, (long long)s.cache_hits_disk,
                (long long)s.pipelines_run, (long long)s.training_graphs,
                (long long)s.eager_fallbacks, ok ? 1 : 0);
    return ok ? 0 : 1;
  }
  int variant = argc > 1 && argv[1][0] != '-' ? std::atoi(argv[1]) : 0;
  bool extra = argc > 1 && std::strcmp(argv[argc - 1], "--extra") == 0;
  torch::manual_seed(42);
  torch::NoGradGuard noGrad;
  bool ok = true;

  auto skeleton = [](torch::Tensor a, torch::Tensor b) { return (a * b + 1).relu(); };
  auto f = tgc::compile(skeleton);
  for (int s : {variant % 3, (variant + 1) % 3}) {
    torch::Tensor a = torch::randn({8 + s, 16}), b = torch::randn({16});
    ok &= check(f(a, b), skeleton(a, b));
  }

  torch::nn::Linear lin(16, 32);
  auto mlp = [&](torch::Tensor x) { return torch::gelu(lin(x), "tanh") * 0.5 - x.sum(); };
  auto g = tgc::compile(mlp);
  torch::Tensor x = torch::randn({4, 16});
  ok &= check(g(x), mlp(x));

  auto gate = [](torch::Tensor x) { return x.sum().item<float>() > 0 ? x.exp() : x.sigmoid(); };
  auto h = tgc::compile(gate);
  for (int i = 0; i < 2; ++i) {
    torch::Tensor y = torch::randn({6});
    ok &= check(h(y), gate(y));
  }

  if (extra) { // a program no earlier run compiled
    auto e = tgc::compile([](torch::Tensor a) { return (a - 3).tanh() * a; });
    torch::Tensor a = torch::randn({5, 7, 3});
    ok &= check(e(a), (a - 3).tanh() * a);
  }

  tgc::Stats s = tgc::stats();
  std::printf("kernels_compiled=%lld cache_hits_disk=%lld pipelines_run=%lld graphs_compiled=%lld ok=%d\n",
              (long long)s.kernels_compiled, (long long)s.cache_hits_disk,
              (long long)s.pipelines_run, (long long)s.graphs_compiled, ok ? 1 : 0);
  return ok ? 0 : 1;
}
