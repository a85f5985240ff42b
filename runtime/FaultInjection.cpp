//===- FaultInjection.cpp - TGC_FAULT parsing and the test hook ----------===//
#include "runtime/FaultInjection.h"

#include "runtime/Log.h"

#include <atomic>
#include <cstdlib>

namespace tgc {

namespace {

struct StageName {
  FaultStage stage;
  const char *name;
};
constexpr StageName kStages[] = {
    {FaultStage::Capture, "capture"},           {FaultStage::Import, "import"},
    {FaultStage::Pipeline, "pipeline"},         {FaultStage::HostCompiler, "host-compiler"},
    {FaultStage::Nvrtc, "nvrtc"},               {FaultStage::Load, "load"},
};

FaultStage fromEnvironment() {
  const char *env = std::getenv("TGC_FAULT");
  if (!env || !*env)
    return FaultStage::None;
  for (const StageName &s : kStages)
    if (std::string(env) == s.name)
      return s.stage;
  warn(std::string("TGC_FAULT=") + env +
       " names no stage (capture, import, pipeline, host-compiler, nvrtc, load); ignored");
  return FaultStage::None;
}

std::atomic<FaultStage> &injected() {
  static std::atomic<FaultStage> stage{fromEnvironment()};
  return stage;
}

} // namespace

bool faultInjected(FaultStage stage) {
  return stage != FaultStage::None && injected().load() == stage;
}

std::string injectedFaultMessage(FaultStage stage) {
  for (const StageName &s : kStages)
    if (s.stage == stage)
      return std::string("internal error injected into stage ") + s.name + " (TGC_FAULT=" +
             s.name + ")";
  return "internal error injected (TGC_FAULT)";
}

void setInjectedFault(FaultStage stage) { injected() = stage; }

} // namespace tgc
