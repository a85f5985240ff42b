//===- Profile.cpp - TGC_PROFILE: per-step times of compiled graphs -------===//
#include "runtime/Profile.h"
#include "runtime/Plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>

namespace tgc {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<StepProfile>> profiles;
};

/// Never destroyed: the report is printed from an exit handler.
Registry &registry() {
  static Registry *r = new Registry;
  return *r;
}

void printAtExit() {
  if (!profilingEnabled())
    return;
  std::string report = profileReport();
  if (!report.empty())
    std::fprintf(stderr, "[tgc:profile] per-step times (TGC_PROFILE)\n%s", report.c_str());
}

std::string format(const char *fmt, double a, double b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

void reportOne(std::string &out, size_t index, const StepProfile &p) {
  const int64_t runs = p.runs.load();
  if (runs == 0)
    return;
  const double perRun = 1e-3 / double(runs); // ns in total -> us per run
  std::vector<int64_t> ns(p.steps.size());
  for (size_t s = 0; s < ns.size(); ++s)
    ns[s] = p.stepNs[s].load();
  const int64_t inSteps = std::accumulate(ns.begin(), ns.end(), int64_t(0));
  const int64_t between = std::max<int64_t>(0, p.runNs.load() - inSteps);
  char line[256];
  std::snprintf(line, sizeof line,
                "graph %zu: %s\n  %lld runs, %.1f us/run: %.1f us in %zu steps, %.1f us "
                "between them (%.2f us per step)\n",
                index, p.title.c_str(), (long long)runs, p.runNs.load() * perRun, inSteps * perRun,
                ns.size(), between * perRun,
                ns.empty() ? 0.0 : between * perRun / double(ns.size()));
  out += line;
  if (ns.empty())
    return;
  const double total = std::max<double>(1, double(inSteps));
  std::vector<size_t> order(ns.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ns[a] > ns[b]; });
  out += "     share    us/run  step\n";
  const size_t shown = std::min<size_t>(order.size(), 15);
  for (size_t i = 0; i < shown; ++i) {
    const size_t s = order[i];
    out += format("    %5.1f%% %9.1f  ", 100.0 * ns[s] / total, ns[s] * perRun) + p.steps[s] + "\n";
  }
  if (shown < order.size()) {
    int64_t rest = 0;
    for (size_t i = shown; i < order.size(); ++i)
      rest += ns[order[i]];
    out += format("    %5.1f%% %9.1f  ", 100.0 * rest / total, rest * perRun) + "(" +
           std::to_string(order.size() - shown) + " more steps)\n";
  }
  std::map<std::string, std::pair<int64_t, int>> byOp;
  for (size_t s = 0; s < ns.size(); ++s) {
    auto &[t, n] = byOp[p.ops[s]];
    t += ns[s];
    ++n;
  }
  std::vector<std::pair<std::string, std::pair<int64_t, int>>> ops(byOp.begin(), byOp.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto &a, const auto &b) { return a.second.first > b.second.first; });
  out += "  by op:\n";
  for (const auto &[op, tn] : ops)
    out += format("    %5.1f%% %9.1f  ", 100.0 * tn.first / total, tn.first * perRun) + op + " (" +
           std::to_string(tn.second) + (tn.second == 1 ? " step)\n" : " steps)\n");
}

} // namespace

bool profilingEnabled() {
  const char *v = std::getenv("TGC_PROFILE");
  return v && *v && std::string(v) != "0";
}

std::shared_ptr<StepProfile> registerProfile(const Plan &plan) {
  auto p = std::make_shared<StepProfile>();
  const std::string listing = plan.str();
  p->title = listing.substr(0, listing.find('\n'));
  p->stepNs = std::make_unique<std::atomic<int64_t>[]>(plan.steps.size());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    p->stepNs[s] = 0;
    p->steps.push_back(plan.stepStr(s));
    const Step &st = plan.steps[s];
    if (st.kind == Step::Kernel) {
      p->ops.push_back("kernel");
    } else {
      const ExternStep &e = plan.externs[st.index];
      p->ops.push_back(e.op + (e.overload.empty() ? "" : "." + e.overload));
    }
  }
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  static const bool registered = [] {
    std::atexit(printAtExit);
    return true;
  }();
  (void)registered;
  r.profiles.push_back(p);
  return p;
}

std::string profileReport() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string out;
  for (size_t i = 0; i < r.profiles.size(); ++i)
    reportOne(out, i, *r.profiles[i]);
  return out;
}

void resetProfiles() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  // Graphs still loaded (a package, a callable) go on counting from zero.
  std::vector<std::shared_ptr<StepProfile>> live;
  for (std::shared_ptr<StepProfile> &p : r.profiles) {
    if (p.use_count() == 1)
      continue;
    p->runs = 0;
    p->runNs = 0;
    for (size_t s = 0; s < p->steps.size(); ++s)
      p->stepNs[s] = 0;
    live.push_back(std::move(p));
  }
  r.profiles = std::move(live);
}

} // namespace tgc
