//===- SegmentOps.cpp - tgc::segment_guard and tgc::run_segment -----------===//
#include "runtime/SegmentOps.h"

#include <c10/util/Exception.h>
#include <torch/library.h>

namespace tgc {

namespace {

thread_local SegmentTable *currentTable = nullptr;

bool segmentGuard(int64_t id, std::vector<at::Tensor> inputs) {
  return currentTable && currentTable->guard(id, inputs);
}

std::vector<at::Tensor> runSegment(int64_t id, std::vector<at::Tensor> inputs) {
  TORCH_CHECK(currentTable, "tgc::run_segment(", id,
              ") ran without a package; it is only reached after tgc::segment_guard passed");
  return currentTable->run(id, inputs);
}

} // namespace

SegmentTableScope::SegmentTableScope(SegmentTable *table) : previous_(currentTable) {
  currentTable = table;
}

SegmentTableScope::~SegmentTableScope() { currentTable = previous_; }

// CONSERVATIVE: the JIT must neither fold nor reorder these calls, and a
// segment's outputs may alias its inputs (views).
TORCH_LIBRARY(tgc, m) {
  m.def(torch::schema("segment_guard(int id, Tensor[] inputs) -> bool",
                      c10::AliasAnalysisKind::CONSERVATIVE),
        &segmentGuard);
  m.def(torch::schema("run_segment(int id, Tensor[] inputs) -> Tensor[]",
                      c10::AliasAnalysisKind::CONSERVATIVE),
        &runSegment);
}

} // namespace tgc
