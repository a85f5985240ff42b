//===- BackendTest.cpp - one backend interface for the JIT, AOT and guards -===//
//
// The runtime DeviceBackend (runtime/Backend.h): the JIT and tgc-aot build through
// the same caches (an AOT compile of a model the JIT compiled builds
// nothing), packages load through the same load, one guard function, one
// retargeting of captured code to another device.
//
//===----------------------------------------------------------------------===//
#include "compiler/aot/AotCompiler.h"
#include "compiler/capture/Segment.h"
#include "runtime/ArtifactCache.h"
#include "runtime/Backend.h"
#include "tests/e2e/ExpectCompiled.h"
#include "tgc/Package.h"
#include "tgc/tgc.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

namespace {

namespace fs = std::filesystem;

std::string freshDir(const std::string &name) {
  fs::path dir = fs::path(testing::TempDir()) / ("tgc-backend-" + name + "-" +
                                                 std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

/// A model with two kernels' worth of work and no weights: the JIT and
/// tgc-aot capture the same segment from it.
std::string saveModel(const std::string &dir) {
  torch::jit::Module m("Pointwise");
  m.define(R"(
    def forward(self, x, y):
        a = ((x * y + 1.5).relu() - y.sigmoid()).tanh()
        return a.softmax(-1) * x
  )");
  std::string path = dir + "/pointwise.pt";
  m.save(path);
  return path;
}

void expectClose(const at::Tensor &got, const at::Tensor &want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_GT(want.abs().max().item<double>(), 1e-3);
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5))
      << "max error " << (got - want).abs().max().item<double>();
}

TEST(DeviceBackend, AotCompileOfAModelTheJitCompiledBuildsNothing) {
  torch::NoGradGuard noGrad;
  const std::string dir = freshDir("reuse");
  const std::string cache = dir + "/cache";
  const std::string model = saveModel(dir);
  torch::jit::Module eager = torch::jit::load(model);

  tgc::Options options;
  options.cache_dir = cache;
  auto jit = tgc::compile(torch::jit::load(model), options);
  tgc::reset();
  torch::Tensor x = torch::randn({8, 16}), y = torch::randn({8, 16});
  expectClose(jit->forward({x, y}).toTensor(), eager.forward({x, y}).toTensor());
  ASSERT_GE(tgc::stats().kernels_compiled, 1) << "the JIT built the kernels";
  tgc::test::expectCompiled(1, 1);

  tgc::AotOptions aot;
  aot.model = model;
  aot.output = dir + "/pointwise.tgcpkg";
  aot.inputs = {tgc::parseInputSpec("x:f32[8,16]"), tgc::parseInputSpec("y:f32[8,16]")};
  aot.cacheDir = cache;
  tgc::reset();
  tgc::AotSummary s = tgc::compilePackage(aot);
  EXPECT_EQ(s.segmentsCompiled, 1);
  EXPECT_GE(s.kernels, 1);
  EXPECT_EQ(s.kernelsCompiled, 0) << "tgc-aot rebuilt kernels the JIT had built";
  EXPECT_EQ(s.kernelsCached, s.kernels);
  EXPECT_EQ(s.graphsFromCache, 1) << "the JIT's plan of the segment was not reused";
  EXPECT_EQ(tgc::stats().pipelines_run, 0);
  EXPECT_EQ(tgc::stats().kernels_compiled, 0);

  // The package loads through the same backend and runs compiled.
  tgc::Package pkg = tgc::Package::load(aot.output);
  torch::Tensor u = torch::randn({8, 16}), v = torch::randn({8, 16});
  expectClose(pkg.run({u, v}).at(0), eager.forward({u, v}).toTensor());
  EXPECT_EQ(pkg.lastRunStats().compiled_segments, 1);
  EXPECT_EQ(pkg.lastRunStats().eager_segments, 0);
}

TEST(DeviceBackend, AotIntoAnEmptyCacheBuildsThenAJitCallReusesIt) {
  torch::NoGradGuard noGrad;
  const std::string dir = freshDir("reverse");
  const std::string cache = dir + "/cache";
  const std::string model = saveModel(dir);
  tgc::AotOptions aot;
  aot.model = model;
  aot.output = dir + "/pointwise.tgcpkg";
  aot.inputs = {tgc::parseInputSpec("x:f32[4,32]"), tgc::parseInputSpec("y:f32[4,32]")};
  aot.cacheDir = cache;
  tgc::AotSummary s = tgc::compilePackage(aot);
  EXPECT_GE(s.kernelsCompiled, 1);
  EXPECT_EQ(s.kernelsCached, 0);
  EXPECT_EQ(s.graphsFromCache, 0);

  tgc::Options options;
  options.cache_dir = cache;
  auto jit = tgc::compile(torch::jit::load(model), options);
  tgc::reset();
  torch::Tensor x = torch::randn({4, 32}), y = torch::randn({4, 32});
  expectClose(jit->forward({x, y}).toTensor(), torch::jit::load(model).forward({x, y}).toTensor());
  EXPECT_EQ(tgc::stats().kernels_compiled, 0) << "the JIT rebuilt what tgc-aot had built";
  EXPECT_EQ(tgc::stats().pipelines_run, 0);
  EXPECT_EQ(tgc::stats().graphs_compiled, 1);
}

tgc::TensorSpec spec(std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  tgc::TensorSpec s;
  s.sizes = std::move(sizes);
  s.strides = std::move(strides);
  s.dtype = tgc::DType::Float32;
  return s;
}

TEST(DeviceBackend, OneGuardForEveryCaller) {
  const tgc::DeviceBackend &cpu = tgc::cpuBackend();
  torch::Tensor t = torch::randn({3, 1, 4});
  EXPECT_TRUE(cpu.fits(t, spec({3, 1, 4}, {4, 4, 1})));
  // A size-1 dimension never indexes anything: its stride is not guarded.
  EXPECT_TRUE(cpu.fits(t, spec({3, 1, 4}, {4, 99, 1})));
  EXPECT_FALSE(cpu.fits(t, spec({3, 1, 4}, {1, 4, 3})));        // strides
  EXPECT_FALSE(cpu.fits(t, spec({3, 1, 5}, {5, 5, 1})));        // sizes
  EXPECT_FALSE(cpu.fits(t.to(torch::kDouble), spec({3, 1, 4}, {4, 4, 1}))); // dtype
  EXPECT_FALSE(cpu.fits(torch::Tensor(), spec({3, 1, 4}, {4, 4, 1})));
  // The CUDA backend guards on its device: a CPU tensor never fits it.
  EXPECT_FALSE(tgc::cudaBackend().fits(t, spec({3, 1, 4}, {4, 4, 1})));
  EXPECT_TRUE(tgc::fitsSpec(t, spec({3, 1, 4}, {4, 4, 1}), c10::DeviceType::CPU));
  EXPECT_FALSE(tgc::fitsSpec(t, spec({3, 1, 4}, {4, 4, 1}), c10::DeviceType::CUDA));
}

TEST(DeviceBackend, DevicesNameTheirBackend) {
  EXPECT_EQ(tgc::backendFor("cpu"), &tgc::cpuBackend());
  EXPECT_EQ(tgc::backendFor("cuda"), &tgc::cudaBackend());
  EXPECT_EQ(tgc::backendFor("cuda:1"), &tgc::cudaBackend());
  EXPECT_EQ(tgc::backendFor("xpu"), nullptr);
  EXPECT_STREQ(tgc::cudaBackend().name(), "cuda");
  tgc::Plan plan;
  plan.device = "xpu";
  std::string error;
  EXPECT_EQ(tgc::CompiledGraph::load(plan, error), nullptr);
  EXPECT_NE(error.find("xpu"), std::string::npos) << error;
}

TEST(DeviceBackend, RetargetingMovesFactoriesOfOtherDevicesOnly) {
  tgc::Segment seg;
  tgc::SegmentNode n;
  n.op = "aten::ones";
  tgc::ArgValue device;
  device.kind = tgc::ArgValue::Device;
  device.s = "cpu";
  tgc::ArgValue other = device;
  other.s = "cuda:1"; // already a CUDA device: stays
  tgc::ArgValue text;
  text.kind = tgc::ArgValue::String;
  text.s = "cpu"; // not a device argument
  n.args = {device, other, text};
  seg.nodes.push_back(n);
  tgc::Segment cuda = seg.on("cuda");
  EXPECT_EQ(cuda.device, "cuda");
  EXPECT_EQ(cuda.nodes[0].args[0].s, "cuda");
  EXPECT_EQ(cuda.nodes[0].args[1].s, "cuda:1");
  EXPECT_EQ(cuda.nodes[0].args[2].s, "cpu");
  tgc::Segment back = cuda.on("cpu");
  EXPECT_EQ(back.nodes[0].args[0].s, "cpu");
  EXPECT_EQ(back.nodes[0].args[1].s, "cpu");
  EXPECT_EQ(seg.nodes[0].args[0].s, "cpu") << "on() copies";
}

TEST(DeviceBackend, CpuBuildGoesThroughTheKernelCache) {
  tgc::CacheScope scope(tgc::ArtifactCache::forDirectory(freshDir("kernels")));
  const tgc::DeviceBackend &cpu = tgc::cpuBackend();
  tgc::Plan plan;
  plan.kernels.push_back({});
  plan.kernels[0].name = "k0";
  plan.cpuSource = "extern \"C\" void k0(void *const *) {}\n";
  std::string error;
  tgc::KernelImages first, second;
  ASSERT_TRUE(cpu.build(plan, {"host"}, first, error)) << error;
  EXPECT_EQ(first.compiled + first.cached, 1);
  ASSERT_TRUE(cpu.build(plan, {"host"}, second, error)) << error;
  EXPECT_EQ(second.compiled, 0);
  EXPECT_EQ(second.cached, 1);
  EXPECT_EQ(first.object, second.object);
  tgc::KernelImages rebuilt;
  ASSERT_TRUE(cpu.build(plan, {"host"}, rebuilt, error, /*useCache=*/false)) << error;
  EXPECT_EQ(rebuilt.compiled, 1);
  EXPECT_FALSE(cpu.build(plan, {"sm_90"}, rebuilt, error));
  EXPECT_NE(error.find("host"), std::string::npos) << error;
  // A plan whose kernels have no object does not load.
  EXPECT_EQ(cpu.load(plan, tgc::KernelImages(), error), nullptr);
  EXPECT_NE(error.find("shared object"), std::string::npos) << error;
}

} // namespace
