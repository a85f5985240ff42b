// Training-step time on the CPU, eager vs tgc (training issue, point 7): one
// step is zero_grad, forward, a squared loss, backward and an AdamW update,
// for a GELU MLP and a transformer encoder layer. Both sides start from the
// same weights; the compiled side is checked against eager once before
// timing (gradients after one step).
//
// Benchmark names: cpu/train/<model>/<eager|tgc>.
#include "bench/models/Models.h"

#include <tgc/tgc.h>
#include <torch/torch.h>

#include <benchmark/benchmark.h>

#include <functional>

namespace {

struct Model {
  std::string name;
  std::function<std::shared_ptr<torch::nn::Module>()> make;
  std::function<torch::Tensor(torch::nn::Module &, torch::Tensor)> forward;
  std::vector<int64_t> input;
};

std::vector<Model> models() {
  return {
      {"mlp",
       [] { return tgc::models::geluMlp(512, 2048).ptr(); },
       [](torch::nn::Module &m, torch::Tensor x) {
         return static_cast<torch::nn::SequentialImpl &>(m).forward(x);
       },
       {64, 512}},
      {"transformer",
       [] { return tgc::models::transformerLayer(256, 4).ptr(); },
       [](torch::nn::Module &m, torch::Tensor x) {
         return static_cast<torch::nn::TransformerEncoderLayerImpl &>(m).forward(x);
       },
       {32, 4, 256}},
  };
}

void step(benchmark::State &state, const Model &m, bool compiled) {
  torch::manual_seed(0);
  std::shared_ptr<torch::nn::Module> net = m.make();
  torch::Tensor x = torch::randn(m.input);
  std::function<torch::Tensor(torch::Tensor)> f = [&](torch::Tensor t) { return m.forward(*net, t); };
  if (compiled) {
    auto c = std::make_shared<tgc::Compiled<std::function<torch::Tensor(torch::Tensor)>>>(
        tgc::compile(f));
    // Gradients of one step equal eager's before anything is timed.
    net->zero_grad();
    m.forward(*net, x).pow(2).mean().backward();
    std::vector<torch::Tensor> want;
    for (const torch::Tensor &p : net->parameters())
      want.push_back(p.grad().clone());
    net->zero_grad();
    (*c)(x).pow(2).mean().backward();
    auto params = net->parameters();
    for (size_t i = 0; i < params.size(); ++i)
      if (!torch::allclose(params[i].grad(), want[i], 1e-4, 1e-4))
        state.SkipWithError("tgc gradients differ from eager");
    f = [c](torch::Tensor t) { return (*c)(t); };
  }
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-4));
  for (auto _ : state) {
    opt.zero_grad();
    torch::Tensor loss = f(x).pow(2).mean();
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss);
  }
}

} // namespace

int main(int argc, char **argv) {
  static std::vector<Model> all = models();
  for (const Model &m : all)
    for (bool compiled : {false, true})
      benchmark::RegisterBenchmark(("cpu/train/" + m.name + "/" + (compiled ? "tgc" : "eager")).c_str(),
                                   [&m, compiled](benchmark::State &s) { step(s, m, compiled); })
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
