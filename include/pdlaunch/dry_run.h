#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/topology.h"
#include "pdlaunch/trainer_env.h"

namespace pdlaunch {

/// What --dry_run prints (docs/cli.md, "Dry run"): the decisions a real run would make, as JSON.
struct DryRunPlan {
  std::string mode;         ///< "collective", "ps", "rpc".
  std::string launch_path;  ///< "local", "ips", "slurm", "cloud", "master", "elastic".
  std::string device_mode;  ///< "cpu", "gpu"; empty when not resolved.
  /// The cluster, when this node can know it without talking to the others (--ips, Slurm,
  /// PaddleCloud, one node); nullopt for --master and elastic jobs, whose topology is decided at
  /// the rendezvous.
  std::optional<Cluster> cluster;
  std::vector<std::string> command;  ///< argv of every local process, before its own arguments.
  struct Process {
    int rank = 0;
    int local_rank = 0;
    EnvList env;  ///< The variables the launcher sets (on top of the launcher's environment).
  };
  std::vector<Process> processes;
  std::vector<std::string> notes;  ///< What a real run would decide later, and why.
};

/// The plan as JSON text (keys in a fixed order, a trailing newline). Pure.
std::string FormatDryRun(const DryRunPlan& plan);

}  // namespace pdlaunch
