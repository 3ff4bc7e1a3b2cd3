#pragma once

// Jobs inside a Slurm step (docs/slurm.md): Slurm's hostlist syntax and the step's variables,
// as pure functions. A step of N nodes becomes the deterministic --ips job of those nodes.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/plan/cloud.h"

namespace pdlaunch {

/// Expands a Slurm hostlist in Slurm's order: top-level commas separate entries; an entry is
/// text and bracket groups; a group holds comma-separated numbers and ranges "a-b", zero padding
/// kept ("gpu[008-011]"); several groups expand as a cartesian product, the leftmost varying
/// slowest ("rack[1-2]-n[01-02]" → rack1-n01, rack1-n02, rack2-n01, rack2-n02). Throws UsageError
/// naming `text` and the fault (unbalanced bracket, empty entry or range, a > b, a non-number).
std::vector<std::string> ExpandHostlist(std::string_view text);

/// This launcher's place in a Slurm step.
struct SlurmStep {
  std::vector<std::string> nodes;  ///< The step's node names, in Slurm's order.
  int node_rank = 0;               ///< SLURM_NODEID.
  std::string source;              ///< Which variable gave the node list.
};

/// The step this launcher runs in, from `env`: inside an srun step (SLURM_STEP_ID numeric and
/// SLURM_STEP_NODELIST or SLURM_JOB_NODELIST set); nullopt otherwise (a batch script outside a
/// step is not a multi-node job). Throws LaunchError when the step runs more than one task on a
/// node (SLURM_STEP_TASKS_PER_NODE; the message says to use --ntasks-per-node=1), when
/// SLURM_NODEID is missing or out of range, or when the node count disagrees with
/// SLURM_STEP_NUM_NODES / SLURM_NNODES; UsageError for a malformed hostlist.
std::optional<SlurmStep> DetectSlurmStep(const EnvMap& env);

}  // namespace pdlaunch
