#include "pdlaunch/plan/auto_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "pdlaunch/base/endpoint.h"  // SplitAndStrip
#include "pdlaunch/base/errors.h"

namespace pdlaunch {

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr long kMaxDegree = 1 << 20;

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

// utils.py _param2range, then the filter of dist_degree's default list: "auto" keeps the whole
// list up to `max_value`, a list or an int keeps those values, {"min","max"} a range; absent
// keeps [1] (when 1 is a default) — Paddle's order is always the default list's.
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

std::optional<long> ModelInt(const Json& model, const std::string& key) {
  if (!model.contains(key)) return std::nullopt;
  return PositiveInt(model[key], "model_cfg." + key);
}

RunCmdEntry ParseRunCmd(const Json& value, const std::string& key) {
  if (!value.is_array() || value.size() < 2 || value.size() > 3) {
    Bad(key,
        "expected [\"--flag\", \"prefix\"], [\"-o\", \"Key\"] or [\"file.json\", \"key\"] "
        "(or a .yaml file)");
  }
  std::vector<std::string> parts;
  for (const Json& part : value) {
    if (part.is_string()) {
      parts.push_back(part.get<std::string>());
    } else if (part.is_number_integer() || part.is_boolean()) {
      parts.push_back(part.dump());
    } else {
      Bad(key, fmt::format("unexpected {}", part.dump()));
    }
  }
  RunCmdEntry entry;
  entry.first = parts[0];
  entry.second = parts[1];
  if (parts.size() == 3) entry.third = parts[2];
  if (entry.first.ends_with(".json") || entry.first.ends_with(".yaml") ||
      entry.first.ends_with(".yml")) {
    entry.kind = RunCmdEntry::Kind::kFile;
  } else if (entry.first.find("-o") != std::string::npos && !entry.first.starts_with("--")) {
    entry.kind = RunCmdEntry::Kind::kOption;
  } else if (entry.first.find("--") != std::string::npos) {
    entry.kind = RunCmdEntry::Kind::kFlag;
  } else {
    Bad(key, fmt::format("'{}' is neither a --flag, -o nor a .json or .yaml file",
                         OneLine(entry.first)));
  }
  return entry;
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

const std::set<std::string> kKnownKeys = {"search_algo",
                                          "schedule_mode",
                                          "model_cfg",
                                          "dp_degree",
                                          "mp_degree",
                                          "pp_degree",
                                          "sharding_degree",
                                          "sharding_stage",
                                          "vpp_degree",
                                          "micro_batch_size",
                                          "use_recompute",
                                          "recompute_granularity",
                                          "metric_cfg",
                                          "run_cmd",
                                          "task_limit",
                                          "max_time_per_task",
                                          "warmup_time",
                                          "max_search_time",
                                          "buffer",
                                          "max_mem_usage",
                                          "need_baseline",
                                          "invalid_strategy",
                                          "schedule_prior",
                                          "enable_pp_prune",
                                          "enable_mp_prune",
                                          "use_sequence_parallel",
                                          "resume_csv_file_path",
                                          "run_best",
                                          "best_cfg_dir",
                                          "mode",
                                          "configs_csv",
                                          "custom_search_dim",
                                          "refined_recompute",
                                          "memory_estimation_tool"};

// What run_cmd may pass to the script besides refined_recompute and the custom dimensions
// (utils.py gen_new_args); a custom dimension may not take one of these names.
const std::set<std::string> kScriptKeys = {"dp_degree",
                                           "mp_degree",
                                           "pp_degree",
                                           "vpp_degree",
                                           "micro_batch_size",
                                           "sharding_degree",
                                           "sharding_stage",
                                           "use_recompute",
                                           "recompute_granularity",
                                           "local_batch_size",
                                           "gradient_accumulation_steps",
                                           "global_batch_size",
                                           "sequence_parallel"};

// custom_search_dim {"key": {"value": [...], "prune": bool}}, in the file's order (Python's dict
// keeps it; the product and the directory names follow it).
std::vector<TunerConfig::CustomDim> ParseCustomDims(const nlohmann::ordered_json& dims) {
  if (!dims.is_object() || dims.empty()) {
    Bad("custom_search_dim", "expected {\"<key>\": {\"value\": [...], \"prune\": false}}");
  }
  std::vector<TunerConfig::CustomDim> out;
  for (const auto& [key, spec] : dims.items()) {
    const std::string name = "custom_search_dim." + key;
    if (key.empty() || key.size() > 64 || !std::all_of(key.begin(), key.end(), [](char ch) {
          return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.';
        })) {
      Bad(name, "a key is letters, digits, '_' and '.' (64 at most)");
    }
    if (kScriptKeys.count(key)) Bad(name, "a built-in dimension; set it at the top level");
    if (!spec.is_object()) Bad(name, "expected {\"value\": [...], \"prune\": false}");
    TunerConfig::CustomDim dim;
    dim.key = key;
    for (const auto& [field, v] : spec.items()) {
      if (field == "value") {
        if (!v.is_array() || v.empty()) Bad(name + ".value", "expected a non-empty list");
        for (const auto& item : v) {
          if (!item.is_primitive() || item.is_null()) {
            Bad(name + ".value",
                fmt::format("expected numbers, strings or booleans, got {}", OneLine(item.dump())));
          }
          // Written as Python's str() into the arguments, the directory and the history CSV:
          // two values must not read the same there (2 and "2"), nor break the CSV's row.
          const std::string text = item.dump();
          const std::string py = PyStr(text);
          if (py.empty() || py.find_first_of(",\"\r\n") != std::string::npos) {
            Bad(name + ".value", fmt::format("{}: empty, or with a comma, a quote or a line break "
                                             "(the history CSV holds it)",
                                             OneLine(text)));
          }
          for (const std::string& other : dim.values) {
            if (PyStr(other) == py) {
              Bad(name + ".value",
                  fmt::format("{} and {} read the same", OneLine(other), OneLine(text)));
            }
          }
          dim.values.push_back(text);
        }
      } else if (field == "prune") {
        if (!v.is_boolean()) Bad(name + ".prune", "expected true or false");
        dim.prune = v.get<bool>();
      } else {
        Bad(name + "." + field, "unknown key (value and prune are)");
      }
    }
    if (dim.values.empty()) Bad(name + ".value", "required");
    out.push_back(std::move(dim));
  }
  return out;
}

double Seconds(const Json& value, const std::string& key) {
  if (!value.is_number() || value.get<double>() <= 0) Bad(key, "expected a positive number");
  return value.get<double>();
}

bool Bool(const Json& value, const std::string& key) {
  if (!value.is_boolean()) Bad(key, "expected true or false");
  return value.get<bool>();
}

std::vector<std::string> Strings(const Json& value, const std::string& key) {
  if (!value.is_array()) Bad(key, "expected a list of strings");
  std::vector<std::string> out;
  for (const Json& v : value) {
    if (!v.is_string()) Bad(key, "expected a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

// search_algo.sharding_overlap of a grid search (utils.py
// gen_sharding_overlap_args_of_grid_search): per layout shape, ["--flag", value, ...] pairs,
// ["-o", "Key=value", ...], [file.json, "dotted.key", value] or [file.yaml, key, value, ...].
// Under dp_estimation (gen_sharding_overlap_args): no no_overlap entry, flags as they are, and a
// YAML entry [file.yaml, key, value with overlap, value without].
std::map<std::string, std::vector<std::string>> ParseShardingOverlap(const Json& overlap,
                                                                     bool grid) {
  const std::string where = "search_algo.sharding_overlap";
  if (!overlap.is_object()) Bad(where, "expected an object of sharding_mp, sharding_pp, ...");
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [shape, args] : overlap.items()) {
    const std::string key = where + "." + shape;
    if (shape != "sharding_mp" && shape != "sharding_pp" && shape != "sharding_mp_pp" &&
        (shape != "no_overlap" || !grid)) {
      Bad(key, grid ? "expected sharding_mp, sharding_pp, sharding_mp_pp or no_overlap"
                    : "expected sharding_mp, sharding_pp or sharding_mp_pp");
    }
    if (!args.is_array() || args.empty() || args.size() > 64 || !args[0].is_string()) {
      Bad(key, "expected a list starting with a --flag, -o or a .json or .yaml file");
    }
    std::vector<std::string>& parts = out[shape];
    for (const Json& part : args) {
      if (part.is_object() || part.is_array()) Bad(key, "expected strings, numbers or booleans");
      parts.push_back(part.dump());
    }
    const std::string first = args[0].get<std::string>();
    if (first.find(".json") != std::string::npos) {
      if (parts.size() != 3 || !args[1].is_string())
        Bad(key, "expected [file.json, \"key\", value]");
    } else if (first.find(".yaml") != std::string::npos && !grid) {
      if (parts.size() != 4 || !args[1].is_string()) {
        Bad(key, "expected [file.yaml, \"key\", value with overlap, value without]");
      }
    } else if (first.find(".yaml") != std::string::npos) {
      if (parts.size() < 3 || parts.size() % 2 == 0) {
        Bad(key, "expected [file.yaml, key, value, key, value, ...]");
      }
      for (size_t k = 1; k < parts.size(); k += 2) {
        if (!args[k].is_string()) Bad(key, "a key of the YAML file must be a string");
      }
    } else if (first.find("--") != std::string::npos) {
      if (grid && parts.size() % 2) Bad(key, "expected pairs of a --flag and its value");
    } else if (first.find("-o") == std::string::npos) {
      Bad(key,
          fmt::format("'{}' is neither a --flag, -o nor a .json or .yaml file", OneLine(first)));
    }
  }
  return out;
}

// search_algo dp_estimation's keys: estimated_num_gpus (required) and conversion.
void ParseDpEstimation(const Json& algo, long gpus_per_node, TunerConfig& c) {
  const std::string key = "search_algo.estimated_num_gpus";
  if (!algo.contains("estimated_num_gpus")) {
    Bad(key, "dp_estimation needs it: the devices the layouts are estimated for");
  }
  const Json& e = algo["estimated_num_gpus"];
  if (!e.is_number_integer() || e.get<long>() < gpus_per_node || e.get<long>() > kMaxDegree ||
      e.get<long>() % gpus_per_node) {
    Bad(key, fmt::format("expected a multiple of this node's {} devices (up to {})", gpus_per_node,
                         kMaxDegree));
  }
  c.estimated_num_gpus = e.get<long>();
  if (!algo.contains("conversion")) return;
  const Json& conv = algo["conversion"];
  if (!conv.is_object()) Bad("search_algo.conversion", "expected an object");
  TunerConfig::Conversion out;
  for (const auto& [name, value] : conv.items()) {
    const std::string where = "search_algo.conversion." + name;
    if (name == "step_time") {
      if (!value.is_string() || value.get<std::string>().empty() ||
          value.get<std::string>().size() > 128 ||
          value.get<std::string>().find_first_of(",\n\r\"") != std::string::npos) {
        Bad(where, "expected the step time's name in the log (1 to 128 characters, no comma)");
      }
      out.step_time = value.get<std::string>();
    } else if (name == "comm_bw") {
      if (!value.is_array() || value.empty() || value.size() > 16) {
        Bad(where, "expected a list of 1 to 16 bandwidths");
      }
      out.comm_bw.clear();
      out.comm_bw_names.clear();
      for (const Json& bw : value) {
        if (!bw.is_number() || !(bw.get<double>() > 0) || bw.get<double>() > 1e9) {
          Bad(where, fmt::format("{}: expected a positive number", OneLine(bw.dump())));
        }
        out.comm_bw.push_back(bw.get<double>());
        out.comm_bw_names.push_back(bw.dump());
      }
    } else if (name == "model_size_b") {
      if (!value.is_number_integer() || value.get<long>() < 1 || value.get<long>() > 1000000) {
        Bad(where, "expected the model's size in billions of parameters (a positive integer)");
      }
      out.model_size_b = value.get<long>();
    } else if (name == "amp") {
      out.amp = Bool(value, where);
    } else if (name == "need_unify") {
      out.need_unify = Bool(value, where);
    } else {
      Bad(where, "unknown key");
    }
  }
  // Paddle converts only with a step time (main.py) and ignores the section without one: an
  // error here, as for any key that would do nothing.
  if (out.step_time.empty()) Bad("search_algo.conversion.step_time", "required by conversion");
  c.conversion = out;
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

}  // namespace

TunerConfig ParseTunerConfig(const std::string& text, const std::string& json_path, long nodes,
                             long gpus_per_node) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw UsageError(
        fmt::format("--auto_tuner_json {}: not JSON ({})", OneLine(json_path), OneLine(e.what())));
  }
  if (!root.is_object()) Bad("(the file)", "expected a JSON object");
  for (const auto& [key, value] : root.items()) {
    if (!kKnownKeys.count(key)) Bad(key, "unknown key");
  }
  TunerConfig c;
  c.json_path = json_path;
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.num_gpus = nodes * gpus_per_node;
  if (root.contains("search_algo")) {
    const Json& algo = root["search_algo"];
    if (!algo.is_object() || !algo.contains("name") || !algo["name"].is_string()) {
      Bad("search_algo", "expected {\"name\": \"grid\"}");
    }
    c.search_algo = algo["name"].get<std::string>();
    if (c.search_algo != "grid" && c.search_algo != "customize" &&
        c.search_algo != "dp_estimation") {
      Bad("search_algo.name",
          fmt::format("'{}': expected grid, dp_estimation or customize (gbs is the pre-search "
                      "that model_cfg.global_batch_size \"auto\" runs before any of them)",
                      OneLine(c.search_algo)));
    }
    for (const auto& [key, value] : algo.items()) {
      if (key == "name") continue;
      if (key == "sharding_overlap") {
        if (c.search_algo != "grid" && c.search_algo != "dp_estimation") {
          Bad("search_algo." + key, "only with grid or dp_estimation");
        }
        c.sharding_overlap = ParseShardingOverlap(value, c.search_algo == "grid");
        continue;
      }
      if (key == "configs_csv") {  // Paddle reads it at the top level; here either place.
        if (c.search_algo != "customize") Bad("search_algo." + key, "only with customize");
        if (!value.is_string()) Bad("search_algo." + key, "expected a file name");
        c.configs_csv = value.get<std::string>();
        continue;
      }
      if (key != "estimated_num_gpus" && key != "conversion") {
        Bad("search_algo." + key,
            "not a key of search_algo (it takes name, sharding_overlap, configs_csv, "
            "estimated_num_gpus and conversion)");
      }
      if (c.search_algo != "dp_estimation") Bad("search_algo." + key, "only with dp_estimation");
    }
    if (c.search_algo == "dp_estimation") ParseDpEstimation(algo, gpus_per_node, c);
  }
  // dp_estimation: the candidates are those of the estimated cluster (utils.py
  // default_candidates), its nodes estimated_num_gpus / gpus_per_node.
  c.given_nodes = nodes;
  if (c.estimated_num_gpus) {
    c.num_gpus = *c.estimated_num_gpus;
    nodes = c.num_gpus / gpus_per_node;
    c.nodes = nodes;
  }
  if (root.contains("configs_csv")) {
    if (!root["configs_csv"].is_string()) Bad("configs_csv", "expected a file name");
    const std::string top = root["configs_csv"].get<std::string>();
    if (!c.configs_csv.empty() && c.configs_csv != top) {
      Bad("configs_csv", fmt::format("'{}' here and '{}' in search_algo: give one", OneLine(top),
                                     OneLine(c.configs_csv)));
    }
    c.configs_csv = top;
  }
  if (c.search_algo == "customize" && c.configs_csv.empty()) {
    Bad("configs_csv", "search_algo customize needs the CSV of its layouts");
  }
  if (root.contains("schedule_mode")) {
    if (!root["schedule_mode"].is_string()) Bad("schedule_mode", "expected a string");
    const std::string mode = root["schedule_mode"].get<std::string>();
    if (mode != "memory" && mode != "performance") {
      Bad("schedule_mode", fmt::format("'{}': expected memory or performance", OneLine(mode)));
    }
    c.performance_first = mode == "performance";
  }
  if (!root.contains("model_cfg") || !root["model_cfg"].is_object()) {
    Bad("model_cfg", "required: an object with global_batch_size, num_layers, ...");
  }
  const Json& model = root["model_cfg"];
  for (const auto& [key, value] : model.items()) {
    static const std::set<std::string> kModel = {
        "global_batch_size",   "num_layers", "hidden_size",         "vocab_size",
        "num_attention_heads", "seq_length", "max_sequence_length", "intermediate_size"};
    if (!kModel.count(key)) Bad("model_cfg." + key, "unknown key");
  }
  // "auto", or none (Paddle's default): the GBS pre-search finds it (SettleGlobalBatchSize).
  if (!model.contains("global_batch_size") || model["global_batch_size"].is_string()) {
    if (model.contains("global_batch_size") &&
        model["global_batch_size"].get<std::string>() != "auto") {
      Bad("model_cfg.global_batch_size", "a string must be \"auto\"");
    }
    c.gbs_auto = true;
  } else {
    c.global_batch_size = ModelInt(model, "global_batch_size");
  }
  if (c.estimated_num_gpus && c.gbs_auto) {
    Bad("model_cfg.global_batch_size",
        "dp_estimation needs the estimated cluster's batch: the GBS pre-search would find this "
        "node's");
  }
  c.num_layers = ModelInt(model, "num_layers");
  c.hidden_size = ModelInt(model, "hidden_size");
  c.vocab_size = ModelInt(model, "vocab_size");
  c.num_attention_heads = ModelInt(model, "num_attention_heads");
  c.seq_length = ModelInt(model, "seq_length");
  c.max_sequence_length = ModelInt(model, "max_sequence_length");
  c.intermediate_size = ModelInt(model, "intermediate_size");
  if (root.contains("use_sequence_parallel")) {
    c.use_sequence_parallel = Bool(root["use_sequence_parallel"], "use_sequence_parallel");
  }
  const bool perf = c.performance_first;
  bool enable_mp_prune = true, enable_pp_prune = true;
  if (root.contains("enable_mp_prune"))
    enable_mp_prune = Bool(root["enable_mp_prune"], "enable_mp_prune");
  if (root.contains("enable_pp_prune"))
    enable_pp_prune = Bool(root["enable_pp_prune"], "enable_pp_prune");
  // utils.py dist_degree's default lists and orders.
  c.dp = Filter(root, "dp_degree", Divisors(c.num_gpus, perf), c.num_gpus);
  if (c.estimated_num_gpus && c.dp != std::vector<long>{1}) {
    c.warnings.push_back(
        "dp_degree should be [1] in dp estimation search mode. Modify it to [1] automatically.");
    c.dp = {1};
  }
  std::vector<long> mp = Divisors(enable_mp_prune ? gpus_per_node : c.num_gpus, !perf);
  std::erase_if(mp, [&](long m) {
    const char* size =
        (c.hidden_size && *c.hidden_size % m)                            ? "hidden_size"
        : (c.vocab_size && *c.vocab_size % m)                            ? "vocab_size"
        : (c.num_attention_heads && *c.num_attention_heads % m)          ? "num_attention_heads"
        : (c.use_sequence_parallel && c.seq_length && *c.seq_length % m) ? "seq_length"
                                                                         : nullptr;
    if (size != nullptr) LeftOut(root, "mp_degree", m, size, c.warnings);
    return size != nullptr;
  });
  c.mp = Filter(root, "mp_degree", mp, c.num_gpus);
  std::vector<long> pp;
  if (nodes > 1 && enable_pp_prune) {
    for (long p = nodes + 1; p >= 1; --p) pp.push_back(p);
  } else {
    pp = Divisors(c.num_gpus, true);
  }
  std::erase_if(pp, [&](long p) {
    const bool out = c.num_layers && *c.num_layers % p;
    if (out) LeftOut(root, "pp_degree", p, "num_layers", c.warnings);
    return out;
  });
  c.pp = Filter(root, "pp_degree", pp, c.num_gpus);
  c.sharding_degree = Filter(root, "sharding_degree", Divisors(c.num_gpus, true), c.num_gpus);
  if (root.contains("vpp_degree") && !c.num_layers) Bad("vpp_degree", "needs model_cfg.num_layers");
  c.vpp = c.num_layers ? Filter(root, "vpp_degree", Divisors(*c.num_layers, perf), *c.num_layers)
                       : std::vector<long>{1};
  if (root.contains("micro_batch_size")) c.mbs_spec = root["micro_batch_size"].dump();
  if (c.gbs_auto) {
    std::vector<long> any(1024);  // Its form checked now; its values once the GBS is known.
    std::iota(any.begin(), any.end(), 1L);
    Filter(root, "micro_batch_size", any, kMaxDegree);
  } else {
    c.mbs = Filter(root, "micro_batch_size", Divisors(*c.global_batch_size, perf),
                   *c.global_batch_size);
  }
  c.sharding_stage = Filter(root, "sharding_stage",
                            perf ? std::vector<long>{1, 2, 3} : std::vector<long>{3, 2, 1}, 3);
  // use_recompute / recompute_granularity.
  if (!root.contains("use_recompute")) {
    c.use_recompute = {std::nullopt};
  } else if (root["use_recompute"].is_string()) {
    if (root["use_recompute"].get<std::string>() != "auto")
      Bad("use_recompute", "a string must be \"auto\"");
    c.use_recompute = perf ? std::vector<std::optional<bool>>{false, true}
                           : std::vector<std::optional<bool>>{true, false};
  } else if (root["use_recompute"].is_boolean()) {
    c.use_recompute = {root["use_recompute"].get<bool>()};
  } else if (root["use_recompute"].is_array() && !root["use_recompute"].empty()) {
    for (const Json& v : root["use_recompute"]) c.use_recompute.push_back(Bool(v, "use_recompute"));
  } else {
    Bad("use_recompute", "expected \"auto\", true, false or a list of them");
  }
  static const std::vector<std::string> kGranularities = {"full", "full_attn", "core_attn"};
  if (!root.contains("recompute_granularity")) {
    c.recompute_granularity = {std::nullopt};
  } else {
    const Json& g = root["recompute_granularity"];
    std::vector<std::string> values;
    if (g.is_string() && g.get<std::string>() == "auto") {
      values = kGranularities;
      if (perf) std::reverse(values.begin(), values.end());
    } else if (g.is_string()) {
      values = {g.get<std::string>()};
    } else {
      values = Strings(g, "recompute_granularity");
    }
    for (const std::string& v : values) {
      if (std::find(kGranularities.begin(), kGranularities.end(), v) == kGranularities.end()) {
        Bad("recompute_granularity",
            fmt::format("'{}': expected full, full_attn or core_attn", OneLine(v)));
      }
      c.recompute_granularity.push_back(v);
    }
  }
  // metric_cfg.
  if (!root.contains("metric_cfg") || !root["metric_cfg"].is_object() ||
      !root["metric_cfg"].contains("name") || !root["metric_cfg"]["name"].is_string()) {
    Bad("metric_cfg", "required: {\"name\": \"...\", \"OptimizationDirection\": \"Maximize\"}");
  }
  for (const auto& [key, value] : root["metric_cfg"].items()) {
    if (key != "name" && key != "OptimizationDirection") Bad("metric_cfg." + key, "unknown key");
  }
  c.metric_name = root["metric_cfg"]["name"].get<std::string>();
  if (c.metric_name.empty() || c.metric_name.size() > 128 ||
      c.metric_name.find_first_of(",\n\r\"") != std::string::npos) {
    Bad("metric_cfg.name", "expected a name of 1 to 128 characters, no comma or quote");
  }
  if (root["metric_cfg"].contains("OptimizationDirection")) {
    const Json& d = root["metric_cfg"]["OptimizationDirection"];
    if (!d.is_string()) Bad("metric_cfg.OptimizationDirection", "expected Maximize or Minimize");
    c.maximize = d.get<std::string>() == "Maximize";
  }
  if (root.contains("custom_search_dim")) {
    if (c.search_algo == "customize") {
      Bad("custom_search_dim", "search_algo customize runs the layouts of configs_csv only");
    }
    c.custom_dims = ParseCustomDims(nlohmann::ordered_json::parse(text)["custom_search_dim"]);
  }
  if (root.contains("refined_recompute")) {
    const std::string key = "refined_recompute";
    if (c.search_algo == "customize") {
      Bad(key, "search_algo customize runs the layouts of configs_csv only");
    }
    for (const std::string& op : Strings(root[key], key)) {
      if (op.empty() || op.size() > 64 || !std::all_of(op.begin(), op.end(), [](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
          })) {
        Bad(key,
            fmt::format("'{}': an operator is letters, digits and '_' (64 at most)", OneLine(op)));
      }
      if (std::count(c.refined_recompute.begin(), c.refined_recompute.end(), op)) {
        Bad(key, fmt::format("'{}' is there twice", op));
      }
      c.refined_recompute.push_back(op);
    }
    if (c.refined_recompute.empty()) Bad(key, "expected a list of operators");
    if (!c.num_layers) Bad(key, "needs model_cfg.num_layers (its values go to num_layers / pp)");
  }
  // run_cmd.
  if (!root.contains("run_cmd") || !root["run_cmd"].is_object()) {
    Bad("run_cmd", "required: how each dimension reaches the script");
  }
  for (const auto& [key, value] : root["run_cmd"].items()) {
    if (key == "search_stage" || key == "run_best_stage") {
      if (!value.is_object()) Bad("run_cmd." + key, "expected an object");
      auto& stage = key == "search_stage" ? c.search_stage : c.run_best_stage;
      for (const auto& [name, entry] : value.items()) {
        stage.emplace_back(name, ParseRunCmd(entry, "run_cmd." + key + "." + name));
      }
    } else if (key == "generate_launch_cfg") {
      Bool(value, "run_cmd.generate_launch_cfg");
    } else if (kScriptKeys.count(key) || key == "refined_recompute" ||
               std::any_of(
                   c.custom_dims.begin(), c.custom_dims.end(),
                   [&, name = key](const TunerConfig::CustomDim& d) { return d.key == name; })) {
      c.run_cmd[key] = ParseRunCmd(value, "run_cmd." + key);
    } else {
      Bad("run_cmd." + key, "unknown key");
    }
  }
  if (!c.refined_recompute.empty()) {
    const auto it = c.run_cmd.find("refined_recompute");
    if (it == c.run_cmd.end()) {
      Bad("refined_recompute",
          "not in run_cmd: the script would never see it (add "
          "\"refined_recompute\": [\"./params.json\", \"refined_recompute\"])");
    }
    if (it->second.kind != RunCmdEntry::Kind::kFile || it->second.third) {
      Bad("run_cmd.refined_recompute",
          "expected [\"file.json\", \"key\"]: the operators' values "
          "go there as one object (as in Paddle, no flag, no -o)");
    }
  }
  for (const TunerConfig::CustomDim& dim : c.custom_dims) {
    if (!c.run_cmd.count(dim.key)) {
      Bad("custom_search_dim." + dim.key,
          fmt::format("not in run_cmd: the script would never see it (add \"{}\": [\"--{}\", "
                      "\"\"] or the like)",
                      dim.key, dim.key));
    }
  }
  if (root.contains("task_limit"))
    c.task_limit = static_cast<int>(PositiveInt(root["task_limit"], "task_limit"));
  if (root.contains("max_time_per_task"))
    c.max_time_per_task = Seconds(root["max_time_per_task"], "max_time_per_task");
  c.warmup_time = root.contains("warmup_time") ? Seconds(root["warmup_time"], "warmup_time")
                                               : c.max_time_per_task;
  if (root.contains("max_search_time"))
    c.max_search_time = Seconds(root["max_search_time"], "max_search_time");
  if (root.contains("buffer")) c.buffer = Seconds(root["buffer"], "buffer");
  if (root.contains("max_mem_usage"))
    c.max_mem_usage = Seconds(root["max_mem_usage"], "max_mem_usage");
  if (c.buffer && !c.max_mem_usage) Bad("buffer", "needs max_mem_usage (MiB)");
  if (root.contains("memory_estimation_tool")) {
    const Json& tool = root["memory_estimation_tool"];
    if (!tool.is_string() || tool.get<std::string>().empty()) {
      Bad("memory_estimation_tool", "expected the path of a Python script");
    }
    c.memory_estimation_tool = tool.get<std::string>();
    if (!c.max_mem_usage) {
      Bad("memory_estimation_tool", "needs max_mem_usage (MiB), the estimates' limit");
    }
  }
  if (root.contains("need_baseline"))
    c.need_baseline = Bool(root["need_baseline"], "need_baseline");
  if (root.contains("invalid_strategy"))
    c.invalid_strategy = Strings(root["invalid_strategy"], "invalid_strategy");
  if (root.contains("schedule_prior"))
    c.schedule_prior = Strings(root["schedule_prior"], "schedule_prior");
  if (root.contains("run_best")) c.run_best = Bool(root["run_best"], "run_best");
  const fs::path dir = fs::path(json_path).parent_path();
  const std::string stem = fs::path(json_path).filename().string().substr(
      0, fs::path(json_path).filename().string().rfind(".json"));
  c.history_csv = (dir / (stem + "_history.csv")).string();
  c.enhanced_csv = (dir / (stem + "_history_enhanced.csv")).string();
  c.resume_csv = c.history_csv;
  if (root.contains("resume_csv_file_path")) {
    if (!root["resume_csv_file_path"].is_string()) Bad("resume_csv_file_path", "expected a path");
    c.resume_csv = root["resume_csv_file_path"].get<std::string>();
  }
  c.best_cfg_dir = (dir / "best_cfg").string();
  if (root.contains("best_cfg_dir")) {
    if (!root["best_cfg_dir"].is_string()) Bad("best_cfg_dir", "expected a path");
    c.best_cfg_dir = root["best_cfg_dir"].get<std::string>();
  }
  return c;
}

std::string Describe(const TrialConfig& c) {
  std::string out = fmt::format("dp{} mp{} pp{} vpp{} sharding{} stage{} mbs{} recompute={}", c.dp,
                                c.mp, c.pp, c.vpp, c.sharding_degree, c.sharding_stage, c.mbs,
                                !c.use_recompute    ? std::string("-")
                                : !*c.use_recompute ? std::string("off")
                                                    : c.recompute_granularity.value_or("on"));
  for (const auto& [op, value] : c.refined) out += fmt::format(" {}={}", op, value);
  for (const auto& [key, value] : c.custom) out += fmt::format(" {}={}", key, PyStr(value));
  if (c.estimated_dp) out += fmt::format(" (for dp{}, gbs{})", c.estimated_dp, c.global_batch_size);
  if (c.sharding_overlap) out += *c.sharding_overlap ? " overlap=on" : " overlap=off";
  return out;
}

std::vector<std::pair<TrialConfig, std::optional<std::string>>> CustomizedLayouts(
    const std::string& text, const TunerConfig& config) {
  std::istringstream in(text);
  std::string line;
  const auto bad = [&](size_t row, const std::string& what) {
    throw UsageError(fmt::format("configs_csv '{}' row {}: {}", OneLine(config.configs_csv), row,
                                 OneLine(what)));
  };
  if (!std::getline(in, line)) bad(1, "no header");
  const std::vector<std::string> header = SplitAndStrip(line, ',');
  const auto column = [&](const std::string& name) -> std::optional<size_t> {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? std::nullopt : std::optional<size_t>(it - header.begin());
  };
  std::vector<std::pair<TrialConfig, std::optional<std::string>>> out;
  for (size_t row = 2; std::getline(in, line); ++row) {
    if (StripSpace(line).empty()) continue;
    const std::vector<std::string> fields = SplitAndStrip(line, ',');
    const auto field = [&](const std::string& name) {
      const std::optional<size_t> at = column(name);
      return at && *at < fields.size() ? fields[*at] : std::string();
    };
    const auto integer = [&](const std::string& name) {
      const std::string text_value = field(name);
      long value = 0;
      const auto [end, ec] =
          std::from_chars(text_value.data(), text_value.data() + text_value.size(), value);
      if (text_value.empty() || ec != std::errc() || end != text_value.data() + text_value.size() ||
          value < 1) {
        bad(row, fmt::format("{} must be an integer >= 1, got '{}'", name, text_value));
      }
      return value;
    };
    TrialConfig c;
    c.dp = integer("dp_degree");
    c.mp = integer("mp_degree");
    c.pp = integer("pp_degree");
    c.vpp = integer("vpp_degree");
    c.mbs = integer("micro_batch_size");
    c.sharding_degree = integer("sharding_degree");
    c.sharding_stage = integer("sharding_stage");
    std::string recompute = field("use_recompute");
    std::transform(recompute.begin(), recompute.end(), recompute.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (recompute != "true" && recompute != "false") {
      bad(row,
          fmt::format("use_recompute must be true or false, got '{}'", field("use_recompute")));
    }
    c.use_recompute = recompute == "true";
    const std::string granularity = field("recompute_granularity");
    if (!granularity.empty()) {
      if (granularity != "full" && granularity != "full_attn" && granularity != "core_attn") {
        bad(row, fmt::format("recompute_granularity must be full, full_attn or core_attn, got "
                             "'{}'",
                             granularity));
      }
      c.recompute_granularity = granularity;
    }
    c.global_batch_size = config.global_batch_size.value_or(0);
    if (c.global_batch_size > 0) {
      const long per_step = c.dp * c.sharding_degree * c.mbs;
      if (c.global_batch_size % per_step) {
        bad(row, fmt::format("global_batch_size {} is not a multiple of dp_degree {} x "
                             "sharding_degree {} x micro_batch_size {}",
                             c.global_batch_size, c.dp, c.sharding_degree, c.mbs));
      }
      c.acc_steps = c.global_batch_size / per_step;
    }
    out.emplace_back(c, std::nullopt);
  }
  if (out.empty()) bad(2, "no layout");
  return out;
}

namespace {

// refined_recompute's values for one layout (utils.py search_all): all 0 when it cannot apply
// (pp 1, recompute off or not full); else the first operator from 0 to num_layers / pp with the
// others 0, then each next operator from 0 up with those before it at the maximum; descending in
// schedule_mode performance. One empty list without refined_recompute.
std::vector<std::vector<long>> RefinedValues(const TunerConfig& cfg, long pp,
                                             const std::optional<bool>& recompute,
                                             const std::optional<std::string>& granularity) {
  const size_t ops = cfg.refined_recompute.size();
  if (ops == 0) return {{}};
  if (pp == 1 || !recompute.value_or(false) || granularity.value_or("") != "full") {
    return {std::vector<long>(ops, 0)};
  }
  const long max = *cfg.num_layers / pp;
  std::vector<std::vector<long>> out;
  for (size_t i = 0; i < ops; ++i) {
    for (long v = 0; v <= max; ++v) {
      std::vector<long> values(ops, 0);
      for (size_t k = 0; k < i; ++k) values[k] = max;
      values[i] = v;
      if (std::find(out.begin(), out.end(), values) == out.end()) out.push_back(values);
    }
  }
  if (cfg.performance_first) std::sort(out.rbegin(), out.rend());
  return out;
}

// prune.py prune_by_refined_recompute, its last static rule.
std::optional<std::string> RefinedPrune(const TrialConfig& c, const TunerConfig& cfg) {
  if (c.refined.empty()) return std::nullopt;
  const bool any = std::any_of(c.refined.begin(), c.refined.end(),
                               [](const auto& op) { return op.second != 0; });
  if (any && c.use_recompute.value_or(false) && c.recompute_granularity &&
      *c.recompute_granularity != "full") {
    return "refined_recompute needs recompute_granularity full";
  }
  if (any && c.pp == 1) return "refined_recompute needs pp > 1";
  const long max = *cfg.num_layers / c.pp;
  for (size_t i = 0; i < c.refined.size(); ++i) {
    if (c.refined[i].second > max) {
      return fmt::format("{} {} is past num_layers / pp {}", c.refined[i].first,
                         c.refined[i].second, max);
    }
    if (i > 0 && c.refined[i - 1].second != max && c.refined[i].second != 0) {
      return fmt::format("{} before {} is not at its maximum {}", c.refined[i - 1].first,
                         c.refined[i].first, max);
    }
  }
  return std::nullopt;
}

// prune.py's static rules, in its order, for `c` given the candidates `kept` before it: the
// reason it is pruned, or nullopt.
std::optional<std::string> StaticPrune(const TrialConfig& c, const TunerConfig& cfg,
                                       const std::vector<TrialConfig>& kept,
                                       const MemoryEstimate& estimate) {
  const long dp = c.dp, mp = c.mp, pp = c.pp, sd = c.sharding_degree, mbs = c.mbs, vpp = c.vpp;
  const long local = c.global_batch_size / dp / sd;
  const std::optional<bool>& recompute = c.use_recompute;
  const std::optional<std::string>& granularity = c.recompute_granularity;
  if (std::find(cfg.mp.begin(), cfg.mp.end(), mp) == cfg.mp.end()) {
    return "mp_degree not a candidate";
  }
  if (cfg.num_layers && *cfg.num_layers % pp) {
    return fmt::format("num_layers {} not divisible by pp {}", *cfg.num_layers, pp);
  }
  if (vpp > 1 && (c.acc_steps % pp)) {
    return fmt::format("vpp {} needs acc_steps {} divisible by pp {}", vpp, c.acc_steps, pp);
  }
  if (pp <= 2 && vpp != 1) return fmt::format("vpp {} needs pp > 2", vpp);
  if (local == 0 || local % mbs) {
    return fmt::format("local batch {} not divisible by mbs {}", local, mbs);
  }
  if (local / mbs < pp) return fmt::format("acc_steps {} below pp {}", local / mbs, pp);
  if (pp != 1 && c.sharding_stage != 1 && sd != 1) {
    return fmt::format("sharding stage {} with pp {}", c.sharding_stage, pp);
  }
  if (sd == 1 && std::any_of(kept.begin(), kept.end(), [&](const TrialConfig& k) {
        return SameBeside(k, c, {"sharding_stage"});
      })) {
    return "sharding_degree 1: the stage makes no difference";
  }
  if (recompute && !*recompute && granularity && *granularity != "full") {
    return "recompute off: the granularity makes no difference";
  }
  if (recompute && std::any_of(kept.begin(), kept.end(), [&](const TrialConfig& k) {
        return RecomputeLevel(k) == RecomputeLevel(c) && SameBeside(k, c, {"recompute"});
      })) {
    return "the same recompute level as a kept candidate";
  }
  if (dp * mp * pp * sd != cfg.num_gpus) {
    return fmt::format("dp*mp*pp*sharding {} is not the {} devices", dp * mp * pp * sd,
                       cfg.num_gpus);
  }
  if (estimate) {
    // Paddle compares the MB printed with max_mem_usage * 1024; recorder.py and PaddleNLP's
    // files give max_mem_usage in MiB, as pdlaunch reads it everywhere.
    const double mb = std::round(estimate(c));
    if (mb > *cfg.max_mem_usage) {
      return fmt::format("estimated {} MB, above max_mem_usage {}", Fmt(mb),
                         Fmt(*cfg.max_mem_usage));
    }
  }
  for (const std::string& strategy : cfg.invalid_strategy) {
    if (MatchesStrategy(c, strategy)) return fmt::format("invalid_strategy {}", strategy);
  }
  return RefinedPrune(c, cfg);
}

}  // namespace

namespace {

// gen_new_ctx's nodes for a trial of `gpus` devices: one, whole nodes, or the fewest of the
// job's that split the devices evenly; 0 when none does.
long NodesOfTrial(long gpus, const TunerConfig& cfg) {
  if (gpus <= cfg.gpus_per_node) return 1;
  if (gpus % cfg.gpus_per_node == 0) return gpus / cfg.gpus_per_node;
  for (long n = 2; n <= cfg.given_nodes; ++n) {
    if (gpus % n == 0 && gpus / n <= cfg.gpus_per_node) return n;
  }
  return 0;
}

// utils.py search_by_dp_estimation: each layout of the estimated cluster that the static rules
// kept, as one data-parallel replica (dp, sharding and stage 1) on mp x pp devices, its batch the
// cluster's divided by the cluster's dp x sharding; a layout equal to an earlier one (stages
// collapse) is left out, and one that needs more nodes than the job has is pruned.
std::vector<std::pair<TrialConfig, std::optional<std::string>>> SingleReplicaLayouts(
    const std::vector<std::pair<TrialConfig, std::optional<std::string>>>& grid,
    const TunerConfig& cfg) {
  std::vector<std::pair<TrialConfig, std::optional<std::string>>> out;
  std::vector<TrialConfig> seen;
  for (const auto& [layout, why] : grid) {
    if (why) continue;
    TrialConfig t = layout;
    t.estimated_dp = layout.dp * layout.sharding_degree;
    t.dp = t.sharding_degree = t.sharding_stage = 1;
    t.trial_gpus = t.mp * t.pp;
    t.global_batch_size = *cfg.global_batch_size / t.estimated_dp;
    t.acc_steps = t.global_batch_size / t.mbs;
    t.trial_nodes = NodesOfTrial(t.trial_gpus, cfg);
    if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
    seen.push_back(t);
    std::optional<std::string> reason;
    if (t.trial_nodes == 0 || t.trial_nodes > cfg.given_nodes) {
      reason = fmt::format("one replica needs {} devices, more than the job's {} node(s) of {}",
                           t.trial_gpus, cfg.given_nodes, cfg.gpus_per_node);
    }
    out.emplace_back(t, reason);
  }
  // sharding_overlap: each replica that runs, widened by sharding to the job's devices, without
  // and with the overlap (its gain over the replica's converted metrics: AddOverlapPerformance).
  if (cfg.sharding_overlap.empty()) return out;
  const long given = cfg.given_nodes * cfg.gpus_per_node;
  const size_t replicas = out.size();
  for (size_t k = 0; k < replicas; ++k) {
    if (out[k].second) continue;  // Paddle widens only the replicas it keeps.
    const TrialConfig& replica = out[k].first;
    const long sharding = given / replica.trial_gpus;
    if (sharding <= 1) continue;
    TrialConfig wide = replica;
    wide.sharding_degree = sharding;
    wide.estimated_dp = 0;
    wide.trial_gpus = replica.trial_gpus * sharding;
    wide.trial_nodes = NodesOfTrial(wide.trial_gpus, cfg);
    wide.global_batch_size = replica.global_batch_size * sharding;
    wide.acc_steps = wide.global_batch_size / sharding / wide.mbs;
    for (const bool overlap : {false, true}) {
      wide.sharding_overlap = overlap;
      out.emplace_back(wide, std::nullopt);
    }
  }
  return out;
}

}  // namespace

std::vector<std::pair<TrialConfig, std::optional<std::string>>> SearchSpace(
    const TunerConfig& cfg, const MemoryEstimate& estimate) {
  if (cfg.estimated_num_gpus) {
    TunerConfig grid = cfg;
    grid.estimated_num_gpus.reset();
    return SingleReplicaLayouts(SearchSpace(grid, estimate), cfg);
  }
  if (!cfg.global_batch_size) {
    throw LaunchError("auto tuner: the layouts need the global batch size (the GBS pre-search's)");
  }
  const long gbs = *cfg.global_batch_size;
  // utils.py search_all: the degrees nested mp → sharding → pp → dp, their product the devices.
  std::vector<std::array<long, 4>> degrees;
  for (long mp : cfg.mp) {
    if (cfg.num_gpus % mp) continue;
    for (long sd : cfg.sharding_degree) {
      if ((cfg.num_gpus / mp) % sd) continue;
      for (long pp : cfg.pp) {
        const long rest = cfg.num_gpus / mp / sd;
        if (rest % pp) continue;
        for (long dp : cfg.dp) {
          if (dp == rest / pp) degrees.push_back({mp, sd, pp, dp});
        }
      }
    }
  }
  // custom_search_dim: itertools.product of the values, the last dimension varying fastest,
  // innermost of all (after the recompute granularity).
  std::vector<std::vector<std::pair<std::string, std::string>>> customs{{}};
  for (const TunerConfig::CustomDim& dim : cfg.custom_dims) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& prefix : customs) {
      for (const std::string& value : dim.values) {
        next.push_back(prefix);
        next.back().emplace_back(dim.key, value);
      }
    }
    customs = std::move(next);
  }
  std::vector<std::pair<TrialConfig, std::optional<std::string>>> all;
  std::vector<TrialConfig> kept;
  for (const auto& [mp, sd, pp, dp] : degrees) {
    for (long stage : cfg.sharding_stage) {
      for (long mbs : cfg.mbs) {
        for (long vpp : cfg.vpp) {
          for (const auto& recompute : cfg.use_recompute) {
            for (const auto& granularity : cfg.recompute_granularity) {
              for (const auto& custom : customs) {
                if (gbs % (mbs * sd * dp)) continue;
                if (cfg.num_layers && *cfg.num_layers % (pp * vpp)) continue;
                for (const std::vector<long>& rr : RefinedValues(cfg, pp, recompute, granularity)) {
                  TrialConfig c{dp,
                                mp,
                                pp,
                                sd,
                                stage,
                                mbs,
                                vpp,
                                recompute,
                                granularity,
                                gbs,
                                gbs / dp / sd / mbs,
                                custom,
                                {}};
                  for (size_t k = 0; k < rr.size(); ++k) {
                    c.refined.emplace_back(cfg.refined_recompute[k], rr[k]);
                  }
                  const std::optional<std::string> why = StaticPrune(c, cfg, kept, estimate);
                  if (!why) kept.push_back(c);
                  all.emplace_back(c, why);
                }
              }
            }
          }
        }
      }
    }
  }
  // need_baseline: memory-first (utils.py memory_sort), so the first trial most likely fits.
  if (cfg.need_baseline) {
    std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) {
      const TrialConfig& a = x.first;
      const TrialConfig& b = y.first;
      return std::make_tuple(-a.mp, -a.pp, -a.vpp, -a.sharding_degree, -a.sharding_stage, a.mbs,
                             -static_cast<int>(a.use_recompute.value_or(false))) <
             std::make_tuple(-b.mp, -b.pp, -b.vpp, -b.sharding_degree, -b.sharding_stage, b.mbs,
                             -static_cast<int>(b.use_recompute.value_or(false)));
    });
  }
  // schedule_prior: the matching candidates first, the first strategy's first.
  for (auto it = cfg.schedule_prior.rbegin(); it != cfg.schedule_prior.rend(); ++it) {
    std::stable_partition(all.begin(), all.end(),
                          [&](const auto& x) { return MatchesStrategy(x.first, *it); });
  }
  return all;
}

std::optional<std::string> HistoryPrune(const TrialConfig& c,
                                        const std::vector<TrialOutcome>& history, bool& oom) {
  oom = false;
  for (const TrialOutcome& h : history) {
    const bool ran = h.metric.has_value() && !h.oom;
    const TrialConfig& o = h.cfg;
    if (SameBeside(o, c, {"mbs"})) {
      if (o.mbs > c.mbs && ran) return fmt::format("mbs {} ran, a smaller one is slower", o.mbs);
      if (o.mbs < c.mbs && h.oom) {
        oom = true;
        return fmt::format("mbs {} ran out of memory", o.mbs);
      }
    }
    if (SameBeside(o, c, {"sharding_stage"})) {
      if (o.sharding_stage < c.sharding_stage && ran) {
        return fmt::format("stage {} ran, a higher one is slower", o.sharding_stage);
      }
      if (o.sharding_stage > c.sharding_stage && h.oom) {
        oom = true;
        return fmt::format("stage {} ran out of memory", o.sharding_stage);
      }
    }
    if (SameBeside(o, c, {"recompute"})) {
      if (RecomputeLevel(o) < RecomputeLevel(c) && ran) {
        return "less recompute ran, more is slower";
      }
      if (RecomputeLevel(o) > RecomputeLevel(c) && h.oom) {
        oom = true;
        return "more recompute ran out of memory";
      }
    }
    if (SameBeside(o, c, {"vpp"}) && o.vpp > c.vpp && h.oom) {
      oom = true;
      return fmt::format("vpp {} ran out of memory", o.vpp);
    }
  }
  return std::nullopt;
}

std::optional<std::string> HistoryPrune(const TrialConfig& c,
                                        const std::vector<TrialOutcome>& history, bool& oom,
                                        const TunerConfig& config) {
  if (auto why = HistoryPrune(c, history, oom)) return why;
  // refined_recompute (prune.py prune_by_refined_recompute_history), for layouts equal but in
  // the operators' values and use_recompute: recompute off ran, so refining it is slower; an
  // operator's larger value ran (less recompute), so a smaller one is slower; a smaller one ran
  // out of memory, so would a larger one.
  for (size_t i = 0; i < c.refined.size(); ++i) {
    const auto& [op, value] = c.refined[i];
    for (const TrialOutcome& h : history) {
      if (h.cfg.refined.size() != c.refined.size() ||
          !SameBeside(h.cfg, c, {"refined", "use_recompute"})) {
        continue;
      }
      const bool ran = h.metric.has_value() && !h.oom;
      const bool both = h.cfg.use_recompute.value_or(false) && c.use_recompute.value_or(false);
      const long theirs = h.cfg.refined[i].second;
      if (!h.cfg.use_recompute.value_or(false) && ran) {
        return fmt::format("{} {}: recompute off ran, refining recompute is slower", op, value);
      }
      if (theirs > value && ran && both) {
        return fmt::format("{} {} ran, a smaller one is slower", op, theirs);
      }
      if (theirs < value && h.oom && both) {
        oom = true;
        return fmt::format("{} {} ran out of memory", op, theirs);
      }
    }
  }
  // custom_search_dim with prune: its values are the user's order of preference; once one ran,
  // the later ones of the same layout are not tried (prune.py
  // prune_by_custom_search_dim_history, which compares the other keys by a substring test of
  // the dimension's name: a key contained in it, mp_degree in mp_degree_x, was not compared).
  for (const TunerConfig::CustomDim& dim : config.custom_dims) {
    if (!dim.prune) continue;
    const auto index = [&](const TrialConfig& t) -> long {
      for (const auto& [key, value] : t.custom) {
        if (key != dim.key) continue;
        const auto it = std::find(dim.values.begin(), dim.values.end(), value);
        return it == dim.values.end() ? -1 : it - dim.values.begin();
      }
      return -1;
    };
    const long mine = index(c);
    if (mine < 0) continue;
    for (const TrialOutcome& h : history) {
      const long theirs = index(h.cfg);
      if (theirs >= 0 && theirs < mine && h.metric && !h.oom &&
          SameBeside(h.cfg, c, {"custom." + dim.key})) {
        return fmt::format("{} {} ran, a later value is not tried", dim.key,
                           PyStr(dim.values[static_cast<size_t>(theirs)]));
      }
    }
  }
  return std::nullopt;
}

size_t NewlyPruned(const std::vector<TrialConfig>& later, const std::vector<TrialOutcome>& history,
                   const TunerConfig& config) {
  if (history.empty()) return 0;
  const std::vector<TrialOutcome> before(history.begin(), history.end() - 1);
  size_t count = 0;
  for (const TrialConfig& cfg : later) {
    bool oom = false;
    if (HistoryPrune(cfg, history, oom, config) && !HistoryPrune(cfg, before, oom, config)) {
      ++count;
    }
  }
  return count;
}

std::vector<std::string> MemoryEstimationArguments(const TrialConfig& c,
                                                   const TunerConfig& config) {
  const std::pair<const char*, std::string> layout[] = {
      {"--dp_degree", std::to_string(c.dp)},
      {"--mp_degree", std::to_string(c.mp)},
      {"--pp_degree", std::to_string(c.pp)},
      {"--vpp_degree", std::to_string(c.vpp)},
      {"--sharding_degree", std::to_string(c.sharding_degree)},
      {"--sharding_stage", std::to_string(c.sharding_stage)},
      {"--use_recompute", PyBool(c.use_recompute)},
      {"--micro_batch_size", std::to_string(c.mbs)},
      {"--recompute_granularity", c.recompute_granularity.value_or("None")}};
  std::vector<std::string> args;
  for (const auto& [flag, value] : layout) {
    args.push_back(flag);
    args.push_back(value);
  }
  const std::pair<const char*, std::optional<long>> model[] = {
      {"--hidden_size", config.hidden_size}, {"--num_attention_heads", config.num_attention_heads},
      {"--num_layers", config.num_layers},   {"--max_sequence_length", config.max_sequence_length},
      {"--vocab_size", config.vocab_size},   {"--intermediate_size", config.intermediate_size}};
  for (const auto& [flag, value] : model) {
    if (!value) continue;
    args.push_back(flag);
    args.push_back(std::to_string(*value));
  }
  return args;
}

std::string EncodeNodeOutcome(const NodeOutcome& n) {
  const auto number = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  return Json{{"rank0", n.rank0},
              {"metric", number(n.metric)},
              {"memory_mib", number(n.memory_mib)},
              {"oom", n.oom},
              {"timed_out", n.timed_out},
              {"exit_code", n.exit_code},
              {"exec_time", n.exec_time},
              {"search_seconds", n.search_seconds},
              {"step_time", number(n.step_time)},
              {"skipped", n.skipped}}
      .dump();
}

std::optional<NodeOutcome> DecodeNodeOutcome(const std::string& text) {
  if (text.size() > 4096) return std::nullopt;
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto finite = [](const Json& v) {
    return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0;
  };
  const auto optional_number = [&](const char* key, std::optional<double>& out) {
    if (!j.contains(key)) return false;
    if (j[key].is_null()) return true;
    if (!finite(j[key])) return false;
    out = j[key].get<double>();
    return true;
  };
  const auto boolean = [&](const char* key, bool& out) {
    if (!j.contains(key) || !j[key].is_boolean()) return false;
    out = j[key].get<bool>();
    return true;
  };
  const auto seconds = [&](const char* key, double& out) {
    if (!j.contains(key) || !finite(j[key])) return false;
    out = j[key].get<double>();
    return true;
  };
  NodeOutcome n;
  if (!boolean("rank0", n.rank0) || !optional_number("metric", n.metric) ||
      !optional_number("memory_mib", n.memory_mib) || !boolean("oom", n.oom) ||
      !boolean("timed_out", n.timed_out) || !seconds("exec_time", n.exec_time) ||
      !seconds("search_seconds", n.search_seconds) || !j.contains("exit_code") ||
      !j["exit_code"].is_number_integer() || j["exit_code"].get<long>() < 0 ||
      j["exit_code"].get<long>() > 255 ||
      (j.contains("step_time") && !optional_number("step_time", n.step_time)) ||
      (j.contains("skipped") && !boolean("skipped", n.skipped))) {
    return std::nullopt;
  }
  n.exit_code = static_cast<int>(j["exit_code"].get<long>());
  return n;
}

NodeOutcome MergeNodeOutcomes(const std::vector<NodeOutcome>& nodes) {
  const auto rank0 = std::count_if(nodes.begin(), nodes.end(),
                                   [](const NodeOutcome& n) { return n.rank0 && !n.skipped; });
  if (rank0 > 1) {
    throw LaunchError(fmt::format(
        "auto tuner: {} of the {} nodes' outcomes say they ran rank 0, which one node runs: a "
        "record that no node of this search wrote (docs/master.md, \"Exposure\")",
        rank0, nodes.size()));
  }
  NodeOutcome merged;
  for (const NodeOutcome& n : nodes) {
    merged.search_seconds = std::max(merged.search_seconds, n.search_seconds);
    if (n.skipped) continue;  // Not among the nodes of a dp_estimation replica.
    merged.oom = merged.oom || n.oom;
    merged.timed_out = merged.timed_out || n.timed_out;
    if (merged.exit_code == 0 && !n.timed_out) merged.exit_code = n.exit_code;
    if (n.rank0) {
      merged.rank0 = true;
      merged.metric = n.metric;
      merged.step_time = n.step_time;
    }
    if (n.memory_mib) merged.memory_mib = std::max(merged.memory_mib.value_or(0), *n.memory_mib);
    merged.exec_time = std::max(merged.exec_time, n.exec_time);
    merged.search_seconds = std::max(merged.search_seconds, n.search_seconds);
  }
  return merged;
}

void ClassifyOutcome(const NodeOutcome& n, TrialOutcome& o) {
  o.metric = n.metric;
  o.memory_mib = n.memory_mib;
  o.oom = n.oom;
  o.timed_out = n.timed_out;
  o.exec_time = n.exec_time;
  o.error.clear();
  if (o.oom) {
    o.error = "Out of memory";
    o.metric.reset();
  } else if (o.timed_out && !o.metric) {
    o.error = "timeout";
  } else if (n.exit_code != 0 && !o.timed_out) {
    o.error = fmt::format("exit code {}", n.exit_code);
    o.metric.reset();
  }
}

std::string TimeLeft(size_t trials_ahead, double seconds_per_trial) {
  if (trials_ahead == 0) return {};
  const double seconds = static_cast<double>(trials_ahead) * std::max(0.0, seconds_per_trial);
  if (seconds < 1) return "under 1 s left";
  const auto total = static_cast<long>(std::lround(seconds));
  if (total < 60) return fmt::format("about {} s left", total);
  if (total < 3600) return fmt::format("about {} min {} s left", total / 60, total % 60);
  return fmt::format("about {} h {} min left", total / 3600, total % 3600 / 60);
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The first match in `line` of Paddle's regex `name:* *(\d+(\.\d*)?)|(\d+(\.\d*)?) *name`, the
// leftmost as re.search finds it (the first alternative where both start at one place), in one
// pass over the name's occurrences: no recursive matcher on log text (std::regex overflowed the
// stack on a line of 30 000 digits). A name that begins with a digit is not backtracked into.
std::optional<std::string> FirstMetricNumber(std::string_view line, std::string_view name) {
  std::optional<size_t> best_start;
  std::string_view best;
  const auto offer = [&](size_t start, std::string_view number) {
    if (!best_start || start < *best_start) {
      best_start = start;
      best = number;
    }
  };
  // \d+(\.\d*)? from `at`; its length, 0 for none.
  const auto number_at = [&](size_t at) {
    size_t end = at;
    while (end < line.size() && IsDigit(line[end])) ++end;
    if (end == at) return size_t{0};
    if (end < line.size() && line[end] == '.') {
      ++end;
      while (end < line.size() && IsDigit(line[end])) ++end;
    }
    return end - at;
  };
  for (size_t j = line.find(name); j != std::string_view::npos && !name.empty();
       j = line.find(name, j + 1)) {
    if (best_start && j > *best_start) break;  // Every later candidate starts later.
    // name:* *number
    size_t at = j + name.size();
    while (at < line.size() && line[at] == ':') ++at;
    while (at < line.size() && line[at] == ' ') ++at;
    if (const size_t length = number_at(at)) offer(j, line.substr(at, length));
    // number *name: the digits that end where the spaces before the name begin.
    size_t end = j;
    while (end > 0 && line[end - 1] == ' ') --end;
    size_t start = end;
    while (start > 0 && IsDigit(line[start - 1])) --start;
    if (start > 0 && line[start - 1] == '.') {  // A fraction: its integer digits before it.
      size_t integer = start - 1;
      while (integer > 0 && IsDigit(line[integer - 1])) --integer;
      if (integer < start - 1) start = integer;
    }
    if (start < end && IsDigit(line[start])) offer(start, line.substr(start, number_at(start)));
  }
  if (!best_start) return std::nullopt;
  return std::string(best);
}

}  // namespace

std::optional<double> ReadMetric(const std::string& log, const std::string& name) {
  std::vector<double> values;
  size_t begin = 0;
  while (begin < log.size()) {
    size_t end = log.find('\n', begin);
    if (end == std::string::npos) end = log.size();
    const std::string_view line = std::string_view(log).substr(begin, end - begin);
    begin = end + 1;
    if (line.size() > 64 * 1024) continue;
    const std::optional<std::string> number = FirstMetricNumber(line, name);
    if (!number) continue;
    // A number too long for a double (30 000 digits) is no metric.
    errno = 0;
    char* stop = nullptr;
    const double value = std::strtod(number->c_str(), &stop);
    if (errno == ERANGE || !std::isfinite(value)) continue;
    values.push_back(value);
  }
  if (values.empty()) return std::nullopt;
  double value = values.back();
  if (values.size() >= 10) {
    const size_t from = values.size() < 20 ? 9 : values.size() - 10;
    double sum = 0;
    for (size_t i = from; i < values.size(); ++i) sum += values[i];
    value = sum / static_cast<double>(values.size() - from);
  }
  return std::round(value * 1e5) / 1e5;
}

bool HasOutOfMemory(const std::string& log) {
  return log.find("Out of memory error on") != std::string::npos;
}

std::optional<size_t> BestTrial(const std::vector<TrialOutcome>& history,
                                const TunerConfig& config) {
  std::vector<size_t> order;
  for (size_t i = 0; i < history.size(); ++i) {
    if (history[i].metric && !history[i].oom && !history[i].pruned) order.push_back(i);
  }
  if (order.empty()) return std::nullopt;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return config.maximize ? *history[a].metric > *history[b].metric
                           : *history[a].metric < *history[b].metric;
  });
  if (!config.buffer || !config.max_mem_usage) return order.front();
  std::optional<size_t> least;
  for (size_t i : order) {
    const auto& mem = history[i].memory_mib;
    if (!mem) continue;
    if (*mem < *config.max_mem_usage - *config.buffer) return i;
    if (!least || *mem < *history[*least].memory_mib) least = i;
  }
  return least ? least : std::optional<size_t>(order.front());
}

std::vector<size_t> RankedTrials(const std::vector<TrialOutcome>& history,
                                 const TunerConfig& config) {
  std::vector<size_t> order;
  for (size_t i = 0; i < history.size(); ++i) {
    if (history[i].metric && !history[i].oom && !history[i].pruned) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return config.maximize ? *history[a].metric > *history[b].metric
                           : *history[a].metric < *history[b].metric;
  });
  // The table's first line is the layout the tuner runs: one rule for both.
  if (const std::optional<size_t> best = BestTrial(history, config)) {
    const auto at = std::find(order.begin(), order.end(), *best);
    if (at != order.end()) std::rotate(order.begin(), at, at + 1);
  }
  return order;
}

std::string RankedLine(size_t place, const TrialOutcome& trial, const TunerConfig& config) {
  std::string memory;
  if (trial.memory_mib) {
    memory = fmt::format("  {} MiB", Fmt(*trial.memory_mib));
    if (config.buffer && config.max_mem_usage &&
        *trial.memory_mib >= *config.max_mem_usage - *config.buffer) {
      memory += fmt::format(" (over max_mem_usage {} - buffer {})", Fmt(*config.max_mem_usage),
                            Fmt(*config.buffer));
    }
  }
  return fmt::format("  {}. {}  {}{}  (Job{})", place, Describe(trial.cfg),
                     trial.metric ? Fmt(*trial.metric) : std::string("-"), memory, trial.job_id);
}

std::vector<std::string> ConversionColumns(const TunerConfig& config) {
  std::vector<std::string> out;
  if (!config.conversion) return out;
  out.push_back("unified_" + config.metric_name);
  for (const std::string& bw : config.conversion->comm_bw_names) {
    out.push_back(fmt::format("bw_{}_{}", bw, config.metric_name));
    out.push_back(fmt::format("unified_bw_{}_{}", bw, config.metric_name));
  }
  if (!config.sharding_overlap.empty() && config.estimated_num_gpus) {
    for (const std::string& bw : config.conversion->comm_bw_names) {
      out.push_back(fmt::format("overlap_bw_{}_{}", bw, config.metric_name));
    }
  }
  return out;
}

void ConvertOutcome(TrialOutcome& trial, const TunerConfig& config,
                    const std::optional<double>& step_time) {
  trial.converted.clear();
  if (!config.conversion || trial.cfg.sharding_overlap) return;  // As main.py: not the widened.
  const TunerConfig::Conversion& conv = *config.conversion;
  const std::vector<std::string> names = ConversionColumns(config);
  const double devices =
      static_cast<double>(trial.cfg.trial_gpus ? trial.cfg.trial_gpus : config.num_gpus);
  // Python's truthiness: a metric or step time of 0 converts to None, as in Paddle.
  const auto unify = [&](const std::optional<double>& v) -> std::optional<double> {
    if (!v || *v == 0 || !conv.need_unify) return v;
    return RoundLikePython(*v / devices, 2);
  };
  const std::optional<double> metric = trial.metric;
  trial.converted.emplace_back(names[0], unify(metric));
  for (size_t k = 0; k < conv.comm_bw.size(); ++k) {
    const double comm_time =
        static_cast<double>(conv.model_size_b) * (conv.amp ? 6.0 : 4.0) / conv.comm_bw[k];
    std::optional<double> multi;
    if (metric && *metric != 0 && step_time && *step_time != 0) {
      multi = RoundLikePython(*step_time / (*step_time + comm_time) * *metric, 5);
    }
    trial.converted.emplace_back(names[1 + 2 * k], multi);
    trial.converted.emplace_back(names[2 + 2 * k], unify(multi));
  }
}

namespace {

// dp_estimation's columns after global_batch_size: the cluster's dp degree, the trial's devices
// and nodes (Paddle's estimated_dp_degree, num_gpus and nodes keys).
// With sharding_overlap, a fourth: sharding_overlap (True, False, or empty for a replica).
std::vector<std::string> EstimationColumns(const TunerConfig& config) {
  if (!config.estimated_num_gpus) return {};
  std::vector<std::string> names = {"estimated_dp_degree", "num_gpus", "nodes"};
  if (!config.sharding_overlap.empty()) names.push_back("sharding_overlap");
  return names;
}

std::string CsvHeader(const TunerConfig& config) {
  std::string custom_columns;
  for (const TunerConfig::CustomDim& dim : config.custom_dims) custom_columns += dim.key + ",";
  for (const std::string& op : config.refined_recompute) custom_columns += op + ",";
  std::string estimation;
  for (const std::string& name : EstimationColumns(config)) estimation += name + ",";
  std::string converted;
  for (const std::string& name : ConversionColumns(config)) converted += name + ",";
  return fmt::format(
      "job_id,mp_degree,sharding_degree,pp_degree,dp_degree,sharding_stage,micro_batch_size,"
      "vpp_degree,use_recompute,recompute_granularity,{}acc_steps,global_batch_size,{}exec_time,"
      "{},{}max_mem_usage,error_info\n",
      custom_columns, estimation, config.metric_name, converted);
}

std::string CsvRow(const TrialOutcome& h, const TunerConfig& config) {
  const TrialConfig& c = h.cfg;
  std::string custom_values;
  for (const auto& [key, value] : c.custom) custom_values += PyStr(value) + ",";
  for (const auto& [op, value] : c.refined) custom_values += std::to_string(value) + ",";
  std::string estimation =
      config.estimated_num_gpus
          ? fmt::format("{},{},{},", c.estimated_dp ? std::to_string(c.estimated_dp) : "",
                        c.trial_gpus, c.trial_nodes)
          : "";
  if (config.estimated_num_gpus && !config.sharding_overlap.empty()) {
    estimation += (c.sharding_overlap ? PyBool(c.sharding_overlap) : "") + ",";
  }
  // As many cells as the header has, whether or not the trial was converted.
  std::string converted;
  const size_t columns = ConversionColumns(config).size();
  for (size_t k = 0; k < columns; ++k) {
    const std::optional<double> value =
        k < h.converted.size() ? h.converted[k].second : std::nullopt;
    converted += (value ? Fmt(*value) : "") + ",";
  }
  return fmt::format(
      "{},{},{},{},{},{},{},{},{},{},{}{},{},{}{},{},{}{},{}\n", h.job_id, c.mp, c.sharding_degree,
      c.pp, c.dp, c.sharding_stage, c.mbs, c.vpp, c.use_recompute ? PyBool(c.use_recompute) : "",
      c.recompute_granularity.value_or(""), custom_values, c.acc_steps, c.global_batch_size,
      estimation, Fmt(h.exec_time), h.metric ? Fmt(*h.metric) : "", converted,
      h.oom          ? "OOM"
      : h.memory_mib ? Fmt(*h.memory_mib)
                     : "",
      h.error.empty() ? "" : fmt::format("['{}']", h.error));
}

}  // namespace

std::string HistoryCsv(const std::vector<TrialOutcome>& history, const TunerConfig& config) {
  std::string out = CsvHeader(config);
  for (const TrialOutcome& h : history) {
    if (!h.pruned) out += CsvRow(h, config);
  }
  return out;
}

void AddOverlapPerformance(std::vector<TrialOutcome>& history, const TunerConfig& config) {
  if (history.empty() || !config.conversion) return;
  const TrialOutcome& overlap = history.back();
  if (!overlap.cfg.sharding_overlap || !*overlap.cfg.sharding_overlap || !overlap.metric) return;
  // The same layout (dp, mp, pp, vpp, mbs, recompute, stage): the replica, and the widened run
  // without overlap of the same sharding.
  const auto same = [&](const TrialConfig& c) {
    return c.dp == overlap.cfg.dp && c.mp == overlap.cfg.mp && c.pp == overlap.cfg.pp &&
           c.vpp == overlap.cfg.vpp && c.mbs == overlap.cfg.mbs &&
           c.use_recompute == overlap.cfg.use_recompute &&
           c.recompute_granularity == overlap.cfg.recompute_granularity &&
           c.sharding_stage == overlap.cfg.sharding_stage && c.custom == overlap.cfg.custom &&
           c.refined == overlap.cfg.refined;
  };
  TrialOutcome* replica = nullptr;
  const TrialOutcome* without = nullptr;
  for (TrialOutcome& h : history) {
    if (h.pruned || !same(h.cfg)) continue;
    if (!h.cfg.sharding_overlap) replica = &h;
    if (h.cfg.sharding_overlap && !*h.cfg.sharding_overlap &&
        h.cfg.sharding_degree == overlap.cfg.sharding_degree) {
      without = &h;
    }
  }
  if (!replica || !without || !replica->metric || !without->metric || *without->metric == 0) {
    return;
  }
  const double ratio = (*overlap.metric - *without->metric) / *without->metric;
  const std::vector<std::string> names = ConversionColumns(config);
  replica->converted.resize(names.size());
  const size_t bws = config.conversion->comm_bw.size();
  for (size_t k = 0; k < bws; ++k) {
    const std::optional<double>& bw = replica->converted[1 + 2 * k].second;
    replica->converted[1 + 2 * bws + k] = {
        names[1 + 2 * bws + k],
        bw ? std::optional<double>(RoundLikePython(*bw * (1 + ratio), 5)) : std::nullopt};
  }
}

std::string EnhancedHistoryCsv(const std::vector<TrialOutcome>& history,
                               const TunerConfig& config) {
  if (!config.conversion) return "";
  std::vector<const TrialOutcome*> rows;
  for (const TrialOutcome& h : history) {
    if (!h.pruned && h.error.empty() && !h.oom && h.metric && !h.cfg.sharding_overlap) {
      rows.push_back(&h);
    }
  }
  // The first comm_bw's unified value (recorder.py's additional_metric_key), highest first.
  const auto key = [](const TrialOutcome* h) {
    return h->converted.size() > 2 && h->converted[2].second ? *h->converted[2].second : -HUGE_VAL;
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const TrialOutcome* a, const TrialOutcome* b) { return key(a) > key(b); });
  std::string out = CsvHeader(config);
  for (const TrialOutcome* h : rows) out += CsvRow(*h, config);
  return out;
}

namespace {

// A number of the history as resume reads it: `nan` or `inf` (a hand-edited file, or a stranger's)
// would rank an out-of-memory layout the best; such a row is not history (the trial runs again).
double FiniteNumber(const std::string& text) {
  const double value = std::stod(text);
  if (!std::isfinite(value)) throw std::invalid_argument("not a finite number: " + text);
  return value;
}

}  // namespace

std::vector<TrialOutcome> ParseHistoryCsv(const std::string& text, const TunerConfig& config) {
  std::vector<TrialOutcome> out;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return out;
  const std::vector<std::string> header = SplitAndStrip(line, ',');
  // The custom dimensions' columns, then refined_recompute's, follow recompute_granularity.
  const size_t custom = config.custom_dims.size();
  const size_t n = custom + config.refined_recompute.size();
  // dp_estimation's columns after global_batch_size, the conversion's after the metric.
  const std::vector<std::string> estimation = EstimationColumns(config);
  const size_t est = estimation.size();
  const std::vector<std::string> conversion = ConversionColumns(config);
  const size_t conv = conversion.size();
  if (header.size() != 16 + n + est + conv || header[13 + n + est] != config.metric_name) {
    return out;
  }
  for (size_t k = 0; k < conv; ++k) {
    if (header[14 + n + est + k] != conversion[k]) return out;
  }
  for (size_t k = 0; k < est; ++k) {
    if (header[12 + n + k] != estimation[k]) return out;
  }
  for (size_t k = 0; k < n; ++k) {
    const std::string& name =
        k < custom ? config.custom_dims[k].key : config.refined_recompute[k - custom];
    if (header[10 + k] != name) return out;
  }
  while (std::getline(in, line)) {
    // error_info is the last column and may hold commas: split the others only.
    std::vector<std::string> f;
    size_t at = 0;
    for (size_t i = 0; i < 15 + n + est + conv && at != std::string::npos; ++i) {
      const size_t comma = line.find(',', at);
      f.push_back(line.substr(at, comma == std::string::npos ? comma : comma - at));
      at = comma == std::string::npos ? comma : comma + 1;
    }
    if (f.size() != 15 + n + est + conv || at == std::string::npos) continue;
    try {
      TrialOutcome o;
      o.job_id = std::stoi(f[0]);
      TrialConfig& c = o.cfg;
      c.mp = std::stol(f[1]);
      c.sharding_degree = std::stol(f[2]);
      c.pp = std::stol(f[3]);
      c.dp = std::stol(f[4]);
      c.sharding_stage = std::stol(f[5]);
      c.mbs = std::stol(f[6]);
      c.vpp = std::stol(f[7]);
      if (!f[8].empty()) c.use_recompute = f[8] == "True";
      if (!f[9].empty()) c.recompute_granularity = f[9];
      bool known = true;  // A value no longer in the file's list: a row of another search.
      for (size_t k = custom; k < n; ++k) {
        c.refined.emplace_back(config.refined_recompute[k - custom], std::stol(f[10 + k]));
      }
      for (size_t k = 0; k < custom; ++k) {
        const TunerConfig::CustomDim& dim = config.custom_dims[k];
        const auto it = std::find_if(dim.values.begin(), dim.values.end(),
                                     [&](const std::string& v) { return PyStr(v) == f[10 + k]; });
        if (it == dim.values.end()) {
          known = false;
          break;
        }
        c.custom.emplace_back(dim.key, *it);
      }
      if (!known) continue;
      c.acc_steps = std::stol(f[10 + n]);
      c.global_batch_size = std::stol(f[11 + n]);
      if (est) {
        c.estimated_dp = f[12 + n].empty() ? 0 : std::stol(f[12 + n]);
        c.trial_gpus = std::stol(f[13 + n]);
        c.trial_nodes = std::stol(f[14 + n]);
        if (est == 4 && !f[15 + n].empty()) c.sharding_overlap = f[15 + n] == "True";
      }
      o.exec_time = FiniteNumber(f[12 + n + est]);
      if (!f[13 + n + est].empty()) o.metric = FiniteNumber(f[13 + n + est]);
      for (size_t k = 0; k < conv; ++k) {
        const std::string& v = f[14 + n + est + k];
        o.converted.emplace_back(conversion[k],
                                 v.empty() ? std::nullopt : std::optional<double>(FiniteNumber(v)));
      }
      const std::string& memory = f[14 + n + est + conv];
      o.oom = memory == "OOM";
      if (!o.oom && !memory.empty()) o.memory_mib = FiniteNumber(memory);
      std::string error = line.substr(at);
      if (error.starts_with("['") && error.ends_with("']"))
        error = error.substr(2, error.size() - 4);
      o.error = error;
      out.push_back(std::move(o));
    } catch (...) {
    }
  }
  return out;
}

void SettleGlobalBatchSize(TunerConfig& c, long gbs) {
  c.global_batch_size = gbs;
  Json spec = Json::object();
  if (!c.mbs_spec.empty()) spec["micro_batch_size"] = Json::parse(c.mbs_spec);
  c.mbs = Filter(spec, "micro_batch_size", Divisors(gbs, c.performance_first), gbs);
}

std::vector<std::pair<TrialConfig, std::optional<std::string>>> GbsSearchSpace(
    const TunerConfig& config) {
  // utils.py gbs_dp_mp_pp_candidates: a data-parallel degree near the cube root of the devices,
  // then mp near the square root of the rest, pp what remains.
  const long n = config.num_gpus;
  long dp = std::max(1L, std::lround(std::cbrt(static_cast<double>(n))));
  while (n % dp) --dp;
  const long rest = n / dp;
  long mp = std::max(1L, std::lround(std::sqrt(static_cast<double>(rest))));
  while (rest % mp) --mp;
  const long pp = rest / mp;
  // gbs_default_candidates: dp becomes the sharding degree (stage 1), no recompute, mbs 2^0 ..
  // 2^9, the global batch pp x sharding x mbs (so acc_steps is pp, the least the static rule
  // keeps; gbs_search_all's pp x dp x mbs, dp being 1, is below it for every layout).
  TunerConfig rules = config;
  rules.mp = {mp};  // Paddle prunes against the stage's own candidates.
  rules.refined_recompute.clear();
  rules.custom_dims.clear();
  std::vector<std::pair<TrialConfig, std::optional<std::string>>> all;
  std::vector<TrialConfig> kept;
  for (long mbs = 1; mbs <= 512; mbs *= 2) {
    TrialConfig c;
    c.dp = 1;
    c.mp = mp;
    c.pp = pp;
    c.sharding_degree = dp;
    c.sharding_stage = 1;
    c.mbs = mbs;
    c.vpp = 1;
    c.use_recompute = false;
    c.global_batch_size = pp * dp * mbs;
    c.acc_steps = pp;
    const std::optional<std::string> why = StaticPrune(c, rules, kept, nullptr);
    if (!why) kept.push_back(c);
    all.emplace_back(c, why);
  }
  return all;
}

std::string GbsTrialDirName(int job_id, const TrialConfig& c) {
  return fmt::format(
      "Job{}_GBSSearch/GBS{}_DP{}_MP{}_PP{}_Sharding_degree_{}_stage_{}_MBS{}_Recompute_{}_"
      "granularity_{}",
      job_id, c.global_batch_size, c.dp, c.mp, c.pp, c.sharding_degree, c.sharding_stage, c.mbs,
      PyBool(c.use_recompute), c.recompute_granularity.value_or("None"));
}

std::string TrialDirName(int job_id, const TrialConfig& c) {
  std::string custom;
  if (c.sharding_overlap) custom += fmt::format("_Overlap_{}", PyBool(c.sharding_overlap));
  for (const auto& [op, value] : c.refined) custom += fmt::format("_{}{}", CamelKey(op), value);
  for (const auto& [key, value] : c.custom)
    custom += fmt::format("_{}{}", CamelKey(key), PyStr(value));
  // One path component whatever the values say: a custom_search_dim value "/../.." put the
  // trial's logs two directories up (hostile review #38 item 6). Paddle joins it as it is.
  std::replace(custom.begin(), custom.end(), '/', '_');
  std::replace(custom.begin(), custom.end(), '\0', '_');
  return fmt::format(
             "Job{}_GBS{}_DP{}_MP{}_PP{}_VPP{}_Sharding{}_Stage{}_MBS{}_Recompute_{}_Granularity_{}"
             "_"
             "AccStep{}",
             job_id, c.global_batch_size, c.dp, c.mp, c.pp, c.vpp, c.sharding_degree,
             c.sharding_stage, c.mbs, PyBool(c.use_recompute),
             c.recompute_granularity.value_or("None"), c.acc_steps) +
         custom;
}

namespace {

// utils.py gen_sharding_overlap_args_of_grid_search (grid) and gen_sharding_overlap_args
// (dp_estimation, its widened replicas only): the layout's shape names its entry (sharding with
// mp, with pp, with both, or no_overlap under grid); flags and -o entries go as they are, file
// keys as edits. Under dp_estimation the run with the overlap gets the entry and the one
// without a YAML entry's second value and nothing else (Paddle gives both the same flags and
// JSON value, so that its comparison compares a run with itself).
void AppendShardingOverlap(const TrialConfig& c, const TunerConfig& config,
                           std::vector<std::string>& args, std::vector<FileEdit>& edits) {
  const bool estimation = config.estimated_num_gpus.has_value();
  if (config.sharding_overlap.empty() || (estimation && !c.sharding_overlap)) return;
  const char* shape = "no_overlap";  // Not an entry under dp_estimation: nothing then.
  if (c.sharding_degree > 1 && (c.mp > 1 || c.pp > 1)) {
    shape = c.mp > 1 && c.pp > 1 ? "sharding_mp_pp" : c.mp > 1 ? "sharding_mp" : "sharding_pp";
  }
  const auto it = config.sharding_overlap.find(shape);
  if (it == config.sharding_overlap.end()) return;
  const std::vector<std::string>& parts = it->second;
  const std::string first = PyStr(parts[0]);
  const bool with = !estimation || *c.sharding_overlap;
  if (first.find(".yaml") != std::string::npos) {
    if (estimation) {
      edits.push_back({first, PyStr(parts[1]), parts[with ? 2 : 3]});
    } else {
      for (size_t k = 1; k + 1 < parts.size(); k += 2) {
        edits.push_back({first, PyStr(parts[k]), parts[k + 1]});
      }
    }
  } else if (!with) {
    return;
  } else if (first.find(".json") != std::string::npos) {
    edits.push_back({first, PyStr(parts[1]), parts[2]});
  } else {
    for (const std::string& part : parts) args.push_back(PyStr(part));
  }
}

}  // namespace
std::vector<std::string> TrialArguments(const std::vector<std::string>& raw, const TrialConfig& c,
                                        const TunerConfig& config, bool best_run,
                                        std::vector<FileEdit>& edits) {
  std::vector<std::string> args = raw;
  const auto apply = [&](const std::string& key, const std::string& text, const std::string& json) {
    const auto it = config.run_cmd.find(key);
    if (it == config.run_cmd.end()) return;
    const RunCmdEntry& e = it->second;
    switch (e.kind) {
      case RunCmdEntry::Kind::kFlag:
        args.push_back(e.first);
        args.push_back(e.second + text);
        break;
      case RunCmdEntry::Kind::kOption:
        args.push_back(e.first);
        args.push_back(e.second + "=" + text);
        break;
      case RunCmdEntry::Kind::kFile:
        edits.push_back({e.first, e.second, e.third ? Json(*e.third + text).dump() : json});
        break;
    }
  };
  const auto number = [&](const std::string& key, long v) {
    apply(key, std::to_string(v), std::to_string(v));
  };
  number("dp_degree", c.dp);
  number("mp_degree", c.mp);
  number("pp_degree", c.pp);
  number("vpp_degree", c.vpp);
  number("micro_batch_size", c.mbs);
  number("sharding_degree", c.sharding_degree);
  number("sharding_stage", c.sharding_stage);
  apply("use_recompute", PyBool(c.use_recompute),
        c.use_recompute ? (*c.use_recompute ? "true" : "false") : "null");
  apply("recompute_granularity", c.recompute_granularity.value_or("None"),
        c.recompute_granularity ? Json(*c.recompute_granularity).dump() : "null");
  number("local_batch_size", c.global_batch_size / c.sharding_degree / c.dp);
  number("gradient_accumulation_steps", c.acc_steps);
  number("global_batch_size", c.global_batch_size);
  number("sequence_parallel", c.mp > 1 ? 1 : 0);
  if (!c.refined.empty()) {
    nlohmann::ordered_json ops = nlohmann::ordered_json::object();  // In the file's order.
    for (const auto& [op, value] : c.refined) ops[op] = value;
    apply("refined_recompute", ops.dump(), ops.dump());
  }
  for (const auto& [key, value] : c.custom) apply(key, PyStr(value), value);
  for (const auto& [name, e] : best_run ? config.run_best_stage : config.search_stage) {
    if (e.kind == RunCmdEntry::Kind::kFile) {
      const std::string literal = e.third.value_or("null");
      // A literal that is JSON (0, true) stays as it is; anything else becomes a string.
      std::string value;
      try {
        value = Json::parse(literal).dump();
      } catch (...) {
        value = Json(literal).dump();
      }
      edits.push_back({e.first, e.second, value});
    } else {
      args.push_back(e.first);
      args.push_back(e.second);
    }
  }
  // Last, as Paddle's gen_new_args ends: the sharding overlap of the layout's shape.
  AppendShardingOverlap(c, config, args, edits);
  return args;
}

}  // namespace pdlaunch
