// Time to first result of a compiled model in a fresh process:
//   tgc-bench-warmstart transformer|gpt2
// prints first_call_ms (capture + compile or cache load + run), eager_ms
// (one eager forward, warmed up) and tgc_ms = first_call_ms - eager_ms.
// bench/warm_start.sh runs it cold and warm in fresh processes.
#include "bench/models/Models.h"

#include <tgc/tgc.h>

#include <chrono>
#include <cstdio>
#include <cstring>

using Clock = std::chrono::steady_clock;

template <class F> double ms(F &&f) {
  auto t = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

int main(int argc, char **argv) {
  if (argc != 2 || (std::strcmp(argv[1], "transformer") && std::strcmp(argv[1], "gpt2"))) {
    std::fprintf(stderr, "usage: %s transformer|gpt2\n", argv[0]);
    return 2;
  }
  torch::manual_seed(0);
  torch::NoGradGuard noGrad;
  bool gpt2 = std::strcmp(argv[1], "gpt2") == 0;
  torch::Tensor x = gpt2 ? torch::randn({4, 64, 256}) : torch::randn({64, 4, 256});
  std::function<torch::Tensor(torch::Tensor)> eager;
  auto transformer = tgc::models::transformerLayer();
  tgc::models::Gpt2Block block;
  transformer->eval();
  block->eval();
  if (gpt2)
    eager = [&](torch::Tensor in) { return block->forward(in); };
  else
    eager = [&](torch::Tensor in) { return transformer->forward(in); };
  auto compiled = tgc::compile(eager);

  torch::Tensor got;
  double first = ms([&] { got = compiled(x); });
  torch::Tensor want = eager(x);
  for (int i = 0; i < 3; ++i)
    eager(x);
  double eagerMs = 1e9;
  for (int i = 0; i < 5; ++i)
    eagerMs = std::min(eagerMs, ms([&] { eager(x); }));
  double err = (got - want).abs().max().item<double>();
  tgc::Stats s = tgc::stats();
  std::printf("model=%s first_call_ms=%.1f eager_ms=%.1f tgc_ms=%.1f max_error=%.2g "
              "kernels_compiled=%lld pipelines_run=%lld cache_hits_disk=%lld fallbacks=%lld\n",
              argv[1], first, eagerMs, first - eagerMs, err, (long long)s.kernels_compiled,
              (long long)s.pipelines_run, (long long)s.cache_hits_disk,
              (long long)s.eager_fallbacks);
  return err < 1e-3 ? 0 : 1;
}
