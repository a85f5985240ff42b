// CUDA-on-CPU emulation: typical fused kernels against CPU references, and
// wrong kernels (divergent barriers) reported as errors instead of hangs.
#include "tests/emu/CudaEmulator.h"
#include "tests/emu/TestKernels.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

namespace tgc::emu {
namespace {

std::vector<float> randomFloats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

float fused(float a, float b) {
  float g = 0.5f * a * (1.0f + std::erf(a * 0.70710678f));
  return g * b + std::tanh(b) - std::exp(-std::fabs(a)) + std::log1p(b * b) +
         1.0f / std::sqrt(1.0f + a * a) +
         std::fmax(a, b) * (1.0f / (2.0f + std::sqrt(std::fabs(b))));
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want, float rtol,
                float atol) {
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])) && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
  EXPECT_EQ(bad, 0u) << "mismatching elements";
}

TEST(CudaEmulator, PointwiseVec4GridStride) {
  auto m = Module::compile(kernels::kPointwiseVec4);
  ASSERT_EQ(m->kernels(), std::vector<std::string>{"pointwise_vec4"});
  for (long long n : {1LL, 7LL, 4096LL, 100003LL}) {
    auto a = randomFloats(n, -3, 3, 1), b = randomFloats(n, -2, 2, 2);
    std::vector<float> out(n, NAN), want(n);
    for (long long i = 0; i < n; ++i)
      want[i] = fused(a[i], b[i]);
    // Fewer threads than vectors: the grid-stride loop and the tail both run.
    launch(m, "pointwise_vec4", {{7}, {256}}, a.data(), b.data(), out.data(), n);
    expectNear(out, want, 1e-5f, 1e-5f);
  }
}

TEST(CudaEmulator, BlockReductionWithWarpShuffles) {
  auto m = Module::compile(kernels::kRowSum);
  for (unsigned block : {32u, 96u, 256u}) {
    const int rows = 37, cols = 1000;
    auto x = randomFloats(rows * cols, -1, 1, 3);
    std::vector<float> out(rows, NAN), want(rows, 0);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        want[r] += x[r * cols + c];
    launch(m, "row_sum", {{(unsigned)rows}, {block}}, x.data(), out.data(), cols);
    expectNear(out, want, 1e-4f, 1e-4f);
  }
}

TEST(CudaEmulator, SoftmaxOneRowPerBlock) {
  auto m = Module::compile(kernels::kSoftmax);
  const int rows = 50, cols = 777;
  auto x = randomFloats(rows * cols, -8, 8, 4);
  std::vector<float> out(rows * cols, NAN), want(rows * cols);
  for (int r = 0; r < rows; ++r) {
    float mx = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c)
      mx = std::fmax(mx, x[r * cols + c]);
    for (int c = 0; c < cols; ++c)
      s += std::exp(x[r * cols + c] - mx);
    for (int c = 0; c < cols; ++c)
      want[r * cols + c] = std::exp(x[r * cols + c] - mx) / s;
  }
  // Fewer blocks than rows: each block loops over rows (persistent style).
  launch(m, "softmax_rows", {{16}, {128}}, x.data(), out.data(), rows, cols);
  expectNear(out, want, 1e-5f, 1e-7f);
}

TEST(CudaEmulator, DynamicSharedMemoryOn2DGrid) {
  auto m = Module::compile(kernels::kTranspose);
  const int rows = 70, cols = 45;
  auto x = randomFloats(rows * cols, -1, 1, 5);
  std::vector<float> out(rows * cols, NAN), want(rows * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      want[c * rows + r] = x[r * cols + c];
  LaunchConfig cfg{
      {(unsigned)(cols + 31) / 32, (unsigned)(rows + 31) / 32}, {32, 8}, 32 * 33 * sizeof(float)};
  launch(m, "transpose_tiles", cfg, x.data(), out.data(), rows, cols);
  EXPECT_EQ(out, want);
}

TEST(CudaEmulator, AtomicsAcrossParallelBlocks) {
  auto m = Module::compile(kernels::kAtomics);
  const int n = 50000;
  auto x = randomFloats(n, 0, 0.9f, 6);
  std::vector<int> bins(16, 0), want(16, 0);
  double total = 0;
  int wantMax = 0;
  for (float v : x) {
    int b = std::min(std::max((int)std::floor(v * 16.0f), 0), 15);
    ++want[b];
    total += v;
    wantMax = std::max(wantMax, b);
  }
  float sum = 0;
  int maxBin = -1;
  unsigned long long count = 0;
  LaunchConfig cfg{{64}, {128}};
  cfg.workers = 4; // blocks really run concurrently
  launch(m, "histogram_atomics", cfg, x.data(), n, bins.data(), &sum, &maxBin, &count);
  EXPECT_EQ(bins, want);
  EXPECT_NEAR(sum, total, 1e-4 * total);
  EXPECT_EQ(maxBin, wantMax);
  EXPECT_EQ(count, (unsigned long long)n);
}

TEST(CudaEmulator, HalfAndBfloat16LoadsStoresAndFloatAccumulation) {
  auto m = Module::compile(kernels::kHalfTypes);
  const int rows = 9, cols = 300;
  auto xf = randomFloats(rows * cols, -2, 2, 7);
  std::vector<c10::BFloat16> x(xf.begin(), xf.end());
  std::vector<c10::Half> out(rows);
  launch(m, "bf16_row_sum_to_half", {{(unsigned)rows}, {64}}, x.data(), out.data(), cols);
  for (int r = 0; r < rows; ++r) {
    float s = 0;
    for (int c = 0; c < cols; ++c)
      s += (float)x[r * cols + c];
    EXPECT_NEAR((float)out[r], s, 1e-3f * std::fabs(s) + 1e-3f) << "row " << r;
  }
  const int n = 1000;
  auto hf = randomFloats(n, -100, 100, 8);
  std::vector<c10::Half> h(hf.begin(), hf.end());
  std::vector<c10::BFloat16> b(n);
  launch(m, "half_to_bf16", {{2}, {256}}, h.data(), b.data(), n);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(b[i].x, c10::BFloat16((float)h[i] * 3.0f + 0.25f).x) << i;
}

TEST(CudaEmulator, PairedHalfArithmetic) {
  auto m = Module::compile(kernels::kHalfTypes);
  const int pairs = 500;
  auto fa = randomFloats(2 * pairs, -3, 3, 20), fb = randomFloats(2 * pairs, -3, 3, 21),
       fc = randomFloats(2 * pairs, -3, 3, 22);
  std::vector<c10::Half> a(fa.begin(), fa.end()), b(fb.begin(), fb.end());
  std::vector<c10::BFloat16> c(fc.begin(), fc.end()), out(2 * pairs);
  launch(m, "half2_fma", {{2}, {128}}, (void *)a.data(), (void *)b.data(), (void *)c.data(),
         (void *)out.data(), pairs);
  for (int i = 0; i < 2 * pairs; ++i) {
    c10::BFloat16 p((float)c10::Half((float)a[i] * (float)b[i]));
    float want = (float)c10::BFloat16((float)p * (float)c[i] + (float)c[i]);
    EXPECT_NEAR((float)out[i], want, 1e-2f * std::fabs(want) + 1e-2f) << i;
  }
}

TEST(CudaEmulator, HalfConversionsAreBitExact) {
  auto m = Module::compile(kernels::kHalfTypes);
  // Random floats over the whole range plus the edges: subnormals, ties,
  // the overflow threshold, infinities.
  std::vector<float> x = {0.0f,           -0.0f,    65504.0f,  65519.99f,      65520.0f,
                          1e-8f,          2.98e-8f, 6.1e-5f,   6.0975552e-05f, 1.0009765625f,
                          1.00048828125f, INFINITY, -INFINITY, 3.4e38f,        -1e-45f};
  std::mt19937 gen(9);
  while (x.size() < 65536) {
    uint32_t bits = gen();
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isnan(f))
      x.push_back(f);
  }
  const int n = (int)x.size();
  std::vector<unsigned short> hb(n), bb(n);
  std::vector<float> fromHalf(n);
  launch(m, "convert_floats", {{64}, {256}}, x.data(), hb.data(), bb.data(), fromHalf.data(), n);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(hb[i], c10::Half(x[i]).x) << "float " << x[i] << " to half";
    ASSERT_EQ(bb[i], c10::BFloat16(x[i]).x) << "float " << x[i] << " to bfloat16";
    c10::Half h(static_cast<unsigned short>(i), c10::Half::from_bits());
    if (!std::isnan((float)h))
      ASSERT_EQ(fromHalf[i], (float)h) << "half bits " << i;
    else
      ASSERT_TRUE(std::isnan(fromHalf[i]));
  }
}

TEST(CudaEmulator, WarpVotesScansAndPartialWidthShuffles) {
  auto m = Module::compile(kernels::kWarpOps);
  const unsigned blocks = 3, block = 96, n = blocks * block;
  std::mt19937 gen(10);
  std::vector<int> x(n), scan(n), half16(n), counts(blocks);
  std::vector<unsigned> ballots(n);
  for (int &v : x)
    v = (int)(gen() % 19) - 9;
  launch(m, "warp_ops", {{blocks}, {block}}, x.data(), scan.data(), ballots.data(), half16.data(),
         counts.data());
  for (unsigned w = 0; w < n / 32; ++w) {
    int run = 0, sum = 0;
    unsigned ballot = 0;
    bool any = false, all = true;
    for (unsigned l = 0; l < 32; ++l) {
      int v = x[w * 32 + l];
      sum += v;
      ballot |= (unsigned)(v > 0) << l;
      any |= v > 4;
      all &= v >= -9;
    }
    for (unsigned l = 0; l < 32; ++l) {
      unsigned i = w * 32 + l;
      run += x[i];
      EXPECT_EQ(scan[i], run) << i;
      EXPECT_EQ(ballots[i], ballot ^ ((unsigned)any << 1) ^ (unsigned)all) << i;
      EXPECT_EQ(half16[i], x[w * 32 + (l & 16) + 3] + sum) << i;
    }
  }
  for (unsigned b = 0; b < blocks; ++b) {
    int c = 0;
    for (unsigned t = 0; t < block; ++t)
      c += x[b * block + t] > 0;
    EXPECT_EQ(counts[b], c);
  }
}

TEST(CudaEmulator, StaticSharedMemoryIsPerBlockUnderParallelBlocks) {
  auto m = Module::compile(kernels::kSharedIsolation);
  for (unsigned workers : {1u, 2u, 4u}) {
    int mismatches = 0;
    LaunchConfig cfg{{40, 3}, {128}};
    cfg.workers = workers;
    launch(m, "shared_isolation", cfg, &mismatches);
    EXPECT_EQ(mismatches, 0) << workers << " workers";
  }
}

TEST(CudaEmulator, MaximumBlockOf1024Threads) {
  auto m = Module::compile(kernels::kRowSum);
  const int rows = 3, cols = 5000;
  auto x = randomFloats(rows * cols, -1, 1, 11);
  std::vector<float> out(rows), want(rows, 0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      want[r] += x[r * cols + c];
  launch(m, "row_sum", {{(unsigned)rows}, {1024}}, x.data(), out.data(), cols);
  expectNear(out, want, 1e-4f, 1e-4f);
}

TEST(CudaEmulator, PartialWarpsWidthsAndBlockVotes) {
  auto m = Module::compile(kernels::kWarpOpsMore);
  const unsigned blocks = 2, block = 40; // a full warp and a warp of 8 lanes
  std::mt19937 gen(16);
  std::vector<int> x(blocks * block), out(blocks * block * 10, -12345);
  for (int &v : x)
    v = (int)(gen() % 19) - 9;
  launch(m, "warp_ops_more", {{blocks}, {block}}, x.data(), out.data());
  for (unsigned b = 0; b < blocks; ++b) {
    bool allAbove = true, anyNine = false;
    for (unsigned t = 0; t < block; ++t)
      allAbove &= x[b * block + t] > -9, anyNine |= x[b * block + t] == 9;
    for (unsigned t = 0; t < block; ++t) {
      const unsigned lane = t % 32, base = b * block + t - lane;
      const unsigned lanes = std::min(32u, block - (t - lane));
      auto at = [&](unsigned l) { return x[base + l]; };
      // A source lane the (partial) warp lacks: the lane's own value.
      auto src = [&](unsigned l) { return l < lanes ? at(l) : at(lane); };
      const int *o = &out[(b * block + t) * 10];
      SCOPED_TRACE("block " + std::to_string(b) + " thread " + std::to_string(t));
      EXPECT_EQ(o[0], (lane % 8) + 3 < 8 ? src(lane + 3) : at(lane));
      EXPECT_EQ(o[1], (lane % 8) >= 2 ? at(lane - 2) : at(lane));
      EXPECT_EQ(o[2], src(lane ^ 4));
      EXPECT_EQ(o[3], at(0));
      EXPECT_EQ(o[4], lane < 16 ? src(15) : at(16));
      EXPECT_EQ(o[5], allAbove);
      EXPECT_EQ(o[6], anyNine);
      int mn = 100, mx = -100;
      for (unsigned l = 0; l < lanes; ++l)
        mn = std::min(mn, at(l)), mx = std::max(mx, at(l));
      EXPECT_EQ(o[7], mn);
      EXPECT_EQ(o[8], mx);
      EXPECT_EQ((unsigned)o[9], lanes == 32 ? 0xffffffffu : (1u << lanes) - 1);
    }
  }
}

TEST(CudaEmulator, ThreeDimensionalGridsAndCasLoops) {
  auto m = Module::compile(kernels::kIndexing3D);
  LaunchConfig cfg{{3, 2, 2}, {4, 3, 2}};
  const unsigned n = 3 * 2 * 2 * 4 * 3 * 2;
  auto x = randomFloats(n, -5, 5, 17);
  std::vector<int> ids(n, -1);
  float mx = -1e30f;
  unsigned ticket = 0;
  int last = -1;
  launch(m, "indexing_3d", cfg, ids.data(), x.data(), &mx, &ticket, &last);
  unsigned i = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx)
              EXPECT_EQ(ids[i++], (int)(bz << 24 | by << 18 | bx << 12 | tz << 8 | ty << 4 | tx));
  EXPECT_EQ(mx, *std::max_element(x.begin(), x.end()));
  EXPECT_EQ(ticket, n);
  EXPECT_GE(last, 0);
  EXPECT_LT(last, (int)n);
}

TEST(CudaEmulator, ResultsDoNotDependOnWorkersOrSchedule) {
  auto m = Module::compile(kernels::kSoftmax);
  const int rows = 64, cols = 300;
  auto x = randomFloats(rows * cols, -4, 4, 18);
  std::vector<float> first;
  using S = LaunchConfig::Schedule;
  for (auto [workers, schedule] :
       {std::pair{1u, S::Forward}, {4u, S::Forward}, {1u, S::Reverse}, {2u, S::Shuffled}}) {
    std::vector<float> out(rows * cols);
    LaunchConfig cfg{{32}, {128}};
    cfg.workers = workers;
    cfg.schedule = schedule;
    launch(m, "softmax_rows", cfg, x.data(), out.data(), rows, cols);
    if (first.empty())
      first = out;
    EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * sizeof(float)))
        << workers << " workers, schedule " << (int)schedule;
  }
}

TEST(CudaEmulator, AnotherScheduleExposesAMissingBarrier) {
  auto m = Module::compile(kernels::kNeighbourRead);
  const unsigned blocks = 4, block = 128, n = blocks * block;
  auto x = randomFloats(n, -1, 1, 19);
  std::vector<float> want(n);
  for (unsigned i = 0; i < n; ++i)
    want[i] = x[i / block * block + (i % block + 1) % block];
  using S = LaunchConfig::Schedule;
  auto run = [&](S schedule, int racy) {
    std::vector<float> out(n);
    LaunchConfig cfg{{blocks}, {block}};
    cfg.schedule = schedule;
    launch(m, "neighbour_read", cfg, x.data(), out.data(), racy);
    return out;
  };
  for (S s : {S::Forward, S::Reverse, S::Shuffled})
    EXPECT_EQ(run(s, 0), want) << "with the barrier, schedule " << (int)s;
  EXPECT_NE(run(S::Forward, 1), run(S::Reverse, 1)) << "the race is visible";
}

TEST(CudaEmulator, TheStragglerScheduleExposesAReusedSharedArray) {
  auto m = Module::compile(kernels::kTwoSums);
  const unsigned blocks = 6, n = blocks * 256;
  auto x = randomFloats(n, -1, 1, 23);
  std::vector<float> want(2 * n);
  for (unsigned b = 0; b < blocks; ++b) {
    float s1 = 0, s2 = 0;
    for (unsigned t = 0; t < 256; ++t)
      s1 += x[b * 256 + t], s2 += x[b * 256 + t] * x[b * 256 + t];
    for (unsigned t = 0; t < 256; ++t)
      want[2 * (b * 256 + t)] = s1, want[2 * (b * 256 + t) + 1] = s2;
  }
  using S = LaunchConfig::Schedule;
  auto run = [&](S schedule, unsigned workers, int racy) {
    std::vector<float> out(2 * n);
    LaunchConfig cfg{{blocks}, {256}};
    cfg.schedule = schedule;
    cfg.workers = workers;
    launch(m, "two_sums", cfg, x.data(), out.data(), racy);
    return out;
  };
  for (unsigned workers : {1u, 3u})
    for (S s : {S::Forward, S::Reverse, S::Shuffled, S::Straggler}) {
      std::vector<float> got = run(s, workers, 0);
      expectNear(got, want, 1e-4f, 1e-4f);
      EXPECT_EQ(got, run(s, workers, 0)) << "schedule " << (int)s << " repeats";
    }
  // Without the barrier a held-back warp reads the second sum's parts.
  std::vector<float> racy = run(S::Straggler, 1, 1);
  size_t wrong = 0;
  for (size_t i = 0; i < racy.size(); i += 2)
    wrong += std::fabs(racy[i] - want[i]) > 1e-3f;
  EXPECT_GT(wrong, 0u) << "the straggler schedule did not expose the missing barrier";
}

TEST(CudaEmulator, StaticSharedMemoryIsPoisonedAtEveryBlockStart) {
  auto m = Module::compile(kernels::kSharedBeforeWrite);
  for (unsigned workers : {1u, 2u}) {
    const unsigned blocks = 12, block = 256;
    std::vector<unsigned> out(2 * blocks * block, 7);
    LaunchConfig cfg{{blocks}, {block}};
    cfg.workers = workers;
    launch(m, "shared_before_write", cfg, out.data());
    for (size_t i = 0; i < out.size(); i += 2) {
      ASSERT_EQ(out[i], 0xffffffffu) << "word " << i / 2 << ", " << workers << " workers";
      ASSERT_EQ(out[i + 1], 1u) << "float " << i / 2 << " is not NaN, " << workers << " workers";
    }
  }
}

TEST(CudaEmulator, TypeLayoutsMatchCuda) {
  auto m = Module::compile(kernels::kTypeLayout); // the static_asserts are the test
  int size = 0;
  launch(m, "type_layout", {{1}, {1}}, &size);
  EXPECT_EQ(size, 16);
}

// --- wrong kernels and wrong launches: clear errors, no hangs -----------------

std::string launchError(const std::function<void()> &f) {
  try {
    f();
  } catch (const EmuError &e) {
    return e.what();
  }
  return "";
}

TEST(CudaEmulatorErrors, DivergentSyncthreadsIsReported) {
  auto m = Module::compile(kernels::kDivergentBarrier);
  std::vector<float> out(64, 0);
  std::string e = launchError([&] { launch(m, "divergent_barrier", {{2}, {64}}, out.data()); });
  EXPECT_NE(e.find("deadlock in kernel divergent_barrier, block (0,0,0)"), std::string::npos) << e;
  EXPECT_NE(e.find("16 threads wait at __syncthreads"), std::string::npos) << e;
  EXPECT_NE(e.find("48 threads have exited (first: thread (16,0,0))"), std::string::npos) << e;
}

TEST(CudaEmulatorErrors, ReturnBeforeBarrierIsReported) {
  auto m = Module::compile(kernels::kDivergentBarrier);
  std::vector<float> out(64, 1.0f);
  std::string e = launchError([&] {
    launch(m, "return_before_barrier", {{1}, {64}}, out.data(), 50);
  });
  EXPECT_NE(e.find("50 threads wait at __syncthreads"), std::string::npos) << e;
  EXPECT_NE(e.find("14 threads have exited"), std::string::npos) << e;
  // The same kernel is fine when every thread reaches the barrier.
  EXPECT_EQ(launchError([&] {
              launch(m, "return_before_barrier", {{1}, {64}}, out.data(), 64);
            }),
            "");
}

TEST(CudaEmulatorErrors, DivergentShuffleIsReported) {
  auto m = Module::compile(kernels::kDivergentBarrier);
  std::vector<float> out(32, 1.0f);
  std::string e = launchError([&] { launch(m, "divergent_shuffle", {{1}, {32}}, out.data()); });
  EXPECT_NE(e.find("8 threads wait in a warp operation"), std::string::npos) << e;
  EXPECT_NE(e.find("warp 0: lanes 0x000000ff wait for lanes 0xffffff00"), std::string::npos) << e;
}

TEST(CudaEmulatorErrors, DeviceAssertIsReported) {
  auto m = Module::compile(kernels::kDivergentBarrier);
  std::vector<float> x = randomFloats(300, 0, 1, 12);
  EXPECT_EQ(launchError([&] { launch(m, "device_assert", {{3}, {128}}, x.data(), 300); }), "");
  x[170] = -1.0f;
  std::string e = launchError([&] { launch(m, "device_assert", {{3}, {128}}, x.data(), 300); });
  EXPECT_NE(e.find("block (1,0,0), thread (42,0,0): device assertion `in0[i] >= 0.0f` failed"),
            std::string::npos)
      << e;
}

TEST(CudaEmulatorErrors, OneBadBlockAmongParallelBlocksIsReported) {
  auto m = Module::compile(kernels::kOneBadBlock);
  std::vector<float> out(100 * 64);
  LaunchConfig cfg{{100}, {64}};
  cfg.workers = 4;
  std::string e = launchError([&] { launch(m, "one_bad_block", cfg, out.data()); });
  EXPECT_NE(e.find("deadlock in kernel one_bad_block, block (57,0,0): 3 threads wait at "
                   "__syncthreads (first: thread (0,0,0)); 61 threads have exited"),
            std::string::npos)
      << e;
  e = launchError([&] { launch(m, "trapping", cfg, out.data()); });
  EXPECT_NE(e.find("kernel trapping, block (2,0,0), thread (5,0,0): __trap() called"),
            std::string::npos)
      << e;
  // The module still works after a failed launch.
  cfg.grid = {56};
  EXPECT_EQ(launchError([&] { launch(m, "one_bad_block", cfg, out.data()); }), "");
}

// A crash stays a crash, but the message says which CUDA thread caused it.
TEST(CudaEmulatorFaults, StackOverflowAndBadAddressesNameTheThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto m = Module::compile(R"(
extern "C" __global__ void deep_stack(float *out0, int n) {
  volatile float big[65536]; // 256 KiB of locals on a 64 KiB stack
  for (int i = 0; i < n; ++i)
    big[i] = i;
  out0[threadIdx.x] = big[n - 1];
}
extern "C" __global__ void bad_pointer(float *out0) {
  out0[threadIdx.x + (blockIdx.x == 1 && threadIdx.x == 7 ? (1LL << 40) : 0)] = 1.0f;
}
)");
  std::vector<float> out(64);
  LaunchConfig one{{1}, {32}};
  one.workers = 1;
  EXPECT_DEATH(launch(m, "deep_stack", one, out.data(), 65536),
               "stack overflow in kernel deep_stack, block \\(0,0,0\\), thread \\(0,0,0\\)");
  EXPECT_DEATH(launch(m, "bad_pointer", {{2}, {32}}, out.data()),
               "invalid memory access in kernel bad_pointer, block \\(1,0,0\\), thread "
               "\\(7,0,0\\)");
  launch(m, "bad_pointer", {{1}, {32}}, out.data()); // block 0 stays in bounds
  EXPECT_EQ(out[7], 1.0f);
}

TEST(CudaEmulatorErrors, BadLaunchesAndSources) {
  auto m = Module::compile(kernels::kRowSum);
  float *p = nullptr;
  EXPECT_NE(launchError([&] {
              launch(m, "nope", {{1}, {32}}, p);
            }).find("no __global__ function 'nope' in the emulated source (it has: row_sum)"),
            std::string::npos);
  EXPECT_NE(launchError([&] {
              launch(m, "row_sum", {{1}, {32}}, p, p, 1LL);
            }).find("parameter 2 has 4 bytes; the launch passes 8"),
            std::string::npos);
  EXPECT_NE(launchError([&] {
              launch(m, "row_sum", {{1}, {2048}}, p, p, 1);
            }).find("invalid launch of row_sum"),
            std::string::npos);
  auto softmax = Module::compile(kernels::kSoftmax);
  EXPECT_NE(launchError([&] {
              launch(softmax, "softmax_rows", {{1}, {256}}, p, p, 1, 1);
            }).find("256 threads a block, but its __launch_bounds__ allows 128"),
            std::string::npos);
  std::string e =
      launchError([] { Module::compile("extern \"C\" __global__ void k() { nope(); }"); });
  EXPECT_NE(e.find("the host compiler rejected the emulated CUDA source (kept at "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("nope"), std::string::npos) << e;
}

TEST(CudaEmulatorSource, ExternSharedBecomesThePointerToDynamicSharedMemory) {
  std::vector<std::string> names;
  std::string s =
      emulatedSource("// extern __shared__ float commented[];\n"
                     "extern \"C\" __global__ void __launch_bounds__(128, 2) a(float *x) {\n"
                     "  extern __shared__ __align__(16) float4 buf[];\n  x[0] = buf[0].x;\n}\n"
                     "template <int N> __global__ void t(float *x) {}\n"
                     "__global__ void\nb(int n) {}\n",
                     names);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  std::vector<unsigned> bounds;
  emulatedSource("extern \"C\" __global__ void __launch_bounds__( 128 , 2) a() {}\n"
                 "__global__ void __launch_bounds__(N) b() {}\n__global__ void c() {}\n",
                 names, &bounds);
  EXPECT_EQ(bounds, (std::vector<unsigned>{128, 1024, 1024}));
  EXPECT_NE(s.find("float4 *const buf = reinterpret_cast<float4 *>(tgc_emu_dynamic_shared());"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("// extern __shared__ float commented[];"), std::string::npos);
  EXPECT_THROW(emulatedSource("extern __shared__ float g[];\n", names), EmuError);
}

} // namespace
} // namespace tgc::emu

namespace tgc::emu {
namespace {

const char *kNumerics = R"(
extern "C" __global__ void numerics(const float *a, const float *b, const float *c, float *out,
                                    int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[5 * i] = a[i] * b[i] + c[i];
    out[5 * i + 1] = expf(a[i]);
    out[5 * i + 2] = __expf(a[i]);
    out[5 * i + 3] = tanhf(b[i]);
    out[5 * i + 4] = rsqrtf(c[i] + 2.0f);
  }
})";

/// Module::compile with TGC_EMU_NUMERICS set to `numerics` (restored after).
std::shared_ptr<Module> compileWithNumerics(const char *source, const char *numerics) {
  const char *old = std::getenv("TGC_EMU_NUMERICS");
  std::string saved = old ? old : "";
  ::setenv("TGC_EMU_NUMERICS", numerics, 1);
  std::shared_ptr<Module> m;
  try {
    m = Module::compile(source);
  } catch (...) {
    old ? ::setenv("TGC_EMU_NUMERICS", saved.c_str(), 1) : ::unsetenv("TGC_EMU_NUMERICS");
    throw;
  }
  old ? ::setenv("TGC_EMU_NUMERICS", saved.c_str(), 1) : ::unsetenv("TGC_EMU_NUMERICS");
  return m;
}

int64_t ulpsApart(float x, float y) {
  int32_t a, b;
  std::memcpy(&a, &x, 4);
  std::memcpy(&b, &y, 4);
  if (a < 0)
    a = INT32_MIN - a;
  if (b < 0)
    b = INT32_MIN - b;
  return std::llabs(int64_t(a) - b);
}

TEST(CudaEmulator, GpuNumericsContractMultiplyAddsAndPerturbMathWithinCudasBounds) {
  const int n = 4096;
  auto a = randomFloats(n, -4, 4, 31), b = randomFloats(n, -3, 3, 32),
       c = randomFloats(n, -1, 1, 33);
  auto run = [&](const char *numerics) {
    auto m = compileWithNumerics(kNumerics, numerics);
    std::vector<float> out(5 * n);
    launch(m, "numerics", LaunchConfig{{n / 256}, {256}}, a.data(), b.data(), c.data(),
           out.data(), n);
    return out;
  };
  std::vector<float> exact = run("exact"), gpu = run("gpu");
  int fusedDiffers = 0, expMoved = 0, fastExpMoved = 0, tanhMoved = 0, rsqrtMoved = 0;
  for (int i = 0; i < n; ++i) {
    volatile float product = a[i] * b[i]; // rounded on its own
    float separate = product + c[i], fused = std::fma(a[i], b[i], c[i]);
    ASSERT_EQ(exact[5 * i], separate) << i;
    ASSERT_EQ(gpu[5 * i], fused) << i << ": a * b + c is one fused multiply-add";
    fusedDiffers += fused != separate;
    // The exact configuration is glibc's result; the GPU one within CUDA's bound.
    float e = std::exp(a[i]), t = std::tanh(b[i]), r = 1.0f / std::sqrt(c[i] + 2.0f);
    ASSERT_EQ(exact[5 * i + 1], e);
    ASSERT_EQ(exact[5 * i + 2], e);
    ASSERT_EQ(exact[5 * i + 3], t);
    ASSERT_EQ(exact[5 * i + 4], r);
    ASSERT_LE(ulpsApart(gpu[5 * i + 1], e), 2) << "expf(" << a[i] << ")";
    ASSERT_LE(ulpsApart(gpu[5 * i + 2], e), 2 + int(std::fabs(1.173f * a[i]))) << a[i];
    ASSERT_LE(ulpsApart(gpu[5 * i + 3], t), 2) << "tanhf(" << b[i] << ")";
    ASSERT_LE(ulpsApart(gpu[5 * i + 4], r), 2) << "rsqrtf";
    expMoved += gpu[5 * i + 1] != e;
    fastExpMoved += gpu[5 * i + 2] != e;
    tanhMoved += gpu[5 * i + 3] != t;
    rsqrtMoved += gpu[5 * i + 4] != r;
  }
  // Most results move (k = 0 is one of 2n+1 choices), and contraction changes some.
  EXPECT_GT(fusedDiffers, n / 20);
  EXPECT_GT(expMoved, n / 2);
  EXPECT_GT(fastExpMoved, n / 2);
  EXPECT_GT(tanhMoved, n / 2);
  EXPECT_GT(rsqrtMoved, n / 2);
  EXPECT_THROW(compileWithNumerics(kNumerics, "fast"), EmuError);
}

} // namespace
} // namespace tgc::emu
