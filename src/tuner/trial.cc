// A trial's own: its directory name and its script arguments (run_cmd, the sharding overlap).

#include <fmt/format.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <set>

#include "pdlaunch/base/endpoint.h"  // SplitAndStrip
#include "pdlaunch/tuner/auto_tuner.h"
#include "tuner/common.h"

namespace pdlaunch {

using tuner::CamelKey;
using tuner::Json;
using tuner::PyBool;
using tuner::PyStr;

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
