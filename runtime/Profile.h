//===- Profile.h - TGC_PROFILE: where a compiled graph's time goes --------===//
//
// With TGC_PROFILE=1 set when a plan is loaded, the executor times each of
// its steps (host wall time: on CUDA that is the launch, not the kernel) and
// the whole run, so the time between steps (the executor's own overhead:
// arena, value table, releases) shows too. profileReport() ranks the steps
// of every profiled graph and sums them per op; the report is printed to
// stderr when the process exits (tgc::profile() returns it).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_PROFILE_H
#define TGC_RUNTIME_PROFILE_H

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tgc {

struct Plan;

/// The accumulated times of one loaded plan.
struct StepProfile {
  std::string title;              ///< the plan's header line
  std::vector<std::string> steps; ///< Plan::stepStr of each step
  std::vector<std::string> ops;   ///< "kernel", or the extern's op name
  std::unique_ptr<std::atomic<int64_t>[]> stepNs;
  std::atomic<int64_t> runs{0}, runNs{0};
};

/// Whether TGC_PROFILE is set (to anything but "" or "0").
bool profilingEnabled();

/// A profile for `plan`, kept for the report (also after the graph is gone).
std::shared_ptr<StepProfile> registerProfile(const Plan &plan);

/// Every profiled graph: runs, time per run in steps and between them, the
/// steps ranked by time, and the time per op. Empty when nothing ran
/// profiled.
std::string profileReport();

/// Zeroes every profile and forgets those of graphs no longer loaded
/// (tgc::reset()).
void resetProfiles();

} // namespace tgc

#endif // TGC_RUNTIME_PROFILE_H
