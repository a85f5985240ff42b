//===- Log.cpp - TGC_LOG topics, counters ---------------------------------===//
#include "runtime/Counters.h"
#include "runtime/Log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace tgc {

Counters &counters() {
  static Counters c;
  return c;
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

static std::mutex &logMutex() {
  static std::mutex m;
  return m;
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
