//===- Autotune.h - benchmarked choice among implementations --------------===//
//
// Mode::MaxAutotune (issue 18): where tgc can compute one op (a convolution
// or linear layer with its fused epilogue) in several ways, it runs each
// candidate on inputs of the real shapes, dtypes and layouts, checks its
// result against the reference candidate (the first: ATen's plain call),
// times them in alternating rounds (medians) and takes the fastest. A
// candidate that throws or disagrees with the reference is disqualified
// with a log line; TGC_LOG=autotune prints every candidate's time.
//
// Choices persist in the autotune layer of the cache, keyed by the problem
// (op, shapes, dtypes, layouts, epilogue), the host CPU, the thread count
// and tgc's version: a second process (or tgc-aot after the JIT) benchmarks
// nothing. Each graph's tuning has a time budget, TGC_AUTOTUNE_BUDGET_S
// (default 60): once spent, the remaining problems take the default mode's
// heuristic choice (logged, not stored). On a terminal a progress line
// shows the problems tuned so far.
//
// LibTorch side only (no MLIR).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_AUTOTUNE_AUTOTUNE_H
#define TGC_COMPILER_AUTOTUNE_AUTOTUNE_H

#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tgc {

class ArtifactCache;

namespace autotune {

/// One way to compute a problem: `run` returns its result for the tuner's
/// inputs (which the candidate holds).
struct Candidate {
  std::string name;
  std::function<at::Tensor()> run;
};

/// What one problem's tuning found: each candidate's median time (µs), or
/// why it was disqualified.
struct Measurement {
  std::string name;
  double us = 0;
  std::string disqualified; ///< "" when it qualified
};

/// Whether `result` matches `reference` for a candidate of dtype-aware
/// tolerance: the largest difference relative to the reference's largest
/// magnitude is at most 1e-4 for f32 and f64 (reduction orders differ),
/// 2e-2 for bf16 and f16. False with `why` otherwise (shape, dtype, NaN).
bool matches(const at::Tensor &result, const at::Tensor &reference, std::string &why);

/// One graph's tuning: its budget clock, its progress line and the choices
/// made so far (a problem met twice in a graph is tuned once).
class Session {
public:
  explicit Session(ArtifactCache &cache);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// The name of the candidate to use for `problem` (a canonical text:
  /// op, shapes, dtypes, layouts, epilogue; `what` is its short form for
  /// logs): this session's earlier choice, else the autotune layer's, else
  /// the fastest qualifying one of `make()`'s candidates (the first is the
  /// reference). `fallback` is returned when the budget is spent or nothing
  /// qualifies. A stored choice is returned as stored: the caller applies
  /// it only when it still has a candidate of that name.
  std::string choose(const std::string &problem, const std::string &what,
                     const std::function<std::vector<Candidate>()> &make,
                     const std::string &fallback);

  /// Problems tuned by benchmarking and answered from the cache.
  int benchmarked() const { return benchmarked_; }
  int cached() const { return cached_; }

private:
  std::vector<Measurement> measure(std::vector<Candidate> &candidates);
  void progress(const std::string &what);

  ArtifactCache &cache_;
  std::chrono::steady_clock::time_point start_;
  double budgetSeconds_;
  bool budgetLogged_ = false;
  bool terminal_;
  bool progressShown_ = false;
  int benchmarked_ = 0, cached_ = 0;
  std::map<std::string, std::string> chosen_;
};

/// The autotune layer's key of `problem` on this host: the problem, the
/// CPU (model name and feature flags), the thread count and tgc's version
/// (through the cache's key builder).
std::string problemKey(const std::string &problem);

/// TGC_AUTOTUNE_BUDGET_S (seconds per graph; default 60, at least 0).
double budgetSeconds();

} // namespace autotune
} // namespace tgc

#endif // TGC_COMPILER_AUTOTUNE_AUTOTUNE_H
