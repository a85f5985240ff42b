// Compiles the GPU benchmark's workloads ahead of time, on a development
// machine (MLIR, NVRTC, no GPU needed), into .tgccase files that
// tgc-bench-gpu runs on a GPU machine with tgc_runtime only: a pointwise
// chain, softmax, layer_norm, a GELU MLP and a transformer layer (GPT-2
// block), all bfloat16; and training steps of the MLP and the GPT-2 block
// (.tgctrain: compiled forward and backward). bench/gpu_compare.py defines
// the same workloads in Python for torch.compile.
//
// Usage: tgc-gpu-prepare <out-dir> [--small]   (--small: shapes for a quick check)
#include "bench/models/Models.h"
#include "tests/gpu/GpuCaseBuilder.h"

#include <torch/torch.h>

#include <filesystem>
#include <iostream>

namespace {

using torch::Tensor;

struct Workload {
  std::string name;
  std::vector<Tensor> inputs;
  tgc::gpu::Program fn;
};

/// The two model workloads, bfloat16: a GELU MLP (d -> 4d -> d) over
/// `tokens` rows and a GPT-2 block over batch x time tokens; names carry
/// `prefix`.
std::vector<Workload> modelWorkloads(const std::string &prefix, int64_t md, int64_t tokens,
                                     int64_t d, int64_t heads, int64_t batch, int64_t time) {
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16);
  auto mlp = tgc::models::geluMlp(md, 4 * md);
  mlp->to(torch::kBFloat16);
  tgc::models::Gpt2Block block(d, heads);
  block->to(torch::kBFloat16);
  return {
      {prefix + "gelu_mlp", {torch::empty({tokens, md}, bf16)},
       [mlp](const auto &in) mutable { return std::vector<Tensor>{mlp->forward(in[0])}; }},
      {prefix + "transformer_layer", {torch::empty({batch, time, d}, bf16)},
       [block](const auto &in) mutable { return std::vector<Tensor>{block->forward(in[0])}; }},
  };
}

std::vector<Workload> workloads(bool small) {
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16);
  // Values do not matter for capture; the benchmark makes its own inputs.
  const int64_t rows = small ? 64 : 16384, n = small ? 512 : 4096;
  std::vector<Workload> all = {
      {"pointwise_chain", {torch::empty({rows, n}, bf16), torch::empty({n}, bf16)},
       [](const auto &in) { return std::vector<Tensor>{tgc::models::chain10(in[0], in[1])}; }},
      {"softmax", {torch::empty({rows, n}, bf16)},
       [](const auto &in) { return std::vector<Tensor>{torch::softmax(in[0], -1)}; }},
      {"layer_norm", {torch::empty({rows, n}, bf16), torch::empty({n}, bf16), torch::empty({n}, bf16)},
       [n](const auto &in) { return std::vector<Tensor>{torch::layer_norm(in[0], {n}, in[1], in[2])}; }},
  };
  for (Workload &w : small ? modelWorkloads("", 128, 64, 128, 4, 1, 32)
                           : modelWorkloads("", 2048, 8192, 1024, 16, 4, 1024))
    all.push_back(std::move(w));
  return all;
}

/// Training workloads: the program's weights require grad (lifted as plan
/// inputs), the input does not.
std::vector<Workload> trainingWorkloads(bool small) {
  return small ? modelWorkloads("train_", 128, 64, 128, 4, 1, 32)
               : modelWorkloads("train_", 1024, 8192, 768, 12, 8, 512);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: tgc-gpu-prepare <out-dir> [--small]\n";
    return 2;
  }
  std::string out = argv[1];
  bool small = argc > 2 && std::string(argv[2]) == "--small";
  std::filesystem::create_directories(out);
  torch::NoGradGuard noGrad;
  try {
    for (const Workload &w : workloads(small)) {
      std::vector<Tensor> planInputs;
      tgc::gpu::GpuCase c = tgc::gpu::caseFromProgram(w.name, w.fn, w.inputs, planInputs);
      // No inputs stored: tgc-bench-gpu makes random ones per input spec.
      tgc::gpu::writeGpuCase(c, out + "/" + w.name + ".tgccase");
      std::cout << w.name << ": " << c.plan.kernels.size() << " kernels, " << c.plan.externs.size()
                << " ATen calls (eager: " << c.eager.externs.size() << " ops)\n";
    }
    for (const Workload &w : trainingWorkloads(small)) {
      std::vector<Tensor> planInputs;
      tgc::gpu::GpuTrainingCase c =
          tgc::gpu::trainingCaseFromProgram(w.name, w.fn, w.inputs, planInputs);
      tgc::gpu::writeGpuTrainingCase(c, out + "/" + w.name + ".tgctrain");
      std::cout << w.name << ": forward " << c.forward.plan.kernels.size() << " kernels + "
                << c.forward.plan.externs.size() << " ATen calls, backward "
                << c.backward.plan.kernels.size() << " kernels + " << c.backward.plan.externs.size()
                << " ATen calls, " << c.layout.savedBytes << " bytes saved\n";
    }
  } catch (const std::exception &e) {
    std::cerr << "tgc-gpu-prepare: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
