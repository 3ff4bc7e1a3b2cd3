#pragma once
// What the tuner's unit tests share: a small tuner file, two with the optional dimensions, the
// layouts of a space as lines, and a trial's outcome.
#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/tuner/auto_tuner.h"

namespace pdlaunch::tuner_fixtures {

inline TrialOutcome Ran(const TrialConfig& cfg, int job_id, std::optional<double> metric) {
  TrialOutcome outcome;
  outcome.cfg = cfg;
  outcome.job_id = job_id;
  outcome.metric = metric;
  return outcome;
}

/// The layouts of `config`'s space, one line each (Describe), with the prune of a pruned one
/// after " | " unless `kept_only`.
inline std::vector<std::string> Layouts(const TunerConfig& config, bool kept_only = true) {
  std::vector<std::string> out;
  for (const auto& [cfg, why] : SearchSpace(config)) {
    if (!kept_only || !why) out.push_back(Describe(cfg) + (why ? " | " + *why : ""));
  }
  return out;
}

inline constexpr char kSmall[] = R"({
  "dp_degree": "auto", "mp_degree": "auto", "micro_batch_size": "auto",
  "model_cfg": {"global_batch_size": 4},
  "metric_cfg": {"name": "tokens/s", "OptimizationDirection": "Maximize"},
  "run_cmd": {"dp_degree": ["--dp", ""], "mp_degree": ["-o", "Distributed.mp_degree"],
              "micro_batch_size": ["p.json", "train.mbs"]}
})";

// custom_search_dim (utils.py search_all, gen_new_args, the log_dir of tuner.py, prune.py
// prune_by_custom_search_dim_history): the product of the values in the file's order (not the
// keys' sorted order), innermost; each key reaches the script through run_cmd as a built-in one.
inline constexpr char kCustom[] = R"({
  "dp_degree": "auto", "micro_batch_size": [1, 2],
  "model_cfg": {"global_batch_size": 4},
  "metric_cfg": {"name": "tokens/s", "OptimizationDirection": "Maximize"},
  "custom_search_dim": {"use_flash_attn": {"value": [true, false], "prune": true},
                        "fuse_attention_qkv": {"value": [1, "off"], "prune": false}},
  "run_cmd": {"dp_degree": ["--dp", ""], "use_flash_attn": ["--use_flash_attn", ""],
              "fuse_attention_qkv": ["p.json", "model.fuse", "x"]}
})";

// refined_recompute (utils.py search_all, prune.py prune_by_refined_recompute and its history
// rule): 2 devices, pp 2, 4 layers: each operator from 0 to 4 / 2 = 2, the first operator first,
// then the second with the first at 2: [0,0] [1,0] [2,0] [2,1] [2,2] (Paddle's dedup drops the
// second [2,0]).
inline constexpr char kRefined[] = R"({
  "pp_degree": [2], "use_recompute": [true], "recompute_granularity": ["full"],
  "model_cfg": {"global_batch_size": 4, "num_layers": 4},
  "metric_cfg": {"name": "tokens/s", "OptimizationDirection": "Maximize"},
  "refined_recompute": ["mlp_row_ln", "attn"],
  "run_cmd": {"refined_recompute": ["./p.json", "model.refined_recompute"]}
})";

}  // namespace pdlaunch::tuner_fixtures
