// The counter check that proves calls ran compiled code: e2e tests compare
// with eager, which alone would also pass if everything ran eagerly.
#ifndef TGC_TESTS_E2E_EXPECTCOMPILED_H
#define TGC_TESTS_E2E_EXPECTCOMPILED_H

#include "tgc/tgc.h"

#include <gtest/gtest.h>

namespace tgc::test {

/// Since the last tgc::reset(): at least `minGraphs` graphs compiled, at
/// least `minLaunches` tgc kernels launched, nothing run eagerly.
inline void expectCompiled(int64_t minGraphs, int64_t minLaunches) {
  tgc::Stats s = tgc::stats();
  EXPECT_GE(s.graphs_compiled, minGraphs);
  EXPECT_GE(s.kernel_launches, minLaunches);
  EXPECT_EQ(s.eager_fallbacks, 0);
}

} // namespace tgc::test

#endif // TGC_TESTS_E2E_EXPECTCOMPILED_H
