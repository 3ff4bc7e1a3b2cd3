// The --auto_tuner_json file read as Paddle's auto_tuner/ reads it (ParseTunerConfig).

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "pdlaunch/base/endpoint.h"  // SplitAndStrip
#include "pdlaunch/base/errors.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "tuner/common.h"

namespace pdlaunch {

using tuner::Bad;
using tuner::Divisors;
using tuner::Filter;
using tuner::Json;
using tuner::kMaxDegree;
using tuner::LeftOut;
using tuner::PositiveInt;
using tuner::PyStr;

namespace {

namespace fs = std::filesystem;

// model_cfg.<key> as a positive integer; nullopt when absent.
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

}  // namespace

namespace {

// search_algo: its name and its keys (sharding_overlap, configs_csv, dp_estimation's), then
// configs_csv at the top level and schedule_mode.
void ParseSearch(const Json& root, TunerConfig& c) {
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
    if (c.search_algo == "dp_estimation") ParseDpEstimation(algo, c.gpus_per_node, c);
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
}

// model_cfg: the model's sizes, and the global batch size ("auto": the GBS pre-search).
void ParseModel(const Json& root, TunerConfig& c) {
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
}

// The degrees' candidates in utils.py dist_degree's orders: dp, mp, pp, sharding, vpp, the
// micro-batch size, the sharding stage.
void ParseDegrees(const Json& root, TunerConfig& c) {
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
  std::vector<long> mp = Divisors(enable_mp_prune ? c.gpus_per_node : c.num_gpus, !perf);
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
  if (c.nodes > 1 && enable_pp_prune) {
    for (long p = c.nodes + 1; p >= 1; --p) pp.push_back(p);
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
}

// use_recompute and recompute_granularity.
void ParseRecompute(const Json& root, TunerConfig& c) {
  const bool perf = c.performance_first;
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
}

// metric_cfg: the metric's name and direction.
void ParseMetric(const Json& root, TunerConfig& c) {
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
}

// custom_search_dim (in the file's own key order) and refined_recompute.
void ParseCustomDimensions(const Json& root, const std::string& text, TunerConfig& c) {
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
}

// run_cmd: how each dimension reaches the script, checked against the dimensions searched.
void ParseRunCommand(const Json& root, TunerConfig& c) {
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
}

// The limits (tasks, time, memory), the memory estimation tool and the other switches.
void ParseLimits(const Json& root, TunerConfig& c) {
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
}

// Where the history, its resume file and best_cfg go: beside the tuner file unless given.
void ParsePaths(const Json& root, const std::string& json_path, TunerConfig& c) {
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
  ParseSearch(root, c);
  // dp_estimation: the candidates are those of the estimated cluster (utils.py
  // default_candidates), its nodes estimated_num_gpus / gpus_per_node.
  c.given_nodes = nodes;
  if (c.estimated_num_gpus) {
    c.num_gpus = *c.estimated_num_gpus;
    c.nodes = c.num_gpus / gpus_per_node;
  }
  ParseModel(root, c);
  ParseDegrees(root, c);
  ParseRecompute(root, c);
  ParseMetric(root, c);
  ParseCustomDimensions(root, text, c);
  ParseRunCommand(root, c);
  ParseLimits(root, c);
  ParsePaths(root, json_path, c);
  return c;
}

}  // namespace pdlaunch
