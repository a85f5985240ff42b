//===- Counters.h - process-wide counters behind tgc::stats() -------------===//
#ifndef TGC_RUNTIME_COUNTERS_H
#define TGC_RUNTIME_COUNTERS_H

#include <atomic>
#include <cstdint>
#include <string>

namespace tgc {

/// One atomic per line of tgc/Counters.def (member names).
struct Counters {
#define TGC_COUNTER(name, member, doc) std::atomic<int64_t> member{0};
#include "tgc/Counters.def"
};

/// The one instance, shared by the compiler and the runtime.
Counters &counters();

/// Zeroes every counter, the "of the graph built last" ones included: after
/// tgc::reset() no compiled graph is left for them to describe.
void resetCounters();

/// One "name value  (what it counts)" line per counter, public names;
/// `values` in tgc/Counters.def's order (Stats::str() and TGC_LOG=stats).
std::string countersText(const int64_t *values);

} // namespace tgc

#endif // TGC_RUNTIME_COUNTERS_H
