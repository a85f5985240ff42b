//===- Log.h - TGC_LOG topics and messages --------------------------------===//
#ifndef TGC_RUNTIME_LOG_H
#define TGC_RUNTIME_LOG_H

#include <string>

namespace tgc {

/// Whether TGC_LOG (comma-separated: graph_breaks, recompiles, kernels,
/// autotune, perf, fallbacks, cache, training, memory, stats, or all)
/// enables `topic`. `stats` prints every counter when the process exits.
bool logEnabled(const char *topic);

/// Writes "[tgc:<topic>] message" to stderr when the topic is enabled.
void log(const char *topic, const std::string &message);

/// Writes a warning to stderr regardless of TGC_LOG.
void warn(const std::string &message);

} // namespace tgc

#endif // TGC_RUNTIME_LOG_H
