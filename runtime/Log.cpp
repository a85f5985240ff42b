//===- Log.cpp - TGC_LOG topics, counters ---------------------------------===//
#include "runtime/Counters.h"
#include "runtime/Log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace tgc {

namespace {

/// TGC_LOG=stats: every counter once, when the process exits (read then, so
/// a program may enable it at any time).
void logCountersAtExit() {
  if (!logEnabled("stats"))
    return;
  Counters &c = counters();
  const int64_t values[] = {
#define TGC_COUNTER(name, member, doc) c.member.load(),
#include "tgc/Counters.def"
  };
  log("stats", "counters at exit:\n" + countersText(values));
}

} // namespace

Counters &counters() {
  static Counters *c = [] {
    static Counters instance;
    // Registered after the counters exist, so it runs before they are gone.
    std::atexit(logCountersAtExit);
    return &instance;
  }();
  return *c;
}

void resetCounters() {
  Counters &c = counters();
#define TGC_COUNTER(name, member, doc) c.member = 0;
#include "tgc/Counters.def"
}

std::string countersText(const int64_t *values) {
  std::ostringstream os;
  size_t i = 0;
#define TGC_COUNTER(name, member, doc) os << #name << ' ' << values[i++] << "  (" << doc << ")\n";
#include "tgc/Counters.def"
  return os.str();
}

bool logEnabled(const char *topic) {
  const char *env = std::getenv("TGC_LOG");
  if (!env || !*env)
    return false;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ','))
    if (item == topic || item == "all")
      return true;
  return false;
}

/// Never destroyed: TGC_LOG=stats logs from an exit handler.
static std::mutex &logMutex() {
  static std::mutex *m = new std::mutex;
  return *m;
}

void log(const char *topic, const std::string &message) {
  if (!logEnabled(topic))
    return;
  std::lock_guard<std::mutex> lock(logMutex());
  std::fprintf(stderr, "[tgc:%s] %s\n", topic, message.c_str());
}

void warn(const std::string &message) {
  std::lock_guard<std::mutex> lock(logMutex());
  std::fprintf(stderr, "[tgc:warning] %s\n", message.c_str());
}

} // namespace tgc
