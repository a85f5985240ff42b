//===- Pipeline.h - Segment -> tg -> passes -> tgk -> Plan ----------------===//
//
// The one pipeline builder, shared by the JIT, tgc-opt and (later) tgc-aot.
// Plain C++ interface: callers on the LibTorch side see no MLIR types.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_PIPELINE_PIPELINE_H
#define TGC_COMPILER_PIPELINE_PIPELINE_H

#include "compiler/capture/Segment.h"
#include "runtime/Plan.h"

#include <string>

namespace tgc {

struct PipelineResult {
  bool ok = false;
  std::string error; ///< what failed, when !ok
  Plan plan;
  std::string importedIR; ///< `tg` as imported
  std::string finalIR;    ///< after fusion and scheduling
};

/// Imports `segment` into `tg`, runs decomposition, fusion and scheduling,
/// and emits kernel sources for the segment's device into a Plan.
PipelineResult runPipeline(const Segment &segment);

/// The `tg` module import makes of `segment`, verified and printed: what
/// `tgc-opt --import-segment` hands to the passes. False with `error` when
/// import fails.
bool importToText(const Segment &segment, std::string &ir, std::string &error);

} // namespace tgc

#endif // TGC_COMPILER_PIPELINE_PIPELINE_H
