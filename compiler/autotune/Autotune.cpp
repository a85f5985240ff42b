//===- Autotune.cpp - benchmarked choice among implementations ------------===//
#include "compiler/autotune/Autotune.h"

#include "runtime/ArtifactCache.h"
#include "runtime/Counters.h"
#include "runtime/HostCompiler.h"
#include "runtime/Log.h"

#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/isfinite.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace tgc::autotune {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// The stored form: "tgc-autotune 1\nchoice NAME\n" then one line per
/// candidate, "NAME US" or "NAME - why".
std::string encode(const std::string &choice, const std::vector<Measurement> &ms) {
  std::ostringstream s;
  s << "tgc-autotune 1\nchoice " << choice << '\n';
  for (const Measurement &m : ms)
    if (m.disqualified.empty())
      s << m.name << ' ' << m.us << '\n';
    else
      s << m.name << " - " << m.disqualified << '\n';
  return s.str();
}

/// The choice in a stored payload, or "" when it is not one.
std::string decodeChoice(const std::string &payload) {
  const std::string head = "tgc-autotune 1\nchoice ";
  if (payload.rfind(head, 0) != 0)
    return "";
  size_t end = payload.find('\n', head.size());
  if (end == std::string::npos || end == head.size())
    return "";
  std::string name = payload.substr(head.size(), end - head.size());
  for (char c : name)
    if (c == ' ' || c < 0x21 || c > 0x7e)
      return "";
  return name;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

} // namespace

double budgetSeconds() {
  const char *v = std::getenv("TGC_AUTOTUNE_BUDGET_S");
  if (!v || !*v)
    return 60;
  char *end = nullptr;
  double s = std::strtod(v, &end);
  if (end == v || *end || !(s >= 0)) {
    warn(std::string("TGC_AUTOTUNE_BUDGET_S='") + v + "' is not a number of seconds; using 60");
    return 60;
  }
  return s;
}

std::string problemKey(const std::string &problem) {
  KeyInputs k = baseKeyInputs();
  k.content = "autotune\n" + problem;
  k.arch = hostCpuId();
  k.options = "threads=" + std::to_string(at::get_num_threads());
  return buildKey(k);
}

bool matches(const at::Tensor &result, const at::Tensor &reference, std::string &why) {
  if (!result.defined()) {
    why = "no result";
    return false;
  }
  if (result.sizes() != reference.sizes()) {
    std::ostringstream s;
    s << "shape " << result.sizes() << ", the reference's is " << reference.sizes();
    why = s.str();
    return false;
  }
  if (result.scalar_type() != reference.scalar_type()) {
    why = std::string("dtype ") + c10::toString(result.scalar_type()) + ", the reference's is " +
          c10::toString(reference.scalar_type());
    return false;
  }
  if (result.numel() == 0)
    return true;
  at::Tensor r = result.to(at::kDouble), ref = reference.to(at::kDouble);
  if (!at::isfinite(r).all().item<bool>() && at::isfinite(ref).all().item<bool>()) {
    why = "non-finite values where the reference has none";
    return false;
  }
  const double scale = std::max(at::abs(ref).max().item<double>(), 1e-30);
  const double err = at::abs(r - ref).max().item<double>() / scale;
  const bool narrow = reference.scalar_type() == at::kBFloat16 || reference.scalar_type() == at::kHalf;
  const double tol = narrow ? 2e-2 : 1e-4;
  if (!(err <= tol)) {
    why = "differs from the reference by " + fixed(err * 1e6, 1) + "e-6 of its scale (tolerance " +
          fixed(tol * 1e6, 1) + "e-6)";
    return false;
  }
  return true;
}

Session::Session(ArtifactCache &cache)
    : cache_(cache), start_(Clock::now()), budgetSeconds_(budgetSeconds()),
      terminal_(::isatty(2) == 1) {}

Session::~Session() {
  if (progressShown_)
    std::fputs("\n", stderr);
}

void Session::progress(const std::string &what) {
  if (!terminal_)
    return;
  std::fprintf(stderr, "\r\033[Ktgc autotune: %d tuned, %d from the cache, %.1f s: %s",
               benchmarked_, cached_, secondsSince(start_), what.c_str());
  progressShown_ = true;
}

std::vector<Measurement> Session::measure(std::vector<Candidate> &candidates) {
  std::vector<Measurement> ms(candidates.size());
  at::Tensor reference;
  std::vector<size_t> live;
  std::vector<double> first(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    ms[i].name = candidates[i].name;
    counters().autotuneBenchmarks++;
    try {
      // The first run also builds what the candidate needs (primitives,
      // packed weights): it is checked, not timed.
      at::Tensor out = candidates[i].run();
      Clock::time_point t = Clock::now();
      at::Tensor again = candidates[i].run();
      first[i] = secondsSince(t);
      if (i == 0) {
        reference = out;
        std::string why;
        if (!matches(again, reference, why)) {
          ms[i].disqualified = "not deterministic: " + why;
          continue;
        }
      } else if (!reference.defined()) {
        ms[i].disqualified = "no reference result to check against";
        continue;
      } else {
        std::string why;
        if (!matches(out, reference, why)) {
          ms[i].disqualified = why;
          continue;
        }
      }
      live.push_back(i);
    } catch (const std::exception &e) {
      std::string text = e.what();
      ms[i].disqualified = "failed: " + text.substr(0, text.find('\n'));
    }
  }
  // Alternating rounds, so drift of this machine's load falls on all
  // alike: about 50 ms per problem, 5 to 25 rounds.
  double perRound = 0;
  for (size_t i : live)
    perRound += first[i];
  const int rounds = perRound <= 0 ? 25 : (int)std::clamp(0.05 / perRound, 5.0, 25.0);
  std::vector<std::vector<double>> times(candidates.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i : live) {
      Clock::time_point t = Clock::now();
      try {
        candidates[i].run();
      } catch (const std::exception &e) {
        ms[i].disqualified = std::string("failed on a later run: ") + e.what();
      }
      times[i].push_back(secondsSince(t) * 1e6);
    }
  for (size_t i : live)
    if (ms[i].disqualified.empty())
      ms[i].us = median(times[i]);
  return ms;
}

std::string Session::choose(const std::string &problem, const std::string &what,
                            const std::function<std::vector<Candidate>()> &make,
                            const std::string &fallback) {
  auto memo = chosen_.find(problem);
  if (memo != chosen_.end())
    return memo->second;
  const std::string key = problemKey(problem);
  if (std::optional<std::string> stored = cache_.get(Layer::Autotune, key)) {
    std::string choice = decodeChoice(*stored);
    if (!choice.empty()) {
      cached_++;
      counters().autotuneCached++;
      log("autotune", what + ": " + choice + " (from the cache)");
      progress(what);
      return chosen_[problem] = choice;
    }
    log("autotune", what + ": the cached result is not one; tuning again");
  }
  if (secondsSince(start_) > budgetSeconds_) {
    if (!budgetLogged_)
      log("autotune", "the graph's budget of " + fixed(budgetSeconds_, 1) +
                          " s (TGC_AUTOTUNE_BUDGET_S) is spent: the remaining problems take the "
                          "default choice, untuned");
    budgetLogged_ = true;
    log("autotune", what + ": " + fallback + " (default choice, budget spent)");
    return chosen_[problem] = fallback;
  }
  std::vector<Candidate> candidates = make();
  progress(what);
  std::vector<Measurement> ms = measure(candidates);
  benchmarked_++;
  int best = -1;
  for (size_t i = 0; i < ms.size(); ++i)
    if (ms[i].disqualified.empty() && (best < 0 || ms[i].us < ms[best].us))
      best = (int)i;
  std::string choice = best >= 0 ? ms[best].name : fallback;
  if (logEnabled("autotune")) {
    std::ostringstream s;
    s << what << ":";
    for (const Measurement &m : ms) {
      s << "\n  " << m.name << ' ';
      if (m.disqualified.empty())
        s << fixed(m.us, 1) << " us" << (m.name == choice ? "  (chosen)" : "");
      else
        s << "disqualified: " << m.disqualified;
    }
    if (best < 0)
      s << "\n  no candidate qualified: " << fallback << " (default choice)";
    log("autotune", s.str());
  }
  if (best >= 0)
    cache_.put(Layer::Autotune, key, encode(choice, ms));
  progress(what);
  return chosen_[problem] = choice;
}

} // namespace tgc::autotune
