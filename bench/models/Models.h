// Reference models built with torch::nn, shared by benchmarks and tests:
// a transformer encoder layer, a GPT-2-style block with causal attention, a
// ResNet basic block and a GELU MLP. bench/cpu_compare.py defines the same
// models in Python for torch.compile.
#ifndef TGC_BENCH_MODELS_MODELS_H
#define TGC_BENCH_MODELS_MODELS_H

#include <torch/torch.h>

#include <cmath>

namespace tgc::models {

/// Ten pointwise ops over x [rows, n] and y [n]: one fused kernel, two reads
/// and one write (bench/cpu_compare.py and bench/gpu_compare.py: chain10).
inline torch::Tensor chain10(torch::Tensor x, torch::Tensor y) {
  return ((((x * y + 1).sigmoid() - x).relu() * 2 + y).tanh() * x - 0.5).abs();
}

/// torch::nn's transformer encoder layer (post-norm, ReLU MLP), no dropout.
inline torch::nn::TransformerEncoderLayer transformerLayer(int64_t d = 256, int64_t heads = 4) {
  return torch::nn::TransformerEncoderLayer(
      torch::nn::TransformerEncoderLayerOptions(d, heads).dim_feedforward(4 * d).dropout(0.0));
}

/// A GPT-2 block: pre-norm causal self-attention and a GELU(tanh) MLP.
struct Gpt2BlockImpl : torch::nn::Module {
  Gpt2BlockImpl(int64_t d = 256, int64_t heads = 4)
      : heads(heads),
        ln1(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        ln2(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        qkv(register_module("qkv", torch::nn::Linear(d, 3 * d))),
        proj(register_module("proj", torch::nn::Linear(d, d))),
        fc(register_module("fc", torch::nn::Linear(d, 4 * d))),
        out(register_module("out", torch::nn::Linear(4 * d, d))) {}

  torch::Tensor forward(torch::Tensor x) { // x: [batch, time, d]
    int64_t B = x.size(0), T = x.size(1), D = x.size(2), H = heads;
    auto parts = qkv(ln1(x)).chunk(3, -1);
    auto split = [&](torch::Tensor t) { return t.view({B, T, H, D / H}).transpose(1, 2); };
    torch::Tensor q = split(parts[0]), k = split(parts[1]), v = split(parts[2]);
    torch::Tensor att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(D / H));
    torch::Tensor mask = torch::ones({T, T}, x.options().dtype(torch::kBool)).triu(1);
    att = torch::softmax(att.masked_fill(mask, -INFINITY), -1);
    torch::Tensor y = torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, D});
    x = x + proj(y);
    return x + out(torch::gelu(fc(ln2(x)), "tanh"));
  }
  int64_t heads;
  torch::nn::LayerNorm ln1, ln2;
  torch::nn::Linear qkv, proj, fc, out;
};
TORCH_MODULE(Gpt2Block);

/// A ResNet basic block: conv3x3-BN-ReLU-conv3x3-BN, residual add, ReLU.
struct BasicBlockImpl : torch::nn::Module {
  explicit BasicBlockImpl(int64_t c)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(c, c, 3).padding(1).bias(false)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(c, c, 3).padding(1).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(c))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(c))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(bn1(conv1(x)));
    return torch::relu(bn2(conv2(y)) + x);
  }
  /// Running statistics and affine parameters as a trained network has them.
  void randomizeStatistics() {
    torch::NoGradGuard g;
    for (auto &buf : named_buffers()) {
      if (buf.key().find("running_mean") != std::string::npos)
        buf.value().uniform_(-0.5, 0.5);
      if (buf.key().find("running_var") != std::string::npos)
        buf.value().uniform_(0.5, 2.0);
    }
    for (auto &p : named_parameters())
      if (p.key().find("bn") != std::string::npos)
        p.value().uniform_(0.5, 1.5);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::BatchNorm2d bn1, bn2;
};
TORCH_MODULE(BasicBlock);

/// Linear - GELU(tanh) - Linear.
inline torch::nn::Sequential geluMlp(int64_t d = 512, int64_t hidden = 2048) {
  return torch::nn::Sequential(torch::nn::Linear(d, hidden),
                               torch::nn::GELU(torch::nn::GELUOptions().approximate("tanh")),
                               torch::nn::Linear(hidden, d));
}

/// Copies `src`'s parameters and buffers into `dst` (same architecture):
/// two copies of a model that eager and tgc then train side by side.
inline void copyState(torch::nn::Module &dst, const torch::nn::Module &src) {
  torch::NoGradGuard g;
  auto dp = dst.named_parameters(), sp = src.named_parameters();
  for (auto &p : sp)
    dp[p.key()].copy_(p.value());
  auto db = dst.named_buffers(), sb = src.named_buffers();
  for (auto &b : sb)
    db[b.key()].copy_(b.value());
}

/// Linear(256, 512) - GELU - Linear(512, 512) - ReLU - Linear(512, 128) -
/// LayerNorm: every GEMM has a pointwise or row epilogue (the model tests).
inline torch::nn::Sequential epilogueMlp() {
  return torch::nn::Sequential(torch::nn::Linear(256, 512), torch::nn::GELU(),
                               torch::nn::Linear(512, 512), torch::nn::ReLU(),
                               torch::nn::Linear(512, 128),
                               torch::nn::LayerNorm(torch::nn::LayerNormOptions({128})));
}

} // namespace tgc::models

#endif // TGC_BENCH_MODELS_MODELS_H
