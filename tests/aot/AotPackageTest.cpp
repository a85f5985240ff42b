//===- AotPackageTest.cpp - packages loaded and run with tgc_runtime only -===//
//
// This binary links tgc_runtime and LibTorch, not tgc_compiler and not MLIR:
// it is what a deployed program looks like. The packages and the models
// they came from are written by the aot.models and aot.compile.* tests
// (TGC_AOT_DIR).
//
//===----------------------------------------------------------------------===//
#include "tgc/Package.h"
#include "runtime/PackageFormat.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>

namespace {

std::string dir() {
  const char *d = std::getenv("TGC_AOT_DIR");
  return d ? d : ".";
}
std::string package(const std::string &name) { return dir() + "/packages/" + name + ".tgcpkg"; }
std::string model(const std::string &name) { return dir() + "/models/" + name + ".pt"; }

std::vector<at::Tensor> eager(const std::string &name, const std::vector<at::Tensor> &inputs) {
  torch::jit::Module m = torch::jit::load(model(name));
  m.eval();
  torch::NoGradGuard noGrad;
  return tgc::flattenOutputs(m.forward(std::vector<c10::IValue>(inputs.begin(), inputs.end())));
}

/// Runs `pkg` and eager on `inputs`; outputs must agree within float32
/// tolerances scaled to the output's magnitude (which must not be tiny).
void expectMatchesEager(const tgc::Package &pkg, const std::string &name,
                        const std::vector<at::Tensor> &inputs) {
  std::vector<at::Tensor> got = pkg.run(inputs), want = eager(name, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].sizes(), want[i].sizes());
    ASSERT_EQ(got[i].scalar_type(), want[i].scalar_type());
    double scale = want[i].abs().max().item<double>();
    double err = (got[i] - want[i]).abs().max().item<double>();
    std::cout << name << " output " << i << ": max abs error " << err << " (max |eager| "
              << scale << ")\n";
    EXPECT_GT(scale, 1e-3) << "the eager output is too small for the comparison to mean much";
    EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-4, 1e-4 * std::max(1.0, scale)))
        << name << " output " << i << " differs from eager by " << err;
  }
}

void expectCompiledModel(const std::string &name) {
  tgc::Package pkg = tgc::Package::load(package(name));
  for (uint64_t seed : {11, 12}) {
    expectMatchesEager(pkg, name, tgc::randomInputs(pkg.inputs(), seed));
    tgc::PackageRunStats s = pkg.lastRunStats();
    EXPECT_GE(s.compiled_segments, 1);
    EXPECT_EQ(s.eager_segments, 0) << "a segment missed its guard on inputs of the right spec";
  }
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Loads `bytes` written to a scratch file; returns the error kind.
tgc::PackageError::Kind loadError(const std::string &bytes, const std::string &tag) {
  std::string path = testing::TempDir() + "/aot-" + tag + ".tgcpkg";
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    tgc::Package::load(path);
  } catch (const tgc::PackageError &e) {
    return e.kind();
  }
  ADD_FAILURE() << tag << ": the package loaded";
  return tgc::PackageError::Kind::Io;
}

} // namespace

TEST(AotPackage, ResNet18MatchesEager) { expectCompiledModel("resnet18"); }
TEST(AotPackage, MobileNetV3SmallMatchesEager) { expectCompiledModel("mobilenet_v3_small"); }
TEST(AotPackage, Gpt2LikeMatchesEager) { expectCompiledModel("gpt2"); }

TEST(AotPackage, IfOnTensorDataRunsBothBranchesCompiled) {
  tgc::Package pkg = tgc::Package::load(package("gate"));
  // gate takes one branch when its input is large and positive, the other
  // when it is large and negative (save_models.py).
  at::Tensor pos = at::rand({4, 16}) + 0.5, neg = -at::rand({4, 16}) - 0.5;
  expectMatchesEager(pkg, "gate", {pos});
  tgc::PackageRunStats p = pkg.lastRunStats();
  expectMatchesEager(pkg, "gate", {neg});
  tgc::PackageRunStats n = pkg.lastRunStats();
  EXPECT_EQ(p.eager_segments, 0);
  EXPECT_EQ(n.eager_segments, 0);
  EXPECT_GE(p.compiled_segments, 3); // before the if, one branch, after
  EXPECT_NE(p.compiled_ids, n.compiled_ids) << "both inputs ran the same segments";
  std::set<int64_t> all(p.compiled_ids.begin(), p.compiled_ids.end());
  all.insert(n.compiled_ids.begin(), n.compiled_ids.end());
  EXPECT_GE(all.size(), 4u) << "both branches should have compiled segments";
}

TEST(AotPackage, UncapturableOpIsAnEagerSegmentThatStillMatches) {
  tgc::Package pkg = tgc::Package::load(package("nonzero"));
  EXPECT_NE(pkg.metadataJson().find("\"op\": \"aten::nonzero\""), std::string::npos)
      << pkg.metadataJson();
  for (uint64_t seed : {1, 2, 3}) {
    expectMatchesEager(pkg, "nonzero", tgc::randomInputs(pkg.inputs(), seed));
    tgc::PackageRunStats s = pkg.lastRunStats();
    EXPECT_GE(s.compiled_segments, 1) << "the ops before nonzero run compiled";
    EXPECT_GE(s.compiled_segments + s.eager_segments, 2);
  }
}

TEST(AotPackage, NonContiguousInputsMatchEager) {
  tgc::Package pkg = tgc::Package::load(package("gate"));
  at::Tensor x = at::randn({16, 4}).t();
  ASSERT_FALSE(x.is_contiguous());
  expectMatchesEager(pkg, "gate", {x});
}

TEST(AotPackage, GuardMissNamesTheInputWhatWasExpectedAndWhatCame) {
  tgc::Package pkg = tgc::Package::load(package("gate"));
  auto message = [&](const std::vector<at::Tensor> &in) -> std::string {
    try {
      pkg.run(in);
    } catch (const tgc::PackageError &e) {
      EXPECT_EQ(e.kind(), tgc::PackageError::Kind::Input);
      return e.what();
    }
    ADD_FAILURE() << "the package accepted inputs that miss its guards";
    return "";
  };
  std::string shape = message({at::randn({2, 16})});
  EXPECT_NE(shape.find("input 'x'"), std::string::npos) << shape;
  EXPECT_NE(shape.find("expected f32[4,16]"), std::string::npos) << shape;
  EXPECT_NE(shape.find("got f32[2,16]"), std::string::npos) << shape;
  std::string dtype = message({at::randn({4, 16}, at::kDouble)});
  EXPECT_NE(dtype.find("got f64[4,16]"), std::string::npos) << dtype;
  std::string count = message({at::randn({4, 16}), at::randn({4, 16})});
  EXPECT_NE(count.find("takes 1 input(s) (x:f32[4,16]), got 2"), std::string::npos) << count;
}

TEST(AotPackage, CorruptTruncatedAndForeignPackagesAreRefused) {
  std::string good = readAll(package("gate"));
  ASSERT_GT(good.size(), 1000u);
  using Kind = tgc::PackageError::Kind;
  std::string flipped = good;
  flipped[good.size() - 10] ^= 0x40;
  EXPECT_EQ(loadError(flipped, "flipped"), Kind::Checksum);
  EXPECT_EQ(loadError(good.substr(0, good.size() - 1), "truncated"), Kind::Checksum);
  EXPECT_EQ(loadError(good.substr(0, 40), "stub"), Kind::Checksum);
  std::string version = good;
  version.replace(16, 6, std::string("9.9.9\0", 6));
  EXPECT_EQ(loadError(version, "tgc-version"), Kind::Version);
  std::string torch = good;
  torch.replace(48, 6, std::string("1.0.0\0", 6));
  EXPECT_EQ(loadError(torch, "torch-version"), Kind::Version);
  EXPECT_EQ(loadError("not a package at all", "text"), Kind::Format);
  EXPECT_THROW(tgc::Package::load(dir() + "/no-such.tgcpkg"), tgc::PackageError);
}

TEST(AotPackage, CudaPackageLoadsButRunsOnlyWithACudaLaunchPath) {
  tgc::Package pkg = tgc::Package::load(package("mlp_cuda"));
  EXPECT_EQ(pkg.backend(), "cuda");
  EXPECT_EQ(pkg.archs(), (std::vector<std::string>{"sm_90", "sm_80"}));
  try {
    pkg.run(tgc::randomInputs(pkg.inputs(), 0));
    ADD_FAILURE() << "a CUDA package ran without a CUDA launch path";
  } catch (const tgc::PackageError &e) {
    EXPECT_EQ(e.kind(), tgc::PackageError::Kind::Device);
  }
}

TEST(AotRuntimeOnly, NoCompilerOrMlirInTheProcess) {
  tgc::Package pkg = tgc::Package::load(package("gate"));
  expectMatchesEager(pkg, "gate", tgc::randomInputs(pkg.inputs(), 5));
  std::string maps = readAll("/proc/self/maps");
  EXPECT_NE(maps.find("libtgc_runtime"), std::string::npos);
  for (const char *lib : {"libtgc_compiler", "libMLIR", "libLLVM", "libtgc_pipeline"})
    EXPECT_EQ(maps.find(lib), std::string::npos) << lib << " is mapped into the process";
}

// Hostile packages at the loader (issue 20 point 4): meta.json and the
// plans mutated and re-sealed (every checksum valid, as a hostile writer
// would make them), so the mutations reach the JSON, plan and segment
// loaders behind the container checks. Each load is a clean PackageError or
// a package that still loads; never a crash or another exception. (The
// kernels' shared object and module.pt are native and TorchScript code by
// design: a signature, not a parser, is their defence.)
TEST(AotHostile, MutatedMetadataAndPlansAreCleanErrors) {
  tgc::DecodedPackage good = tgc::decodePackage(readAll(package("gate")), "gate");
  std::vector<std::string> targets;
  for (const auto &[name, bytes] : good.sections)
    if (name == "meta.json" || name.rfind("plan.", 0) == 0)
      targets.push_back(name);
  ASSERT_GE(targets.size(), 2u);
  std::mt19937_64 rng(23);
  int loaded = 0, refused = 0;
  const std::string path = testing::TempDir() + "/aot-hostile.tgcpkg";
  for (int i = 0; i < 300; ++i) {
    std::vector<tgc::SectionInput> sections;
    const std::string &victim = targets[rng() % targets.size()];
    for (const tgc::PackageSection &info : good.infos) {
      std::string bytes = good.sections.at(info.name);
      if (info.name == victim && !bytes.empty()) {
        for (int m = 0, n = 1 + int(rng() % 4); m < n; ++m) {
          size_t at = rng() % bytes.size();
          switch (rng() % 4) {
          case 0: bytes[at] ^= char(1 + rng() % 255); break;
          case 1: bytes.erase(at, 1 + rng() % 8); break;
          case 2: bytes.insert(at, std::to_string(int64_t(rng()))); break;
          default: bytes.resize(at); break;
          }
          if (bytes.empty())
            break;
        }
      }
      sections.push_back({info.name, bytes, info.compressed});
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << tgc::encodePackage(sections);
    try {
      tgc::Package::load(path);
      ++loaded;
    } catch (const tgc::PackageError &) {
      ++refused;
    } catch (const std::exception &e) {
      FAIL() << "iteration " << i << " (" << victim << "): not a PackageError: " << e.what();
    }
  }
  std::cout << loaded << " mutated packages loaded, " << refused << " refused\n";
  EXPECT_GT(refused, 100);
}
