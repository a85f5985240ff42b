//===- Schedule.cpp - heuristic schedules for tgk.kernel ------------------===//
//
// The schedule is the one place a kernel's vector width is chosen;
// codegen::describeKernel copies it into the kernel descriptor.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

namespace tgc {
#define GEN_PASS_DEF_SCHEDULE
#include "passes/Passes.h.inc"
} // namespace tgc

using namespace mlir;
using namespace tgc;

namespace {

int64_t elementBytes(Type t) {
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

struct SchedulePass : public tgc::impl::ScheduleBase<SchedulePass> {
  void runOnOperation() override {
    getOperation().walk([](tgk::KernelOp k) {
      if (k.getSchedule())
        return;
      int64_t widest = 1;
      for (Type t : k.getInputs().getTypes())
        widest = std::max(widest, elementBytes(cast<ShapedType>(t).getElementType()));
      for (Type t : k.getResultTypes())
        widest = std::max(widest, elementBytes(cast<ShapedType>(t).getElementType()));
      int64_t vector = std::max<int64_t>(1, 16 / widest);
      if (!k.isLinear() || k.getNumIterations() % vector != 0)
        vector = 1;
      const int64_t block = 256;
      k.setScheduleAttr(tgk::ScheduleAttr::get(k.getContext(), "pointwise",
                                               block, vector, block / 32));
    });
  }
};

} // namespace
