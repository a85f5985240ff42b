//===- FaultInjection.h - TGC_FAULT: one stage fails on purpose ----------===//
//
// Tests (and users chasing a problem) make one compilation stage fail with an
// internal error, to check that every stage's failure runs the call eagerly,
// once, with the reason logged, or throws under Options::fullgraph. Each
// stage fails the way a real failure of it would: capture throws a
// std::runtime_error from inside the dispatcher, import returns an error, the
// pass pipeline reports an MLIR error diagnostic, the host compiler and
// NVRTC report a failed compile, and loading throws std::bad_alloc. See
// docs/failures.md.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_FAULTINJECTION_H
#define TGC_RUNTIME_FAULTINJECTION_H

#include <string>

namespace tgc {

enum class FaultStage { None, Capture, Import, Pipeline, HostCompiler, Nvrtc, Load };

/// Whether `stage` is to fail: TGC_FAULT (read once per process: capture,
/// import, pipeline, host-compiler, nvrtc or load) names it, or a test set
/// it with setInjectedFault.
bool faultInjected(FaultStage stage);

/// The error message of an injected failure; it names the stage.
std::string injectedFaultMessage(FaultStage stage);

/// Replaces TGC_FAULT's choice for the rest of the process (None: no fault).
void setInjectedFault(FaultStage stage);

} // namespace tgc

#endif // TGC_RUNTIME_FAULTINJECTION_H
