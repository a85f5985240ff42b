// Training-step time on the CPU, eager vs tgc (training issue, point 7): one
// step is zero_grad, forward, a squared loss, backward and an AdamW update,
// for a GELU MLP and torch::nn's transformer encoder layer. Eager and tgc
// each train their own copy of the model from the same weights; after one
// step their gradients are compared, then they are timed in alternating
// rounds (a few steps of one, then of the other), so that the load of a
// shared machine falls on both alike. Prints per model the median step time
// of each and the median of the per-round ratios.
//
// Usage: tgc-bench-train [--rounds N] [--steps S]   (defaults 15 and 4)
#include "bench/models/Models.h"

#include <tgc/tgc.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>

namespace {

using Net = std::shared_ptr<torch::nn::Module>;
using Forward = std::function<torch::Tensor(torch::Tensor)>;

struct Model {
  std::string name;
  std::function<Net()> make;
  std::function<torch::Tensor(torch::nn::Module &, torch::Tensor)> forward;
  std::vector<int64_t> input;
};

std::vector<Model> models() {
  return {
      {"mlp (512-2048-512, batch 64)",
       [] { return tgc::models::geluMlp(512, 2048).ptr(); },
       [](torch::nn::Module &m, torch::Tensor x) {
         return static_cast<torch::nn::SequentialImpl &>(m).forward(x);
       },
       {64, 512}},
      {"transformer (d 256, 4 heads, 32x4)",
       [] { return tgc::models::transformerLayer(256, 4).ptr(); },
       [](torch::nn::Module &m, torch::Tensor x) {
         return static_cast<torch::nn::TransformerEncoderLayerImpl &>(m).forward(x);
       },
       {32, 4, 256}},
  };
}

/// One side: a model, how to call it, its optimizer.
struct Side {
  Net net;
  Forward f;
  std::unique_ptr<torch::optim::AdamW> opt;
  void step(const torch::Tensor &x) {
    opt->zero_grad();
    f(x).pow(2).mean().backward();
    opt->step();
  }
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

/// Seconds per step over `steps` steps.
double timeSteps(Side &s, const torch::Tensor &x, int steps) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i)
    s.step(x);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
}

int run(const Model &m, int rounds, int steps) {
  torch::manual_seed(0);
  Side eager, mine;
  eager.net = m.make();
  mine.net = m.make();
  tgc::models::copyState(*mine.net, *eager.net);
  eager.f = [&](torch::Tensor t) { return m.forward(*eager.net, t); };
  auto compiled = std::make_shared<tgc::Compiled<Forward>>(
      tgc::compile(Forward([&](torch::Tensor t) { return m.forward(*mine.net, t); })));
  mine.f = [compiled](torch::Tensor t) { return (*compiled)(t); };
  torch::Tensor x = torch::randn(m.input);
  // Gradients of one step equal eager's before anything is timed.
  eager.f(x).pow(2).mean().backward();
  mine.f(x).pow(2).mean().backward();
  auto pe = eager.net->parameters(), pm = mine.net->parameters();
  for (size_t i = 0; i < pe.size(); ++i)
    if (!torch::allclose(pm[i].grad(), pe[i].grad(), 1e-4, 1e-4)) {
      std::fprintf(stderr, "%s: tgc gradients differ from eager\n", m.name.c_str());
      return 1;
    }
  eager.opt = std::make_unique<torch::optim::AdamW>(pe, torch::optim::AdamWOptions(1e-4));
  mine.opt = std::make_unique<torch::optim::AdamW>(pm, torch::optim::AdamWOptions(1e-4));
  timeSteps(eager, x, steps); // warm up both
  timeSteps(mine, x, steps);
  std::vector<double> te, tm, ratio;
  for (int r = 0; r < rounds; ++r) {
    te.push_back(timeSteps(eager, x, steps));
    tm.push_back(timeSteps(mine, x, steps));
    ratio.push_back(te.back() / tm.back());
  }
  tgc::Stats s = tgc::stats();
  std::printf("%-36s %10.0f %10.0f %9.2fx   (%lld training graph(s), %lld graph breaks, "
              "%lld bytes saved)\n",
              m.name.c_str(), median(te) * 1e6, median(tm) * 1e6, median(ratio),
              (long long)s.training_graphs, (long long)s.graph_breaks,
              (long long)s.saved_activation_bytes);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  int rounds = 15, steps = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--steps"))
      steps = std::max(1, std::atoi(argv[i + 1]));
  }
  std::printf("training step on the CPU (zero_grad, forward, mean(out^2), backward, AdamW), "
              "%d threads; medians of %d rounds x %d steps\n",
              at::get_num_threads(), rounds, steps);
  std::printf("%-36s %10s %10s %10s\n", "model", "eager us", "tgc us", "tgc/eager");
  int status = 0;
  for (const Model &m : models()) {
    tgc::reset();
    status |= run(m, rounds, steps);
  }
  return status;
}
