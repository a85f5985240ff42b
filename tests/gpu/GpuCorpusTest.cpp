// The emulated matrix's programs on a real GPU, with tgc_runtime only (no
// MLIR): each .tgccase under TGC_GPU_CORPUS (written by the emulated tests
// with TGC_GPU_CORPUS_DIR) runs its CUDA plan on cuda:0 and must match the
// CPU reference the emulator matched. Skips, saying why, without a GPU or
// without a corpus.
#include "tests/gpu/GpuCase.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace tgc::gpu {
namespace {

std::string corpusDir() {
  const char *dir = std::getenv("TGC_GPU_CORPUS");
  return dir && *dir ? dir : "";
}

std::vector<std::string> corpusFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  if (corpusDir().empty() || !std::filesystem::is_directory(corpusDir(), ec))
    return files;
  for (const auto &e : std::filesystem::directory_iterator(corpusDir(), ec))
    if (e.path().extension() == ".tgccase")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

void expectMatches(const at::Tensor &got, const at::Tensor &want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  if (tol == 0) {
    EXPECT_TRUE(torch::equal(got, want)) << "got\n" << got << "\nwant\n" << want;
    return;
  }
  at::Tensor g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(g, w, tol, tol, true))
      << "max error " << (g.numel() ? (g - w).abs().nan_to_num(0).max().item<double>() : 0.0);
}

class GpuCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuCorpus, MatchesTheReference) {
  if (std::string why = whyNoGpu(); !why.empty())
    GTEST_SKIP() << "no GPU: " << why;
  GpuCase c = readGpuCase(GetParam());
  SCOPED_TRACE(c.name);
  std::vector<at::Tensor> inputs;
  for (const at::Tensor &t : c.inputs)
    inputs.push_back(t.to(torch::kCUDA));
  std::string error;
  auto graph = loadOnDevice(c, error);
  ASSERT_TRUE(graph) << error;
  std::vector<at::Tensor> out = graph->run(inputs);
  ASSERT_FALSE(c.expected.empty());
  ASSERT_GE(out.size(), c.expected.size());
  for (size_t i = 0; i < c.expected.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    EXPECT_TRUE(out[i].is_cuda());
    expectMatches(out[i].cpu(), c.expected[i], c.tol);
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, GpuCorpus, ::testing::ValuesIn(corpusFiles()),
                         [](const auto &info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           for (char &ch : n)
                             if (!std::isalnum((unsigned char)ch))
                               ch = '_';
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuCorpus);

TEST(GpuCorpusFiles, AreCompleteWithoutAGpu) {
  if (corpusDir().empty())
    GTEST_SKIP() << "TGC_GPU_CORPUS is not set (tools/gpu-check.sh sets it)";
  EXPECT_FALSE(corpusFiles().empty()) << "no .tgccase files in " << corpusDir();
  for (const std::string &f : corpusFiles()) {
    GpuCase c = readGpuCase(f);
    EXPECT_TRUE(c.plan.isCuda()) << f;
    EXPECT_EQ(c.images.size(), c.plan.kernels.size()) << f;
    EXPECT_EQ(c.inputs.size(), c.plan.inputs.size()) << f;
    EXPECT_EQ(c.eager.inputs.size(), c.plan.inputs.size()) << f;
    EXPECT_EQ(c.expected.size(), 1u) << f;
  }
}

} // namespace
} // namespace tgc::gpu
