#include "tuner/common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "pdlaunch/base/endpoint.h"  // SplitAndStrip
#include "pdlaunch/base/errors.h"

namespace pdlaunch::tuner {

[[noreturn]] void Bad(const std::string& key, const std::string& problem) {
  throw UsageError(fmt::format("--auto_tuner_json: {}: {}", key, problem));
}

std::vector<long> Divisors(long n, bool descending) {
  std::vector<long> out;
  for (long i = 1; i <= n; ++i) {
    if (n % i == 0) out.push_back(i);
  }
  if (descending) std::reverse(out.begin(), out.end());
  return out;
}

long PositiveInt(const Json& value, const std::string& key) {
  if (!value.is_number_integer() || value.get<long>() < 1 || value.get<long>() > kMaxDegree) {
    Bad(key, fmt::format("expected a positive integer, got {}", value.dump()));
  }
  return value.get<long>();
}

// A degree the config names one by one (an integer, or in a list) that the model's sizes leave
// out of the search, as Paddle's search space does: said, rather than gone without a word.
void LeftOut(const Json& config, const std::string& key, long value, const char* size,
             std::vector<std::string>& warnings) {
  if (!config.contains(key)) return;
  const Json& given = config[key];
  const bool named =
      (given.is_number_integer() && given.get<long>() == value) ||
      (given.is_array() && std::any_of(given.begin(), given.end(), [&](const Json& v) {
         return v.is_number_integer() && v.get<long>() == value;
       }));
  if (named) {
    warnings.push_back(fmt::format(
        "{} {} is left out of the search: it does not divide model_cfg.{}", key, value, size));
  }
}

// utils.py _param2range, then the filter of dist_degree's default list: "auto" keeps the whole
// list up to `max_value`, a list or an int keeps those values, {"min","max"} a range; absent
// keeps [1] (when 1 is a default) — Paddle's order is always the default list's.
std::vector<long> Filter(const Json& config, const std::string& key,
                         const std::vector<long>& defaults, long max_value) {
  if (!config.contains(key)) return {1};
  const Json& value = config[key];
  std::set<long> allowed;
  if (value.is_string()) {
    if (value.get<std::string>() != "auto") Bad(key, "a string must be \"auto\"");
    for (long v = 1; v <= max_value; ++v) allowed.insert(v);
  } else if (value.is_number_integer()) {
    allowed.insert(PositiveInt(value, key));
  } else if (value.is_array()) {
    if (value.empty()) Bad(key, "an empty list");
    for (const Json& v : value) allowed.insert(PositiveInt(v, key));
  } else if (value.is_object()) {
    if (!value.contains("min") || !value.contains("max") || value.size() != 2) {
      Bad(key, "a range is {\"min\": a, \"max\": b}");
    }
    const long lo = PositiveInt(value["min"], key + ".min");
    const long hi = PositiveInt(value["max"], key + ".max");
    if (hi < lo) Bad(key, "max is below min");
    for (long v = lo; v <= hi; ++v) allowed.insert(v);
  } else {
    Bad(key, fmt::format("expected \"auto\", an integer, a list or a range, got {}", value.dump()));
  }
  std::vector<long> out;
  for (long v : defaults) {
    if (allowed.count(v)) out.push_back(v);
  }
  if (out.empty()) Bad(key, "no value of it is possible for this job");
  return out;
}

std::string PyBool(const std::optional<bool>& b) { return !b ? "None" : *b ? "True" : "False"; }

int RecomputeLevel(const TrialConfig& c) {
  if (!c.use_recompute || !*c.use_recompute) return 0;
  const std::string g = c.recompute_granularity.value_or("full");
  return g == "core_attn" ? 1 : g == "full_attn" ? 2 : 3;
}

// Python's str() of a custom_search_dim value (JSON text): how Paddle writes it into the
// script's arguments and the log directory's name.
std::string PyStr(const std::string& json_text) {
  const Json v = Json::parse(json_text);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  return v.dump();
}

// Python's "".join(part.capitalize() for part in key.split("_")).
std::string CamelKey(const std::string& key) {
  std::string out;
  bool first = true;
  for (char ch : key) {
    if (ch == '_') {
      first = true;
      continue;
    }
    const auto c = static_cast<unsigned char>(ch);
    out += static_cast<char>(first ? std::toupper(c) : std::tolower(c));
    first = false;
  }
  return out;
}

// The custom dimensions equal, but those `ignore` names as "custom.<key>".
bool SameCustom(const TrialConfig& a, const TrialConfig& b, const std::set<std::string>& ignore) {
  if (a.custom.size() != b.custom.size()) return false;
  for (size_t i = 0; i < a.custom.size(); ++i) {
    if (a.custom[i].first != b.custom[i].first) return false;
    if (!ignore.count("custom." + a.custom[i].first) && a.custom[i].second != b.custom[i].second) {
      return false;
    }
  }
  return true;
}

// Equal in every dimension but those `ignore` names.
bool SameBeside(const TrialConfig& a, const TrialConfig& b, const std::set<std::string>& ignore) {
  const auto same = [&](const char* name, auto x, auto y) { return ignore.count(name) || x == y; };
  return same("dp", a.dp, b.dp) && same("mp", a.mp, b.mp) && same("pp", a.pp, b.pp) &&
         same("sharding_degree", a.sharding_degree, b.sharding_degree) &&
         same("sharding_stage", a.sharding_stage, b.sharding_stage) && same("mbs", a.mbs, b.mbs) &&
         same("vpp", a.vpp, b.vpp) &&
         (ignore.count("use_recompute") || same("recompute", a.use_recompute, b.use_recompute)) &&
         same("recompute", a.recompute_granularity, b.recompute_granularity) &&
         same("refined", a.refined, b.refined) && a.global_batch_size == b.global_batch_size &&
         a.estimated_dp == b.estimated_dp && a.sharding_overlap == b.sharding_overlap &&
         SameCustom(a, b, ignore);
}

// invalid_strategy entries ("stage3_mp*", "dp2_pp1"): every part must match; "*" means > 1
// (stage*: sharding_degree > 1; recompute*: recompute on). Paddle reads one character after the
// prefix and applies only the last entry; both are fixed here (docs/auto-tuner.md).
bool MatchesStrategy(const TrialConfig& c, const std::string& strategy) {
  for (const std::string& part : SplitAndStrip(strategy, '_')) {
    static const std::vector<std::pair<std::string, int>> kPrefixes = {
        {"sharding", 0}, {"stage", 1}, {"recompute", 2}, {"mbs", 3},
        {"vpp", 4},      {"dp", 5},    {"mp", 6},        {"pp", 7}};
    bool known = false;
    for (const auto& [prefix, id] : kPrefixes) {
      if (!part.starts_with(prefix)) continue;
      known = true;
      const std::string value = part.substr(prefix.size());
      long actual = 0;
      switch (id) {
        case 0:
          actual = c.sharding_degree;
          break;
        case 1:
          actual = c.sharding_stage;
          break;
        case 2:
          actual = c.use_recompute.value_or(false) ? 1 : 0;
          break;
        case 3:
          actual = c.mbs;
          break;
        case 4:
          actual = c.vpp;
          break;
        case 5:
          actual = c.dp;
          break;
        case 6:
          actual = c.mp;
          break;
        case 7:
          actual = c.pp;
          break;
      }
      if (value == "*") {
        const bool star = id == 1 ? c.sharding_degree > 1 : id == 2 ? actual == 1 : actual > 1;
        if (!star) return false;
      } else if (value != std::to_string(actual)) {
        return false;
      }
      break;
    }
    if (!known) return false;
  }
  return true;
}

// Python's round(v, places): the nearest decimal of the exact binary value, a tie (25.125) to
// the even digit, as glibc's printf rounds.
double RoundLikePython(double v, int places) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", places, v);
  return std::strtod(text, nullptr);
}

std::string Fmt(double v) {
  std::string s = fmt::format("{:.5f}", v);
  while (s.ends_with('0')) s.pop_back();
  if (s.ends_with('.')) s.pop_back();
  return s;
}

}  // namespace pdlaunch::tuner
