// The main job: compile a real model (MLP with LayerNorm and GELU) and print
// eager vs compiled time and the max abs error.
#include <tgc/tgc.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {

struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        norm(register_module("norm", torch::nn::LayerNorm(
                                         torch::nn::LayerNormOptions({hidden})))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  torch::Tensor forward(torch::Tensor x) {
    return fc2(torch::gelu(norm(fc1(x)), "tanh")) * 0.5 + x;
  }
  torch::nn::Linear fc1;
  torch::nn::LayerNorm norm;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Mlp);

template <class F> double medianMs(F &&f, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

} // namespace

int main() {
  torch::manual_seed(0);
  torch::NoGradGuard noGrad; // inference
  Mlp model(512, 2048, 512);
  model->eval();
  torch::Tensor x = torch::randn({64, 512});

  auto eager = [&](torch::Tensor in) { return model->forward(in); };
  auto compiled = tgc::compile(eager);

  auto start = std::chrono::steady_clock::now();
  torch::Tensor first = compiled(x);
  double compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start).count();
  torch::Tensor want = eager(x);
  double err = (first - want).abs().max().item<double>();

  double eagerMs = medianMs([&] { eager(x); }, 50);
  double tgcMs = medianMs([&] { compiled(x); }, 50);
  tgc::Stats s = tgc::stats();
  std::printf("model: MLP 512-2048-512 with LayerNorm and GELU, batch 64, float32, CPU\n");
  std::printf("first call (capture + compile + run): %.1f ms\n", compileMs);
  std::printf("eager:    %.3f ms/iter\n", eagerMs);
  std::printf("compiled: %.3f ms/iter  (speedup %.2fx)\n", tgcMs, eagerMs / tgcMs);
  std::printf("max abs error vs eager: %.3g\n", err);
  std::printf("graphs %lld, kernels compiled %lld (disk cache hits %lld), eager fallbacks %lld\n",
              (long long)s.graphs_compiled, (long long)s.kernels_compiled,
              (long long)s.cache_hits_disk, (long long)s.eager_fallbacks);
  return err < 1e-3 && s.eager_fallbacks == 0 ? 0 : 1;
}
