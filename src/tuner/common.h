#pragma once

// Helpers the files of the auto tuner share (src/tuner/): Paddle's number and text rules, the
// degrees' divisors, layout comparisons. Private to the layer.

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pdlaunch/tuner/auto_tuner.h"

namespace pdlaunch::tuner {

using Json = nlohmann::json;

constexpr long kMaxDegree = 1 << 20;

/// A usage error naming the tuner file's key: "--auto_tuner_json: <key>: <problem>".
[[noreturn]] void Bad(const std::string& key, const std::string& problem);
/// `value` as a positive integer (at most kMaxDegree), else Bad(key, ...).
long PositiveInt(const Json& value, const std::string& key);
/// The divisors of n, ascending or descending.
std::vector<long> Divisors(long n, bool descending);
/// Says (into `warnings`) that `value` of `key`, listed in the file, is left out because it does
/// not divide model_cfg.<size>.
void LeftOut(const Json& config, const std::string& key, long value, const char* size,
             std::vector<std::string>& warnings);
/// A degree's candidates: `config[key]` ("auto", a number or a list) among `defaults`, at most
/// `max_value`; {1} when the key is absent.
std::vector<long> Filter(const Json& config, const std::string& key,
                         const std::vector<long>& defaults, long max_value);
/// Python's str() of an optional bool: None, True, False.
std::string PyBool(const std::optional<bool>& b);
/// The recompute level of a layout, for the history prunes.
int RecomputeLevel(const TrialConfig& c);
/// Python's str() of a JSON value (custom_search_dim values).
std::string PyStr(const std::string& json_text);
/// A run_cmd key as Paddle's trial directory names it.
std::string CamelKey(const std::string& key);
/// The layouts' custom dimensions equal, but those in `ignore`.
bool SameCustom(const TrialConfig& a, const TrialConfig& b, const std::set<std::string>& ignore);
/// The layouts equal beside the fields in `ignore`.
bool SameBeside(const TrialConfig& a, const TrialConfig& b, const std::set<std::string>& ignore);
/// A layout matches a sharding-overlap strategy name.
bool MatchesStrategy(const TrialConfig& c, const std::string& strategy);
/// Python's round(v, places).
double RoundLikePython(double v, int places);
/// A number as Paddle's history writes it: up to 5 decimals, no trailing zeros.
std::string Fmt(double v);

}  // namespace pdlaunch::tuner
