//===- Timing.h - the benchmarks' medians and per-call times --------------===//
#ifndef TGC_BENCH_TIMING_H
#define TGC_BENCH_TIMING_H

#include <algorithm>
#include <chrono>
#include <vector>

namespace tgc::bench {

/// The median of `v` (0 when empty).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Microseconds per call of `f`, over `calls` calls.
template <class F> double usPerCall(F &&f, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         calls;
}

} // namespace tgc::bench

#endif // TGC_BENCH_TIMING_H
