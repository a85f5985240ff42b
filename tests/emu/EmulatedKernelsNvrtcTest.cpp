// The emulation tests' kernels are real CUDA: NVRTC compiles each for sm_80
// and sm_90, so what the emulator accepts is checked against the toolkit.
#include "runtime/Nvrtc.h"
#include "tests/emu/TestKernels.h"

#include <gtest/gtest.h>

namespace tgc::emu {
namespace {

class EmulatedKernelsCompileWithNvrtc : public ::testing::TestWithParam<std::string> {};

TEST_P(EmulatedKernelsCompileWithNvrtc, EveryTestKernel) {
  std::string why;
  ASSERT_TRUE(nvrtcAvailable(&why)) << why; // the CUDA toolkit is a dependency
  for (const auto &[entry, source] : kernels::all()) {
    NvrtcResult r = compileCuda(source, entry, GetParam());
    ASSERT_TRUE(r.ok) << entry << ": " << r.error << "\n" << r.log;
    EXPECT_NE(r.ptx.find(".entry " + entry), std::string::npos) << entry;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, EmulatedKernelsCompileWithNvrtc,
                         ::testing::Values("sm_80", "sm_90"));

} // namespace
} // namespace tgc::emu
