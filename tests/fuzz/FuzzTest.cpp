// The generated-program fuzz test: random programs (tests/fuzz/Program.h)
// compiled by tgc::compile and compared with eager, call after call,
// outputs and written inputs alike. Each program runs in a forked child so
// a crash or hang is a reported failure with its program, not a dead test
// binary; a failing program is shrunk to a minimal reproducer that is
// printed as C++.
//
// 20 shards x 25 programs (seeds 1..500) run in CI. TGC_FUZZ_SEED=S runs
// seeds S.. (TGC_FUZZ_COUNT of them, default 1) in shard 0 alone;
// TGC_FUZZ_COUNT alone changes the programs per shard; TGC_FUZZ_VERBOSE=1
// prints every program and its counters.
#include "tests/fuzz/Program.h"

#include "tgc/tgc.h"


#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

namespace tgc::fuzz {
namespace {

constexpr int kShards = 20;
constexpr int kPerShard = 25;
constexpr unsigned kTimeoutS = 300;

struct Outcome {
  bool ok = false;
  std::string what; ///< why not, when !ok
  int64_t graphs = 0, launches = 0, fallbacks = 0, breaks = 0;
};

/// In the child: compile `p`, call it twice on fresh inputs and compare each
/// call's outputs and inputs (programs may write them) with eager's.
std::string checkInChild(const Program &p, Outcome &o) {
  tgc::reset();
  auto compiled = tgc::compile(
      [&p](at::Tensor a, at::Tensor b, at::Tensor c) { return run(p, {a, b, c}); });
  Reference exact;
  try {
    exact = reference(p);
  } catch (const std::exception &) {
    // float64 differs (an op without a double kernel): compare with eager only
  }
  auto exactOf = [](const std::vector<at::Tensor> &v, size_t i) {
    return i < v.size() ? v[i] : at::Tensor();
  };
  for (int call = 1; call <= 2; ++call) {
    std::vector<at::Tensor> eagerIn = makeInputs(p);
    std::vector<at::Tensor> want = run(p, eagerIn);
    std::vector<at::Tensor> in = makeInputs(p);
    std::vector<at::Tensor> got;
    try {
      got = compiled(in[0], in[1], in[2]);
    } catch (const std::exception &e) {
      return format("call {}: the compiled program threw: {}", call, e.what());
    }
    if (got.size() != want.size())
      return format("call {}: {} outputs instead of {}", call, got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      if (std::string why = compare(got[i], want[i], exactOf(exact.outputs, i)); !why.empty())
        return format("call {}: output {} (v{}): {}", call, i, p.outputs[i], why);
    for (size_t i = 0; i < in.size(); ++i)
      if (std::string why = compare(in[i], eagerIn[i], exactOf(exact.inputs, i)); !why.empty())
        return format("call {}: input v{} after the call (the program writes it): {}", call,
                           i, why);
  }
  tgc::Stats s = tgc::stats();
  o.graphs = s.graphs_compiled;
  o.launches = s.kernel_launches;
  o.fallbacks = s.eager_fallbacks;
  o.breaks = s.graph_breaks;
  return "";
}

/// Runs `body` in a forked child, so a crash or a hang is an outcome like
/// a failure it reports ("" = passed).
Outcome isolated(const std::function<std::string(Outcome &)> &body) {
  int fds[2];
  if (pipe(fds) != 0)
    return {false, std::string("pipe: ") + std::strerror(errno)};
  fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0)
    return {false, std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    close(fds[0]);
    alarm(kTimeoutS);
    Outcome o;
    std::string why;
    try {
      why = body(o);
    } catch (const std::exception &e) {
      why = std::string("threw outside the compiled call: ") + e.what();
    }
    std::string line = why.empty() ? format("OK {} {} {} {}", o.graphs, o.launches,
                                                 o.fallbacks, o.breaks)
                                   : "FAIL " + why;
    (void)!write(fds[1], line.data(), line.size());
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Outcome o;
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    o.what = sig == SIGALRM ? format("hung: no result in {} s", kTimeoutS)
                            : format("crashed: signal {} ({})", sig, strsignal(sig));
  } else if (text.rfind("OK ", 0) == 0) {
    o.ok = true;
    std::sscanf(text.c_str() + 3, "%ld %ld %ld %ld", &o.graphs, &o.launches, &o.fallbacks,
                &o.breaks);
  } else if (text.rfind("FAIL ", 0) == 0) {
    o.what = text.substr(5);
  } else {
    o.what = format("the child exited with status {} and no result", WEXITSTATUS(status));
  }
  return o;
}

Outcome check(const Program &p) {
  return isolated([&](Outcome &o) { return checkInChild(p, o); });
}

std::optional<uint64_t> envNumber(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return std::nullopt;
  return std::strtoull(v, nullptr, 10);
}

class Fuzz : public testing::TestWithParam<int> {};

TEST_P(Fuzz, GeneratedProgramsMatchEager) {
  at::set_num_threads(1); // fork-safe: no OpenMP team in the parent
  const int shard = GetParam();
  std::optional<uint64_t> seed = envNumber("TGC_FUZZ_SEED");
  std::optional<uint64_t> count = envNumber("TGC_FUZZ_COUNT");
  uint64_t first = 1 + uint64_t(shard) * kPerShard;
  uint64_t n = count.value_or(kPerShard);
  if (seed) {
    if (shard != 0)
      GTEST_SKIP() << "TGC_FUZZ_SEED is set: shard 0 runs it";
    first = *seed;
    n = count.value_or(1);
  }
  int fully = 0, steps = 0;
  for (uint64_t s = first; s < first + n; ++s) {
    Program p = generate(s);
    ASSERT_FALSE(p.steps.empty()) << "seed " << s << " generated no step";
    ASSERT_TRUE(valid(p)) << "seed " << s << " generated a program eager rejects:\n" << describe(p);
    steps += p.steps.size();
    Outcome o = check(p);
    if (!o.ok) {
      Program small = shrink(p, [](const Program &q) { return !check(q).ok; });
      Outcome again = check(small);
      ADD_FAILURE() << "fuzz seed " << s << ": " << o.what << "\nminimal reproducer ("
                    << small.steps.size() << " of " << p.steps.size() << " steps; "
                    << (again.ok ? "passes?!" : again.what) << "):\n"
                    << describe(small) << "full program:\n"
                    << describe(p);
      continue;
    }
    fully += o.graphs > 0 && o.fallbacks == 0;
    if (std::getenv("TGC_FUZZ_VERBOSE"))
      std::printf("seed %lu: %ld graphs, %ld kernel launches, %ld eager fallbacks, %ld breaks\n%s",
                  static_cast<unsigned long>(s), long(o.graphs), long(o.launches),
                  long(o.fallbacks), long(o.breaks), describe(p).c_str());
  }
  // Compiled, not merely survived: most programs run as compiled graphs
  // with nothing eager (the rest break on data-dependent shapes or run
  // ops tgc hands to eager).
  std::printf("fuzz shard %d: %lu programs, %d steps, %d compiled with no eager fallback\n",
              shard, static_cast<unsigned long>(n), steps, fully);
  if (n >= 10)
    EXPECT_GE(fully, int(n) * 4 / 5) << "most programs should compile with no eager fallback";
}

INSTANTIATE_TEST_SUITE_P(Shards, Fuzz, testing::Range(0, kShards));

// ---- The harness's own parts. ----

bool hasExp(const Program &p) { return describe(p).find("at::exp(") != std::string::npos; }

TEST(FuzzHarness, TheSameSeedGivesTheSameProgram) {
  for (uint64_t s : {3u, 77u, 401u}) {
    Program a = generate(s), b = generate(s);
    EXPECT_EQ(describe(a), describe(b));
    std::vector<at::Tensor> x = run(a, makeInputs(a)), y = run(b, makeInputs(b));
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(compare(x[i], y[i]), "") << "seed " << s << " output " << i;
  }
}

TEST(FuzzHarness, ShrinkerKeepsOnlyWhatTheFailureNeeds) {
  // A stand-in for a tgc bug: "fails whenever the program computes exp".
  // Shrinking a longer program must leave the exp step alone.
  std::optional<Program> big;
  for (uint64_t s = 1; s < 2000 && !big; ++s) {
    Program p = generate(s);
    if (p.steps.size() >= 5 && hasExp(p))
      big = p;
  }
  ASSERT_TRUE(big) << "no generated program of 5+ steps computes exp";
  int checks = 0;
  Program small = shrink(*big, [&](const Program &q) {
    ++checks;
    return hasExp(q);
  });
  EXPECT_TRUE(valid(small));
  EXPECT_TRUE(hasExp(small));
  EXPECT_EQ(small.steps.size(), 1u) << describe(small);
  EXPECT_EQ(small.outputs.size(), 1u) << describe(small);
  EXPECT_GT(checks, 0);
  EXPECT_NE(describe(small).find("TGC_FUZZ_SEED=" + std::to_string(big->seed)), std::string::npos);
}

TEST(FuzzHarness, CompareUsesDtypeTolerancesAndSeesEveryDifference) {
  at::Tensor x = torch::randn({64}) * 3;
  EXPECT_EQ(compare(x + 1e-6, x), "");
  EXPECT_NE(compare(x + 1e-2, x), "");
  EXPECT_NE(compare(x.to(at::kDouble) + 1e-6, x.to(at::kDouble)), "");
  at::Tensor b = x.to(at::kBFloat16);
  EXPECT_EQ(compare((b.to(at::kFloat) * 1.001).to(at::kBFloat16), b), "");
  EXPECT_NE(compare(x, x.to(at::kDouble)), "") << "dtype differences count";
  EXPECT_NE(compare(x.view({8, 8}), x.view({4, 16})), "") << "shape differences count";
  at::Tensor i = torch::randint(-5, 5, {32});
  EXPECT_NE(compare(i + 1, i), "");
  // Against a float64 reference: tgc may be as far from it as eager is.
  at::Tensor exact = x.to(at::kDouble);
  EXPECT_NE(compare(x - 0.01, x + 0.01), "");
  EXPECT_EQ(compare(x - 0.01, x + 0.01, exact), "");
  EXPECT_NE(compare(x + 0.1, x + 0.01, exact), "");
  at::Tensor nan = x.clone();
  nan[3] = NAN;
  EXPECT_EQ(compare(nan.clone(), nan), "");
  EXPECT_NE(compare(x, nan), "") << "a NaN eager has must be there";
}

TEST(FuzzHarness, ACrashOrAnExceptionInTheChildIsAnOutcomeNotADeadTest) {
  Outcome crash = isolated([](Outcome &) -> std::string {
    std::raise(SIGSEGV);
    return "";
  });
  EXPECT_FALSE(crash.ok);
  EXPECT_NE(crash.what.find("crashed: signal 11"), std::string::npos) << crash.what;
  Outcome thrown = isolated([](Outcome &) -> std::string { throw std::runtime_error("boom"); });
  EXPECT_FALSE(thrown.ok);
  EXPECT_NE(thrown.what.find("boom"), std::string::npos) << thrown.what;
  Outcome fine = isolated([](Outcome &o) {
    o.graphs = 7;
    return std::string();
  });
  EXPECT_TRUE(fine.ok) << fine.what;
  EXPECT_EQ(fine.graphs, 7);
}

} // namespace
} // namespace tgc::fuzz
