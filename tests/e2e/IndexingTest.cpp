// Indexing, concatenation and padding ops lowered by tg (gather, concat, pad,
// scatter_add): each case × dtype × layout must match eager exactly, run as
// kernels only (no ATen call, no fallback), and out-of-range indices raise
// IndexError as eager does.
#include "tgc/tgc.h"

#include "tests/e2e/ExpectCompiled.h"

#include "tests/e2e/IndexingCases.h"

#include "tests/e2e/RandomTensors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace {

using namespace tgc::test::indexing;

class Indexing : public ::testing::TestWithParam<std::tuple<int, torch::ScalarType>> {};

TEST_P(Indexing, MatchesEagerWithKernelsOnly) {
  auto [index, dtype] = GetParam();
  IndexCase c = cases()[index];
  torch::NoGradGuard noGrad;
  for (std::string layout : {"contiguous", "transposed", "broadcast"}) {
    for (auto itype : {torch::kLong, torch::kInt}) {
      bool intIndexUsed = c.name.rfind("gather", 0) != 0 && c.high > 1;
      if (itype == torch::kInt && !intIndexUsed)
        continue; // gather takes int64 only; cat/stack/pad take no index
      SCOPED_TRACE(c.name + " / " + layout + " / " + c10::toString(dtype) + " / index " +
                   c10::toString(itype));
      torch::manual_seed(index);
      torch::Tensor x = layoutOf(layout, c.data, dtype);
      torch::Tensor i = torch::randint(c.low, c.high, c.index).to(itype);
      if (layout == "transposed" && c.index.size() == 2)
        i = torch::randint(c.low, c.high, {c.index[1], c.index[0]}).to(itype).t(); // strided index
      tgc::reset();
      auto f = tgc::compile(c.fn);
      torch::Tensor got = f(x, i);
      torch::Tensor want = c.fn(x, i);
      ASSERT_EQ(got.sizes(), want.sizes());
      ASSERT_EQ(got.scalar_type(), want.scalar_type());
      EXPECT_TRUE(torch::equal(got, want)) << "got\n" << got << "\nwant\n" << want;
      tgc::Stats s = tgc::stats();
      EXPECT_EQ(s.eager_fallbacks, 0);
      EXPECT_EQ(s.extern_calls, 0) << "an op was not lowered by tg";
      EXPECT_EQ(s.kernel_launches, c.kernels);
    }
  }
}

std::string caseName(const ::testing::TestParamInfo<Indexing::ParamType> &info) {
  return cases()[std::get<0>(info.param)].name + "_" + c10::toString(std::get<1>(info.param));
}

std::vector<std::tuple<int, torch::ScalarType>> matrix() {
  std::vector<std::tuple<int, torch::ScalarType>> out;
  for (int i = 0; i < (int)cases().size(); ++i)
    for (auto dt : {torch::kFloat, torch::kBFloat16, torch::kHalf, torch::kLong, torch::kInt})
      out.emplace_back(i, dt);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ops, Indexing, ::testing::ValuesIn(matrix()), caseName);

/// Runs `fn` compiled and eager: eager raises (an IndexError or a plain
/// c10::Error, depending on the op), tgc an IndexError naming the index.
template <class F, class... T> void expectIndexError(F fn, T... args) {
  EXPECT_THROW(fn(args...), c10::Error) << "eager";
  tgc::reset();
  auto f = tgc::compile(fn);
  try {
    f(args...);
    ADD_FAILURE() << "tgc did not raise";
  } catch (const c10::IndexError &e) {
    EXPECT_NE(std::string(e.what()).find("out of bounds"), std::string::npos) << e.what();
  }
}

TEST(IndexingErrors, OutOfRangeIndicesRaiseIndexError) {
  torch::NoGradGuard noGrad;
  torch::Tensor w = torch::randn({10, 4});
  using T = torch::Tensor;
  expectIndexError([](T w, T i) { return torch::embedding(w, i) + 1; }, w, torch::tensor({1, 10}));
  expectIndexError([](T w, T i) { return torch::embedding(w, i); }, w, torch::tensor({-1, 2}));
  expectIndexError([](T x, T i) { return x.index_select(1, i); }, w, torch::tensor({0, 4}));
  expectIndexError([](T x, T i) { return torch::gather(x, 0, i); }, w,
                   torch::tensor({{0, 1}, {11, 2}}));
  expectIndexError([](T x, T i) { return x.index({i}); }, w, torch::tensor({-11, 3}));
}

// Gathers of short rows run in one flat SIMD loop whose index checks are
// branch-free reductions: one bad index among thousands, anywhere in a
// chunk, is still reported with its value, and good calls after it run.
TEST(IndexingErrors, BadIndexInAVectorizedGatherIsReportedWithItsValue) {
  torch::NoGradGuard noGrad;
  using T = torch::Tensor;
  auto fn = [](T table, T i) { return torch::embedding(table, i) * 2; };
  torch::manual_seed(3);
  T table = torch::randn({169, 4});
  T good = torch::randint(0, 169, {3000});
  tgc::reset();
  auto f = tgc::compile(fn);
  EXPECT_TRUE(torch::equal(f(table, good), fn(table, good)));
  for (int64_t bad : {169, 1000, -170, -1}) {
    for (int64_t at : {0, 1234, 2999}) {
      SCOPED_TRACE("index " + std::to_string(bad) + " at " + std::to_string(at));
      T i = good.clone();
      i[at] = bad;
      EXPECT_THROW(fn(table, i), c10::Error); // embedding does not wrap: -1 is bad too
      try {
        f(table, i);
        ADD_FAILURE() << "tgc did not raise";
      } catch (const c10::IndexError &e) {
        EXPECT_NE(std::string(e.what()).find("index " + std::to_string(bad) + " is out of bounds"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  EXPECT_TRUE(torch::equal(f(table, good), fn(table, good)));
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
}

TEST(IndexingErrors, ScatterAddOutOfRangeRaises) {
  torch::NoGradGuard noGrad;
  using T = torch::Tensor;
  auto fn = [](T s, T i) { return s.scatter_add(0, i, torch::ones_like(i, s.options())); };
  EXPECT_ANY_THROW(fn(torch::zeros({3, 2}), torch::tensor({{0, 3}})));
  tgc::reset();
  auto f = tgc::compile(fn);
  EXPECT_ANY_THROW(f(torch::zeros({3, 2}), torch::tensor({{0, 3}})));
}

TEST(Indexing, NegativeIndicesWrapInAdvancedIndexingOnly) {
  torch::NoGradGuard noGrad;
  torch::Tensor x = torch::randn({6, 3});
  torch::Tensor i = torch::tensor({-1, -6, 5, 0});
  tgc::reset();
  auto f = tgc::compile([](torch::Tensor x, torch::Tensor i) { return x.index({i}) * 2; });
  EXPECT_TRUE(torch::equal(f(x, i), x.index({i}) * 2));
  tgc::test::expectCompiled(1, 1);
}

TEST(Indexing, ScatterAddMatchesEager) {
  torch::NoGradGuard noGrad;
  for (auto dt : {torch::kFloat, torch::kDouble, torch::kLong, torch::kBFloat16}) {
    for (int64_t dim : {0, 1}) {
      SCOPED_TRACE(std::string(c10::toString(dt)) + " dim " + std::to_string(dim));
      torch::manual_seed(dim);
      torch::Tensor self = rnd({5, 4}, dt);
      torch::Tensor src = rnd({8, 6}, dt).t(); // [6, 8], strided
      torch::Tensor index = dim == 0 ? torch::randint(0, 5, {6, 3}) : torch::randint(0, 4, {4, 7});
      auto fn = [dim](torch::Tensor s, torch::Tensor i, torch::Tensor src) {
        return (s * 2).scatter_add(dim, i, src);
      };
      tgc::reset();
      auto f = tgc::compile(fn);
      torch::Tensor got = f(self, index, src), want = fn(self, index, src);
      double tol = dt == torch::kBFloat16 ? 2e-2 : 1e-6;
      EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), tol, tol))
          << got << want;
      EXPECT_EQ(tgc::stats().extern_calls, 0);
      EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
    }
  }
}

TEST(Indexing, InPlaceScatterAddOnAFreshBufferIsFunctionalized) {
  torch::NoGradGuard noGrad;
  torch::Tensor src = torch::randn({10, 3});
  torch::Tensor index = torch::randint(0, 4, {10, 3});
  auto fn = [](torch::Tensor src, torch::Tensor i) {
    torch::Tensor acc = torch::zeros({4, 3});
    acc.scatter_add_(0, i, src);
    return acc * 3;
  };
  tgc::reset();
  auto f = tgc::compile(fn);
  EXPECT_TRUE(torch::allclose(f(src, index), fn(src, index), 1e-5, 1e-5));
  EXPECT_EQ(tgc::stats().extern_calls, 0);
}

TEST(Indexing, ZeroSizeIndicesAndPieces) {
  torch::NoGradGuard noGrad;
  using T = torch::Tensor;
  torch::Tensor w = torch::randn({10, 4});
  std::vector<std::pair<std::string, std::function<T(T, T)>>> fns = {
      {"embedding", [](T w, T i) { return torch::embedding(w, i); }},
      {"index_select", [](T w, T i) { return w.index_select(0, i); }},
      {"index", [](T w, T i) { return w.index({i}) + 1; }},
      {"cat", [](T w, T i) { return torch::cat({w.slice(0, 0, 0), w}, 0); }},
      {"pad_empty", [](T w, T i) { return torch::constant_pad_nd(w.slice(0, 0, 0), {0, 0, 1, 1}, 3); }},
  };
  for (auto &[name, fn] : fns) {
    SCOPED_TRACE(name);
    torch::Tensor i = torch::empty({0}, torch::kLong);
    tgc::reset();
    auto f = tgc::compile(fn);
    torch::Tensor got = f(w, i), want = fn(w, i);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::equal(got, want));
    EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
  }
}

TEST(Indexing, CatPromotesTypes) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor a, torch::Tensor b) { return torch::cat({a, b}, 1); };
  torch::Tensor a = torch::randn({3, 2}), b = torch::randint(0, 9, {3, 4});
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::Tensor got = f(a, b);
  EXPECT_EQ(got.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(got, fn(a, b)));
  EXPECT_EQ(tgc::stats().extern_calls, 0);
}

} // namespace
