#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/plan/topology.h"
#include "pdlaunch/plan/trainer_env.h"

namespace pdlaunch {

/// What --dry_run prints (docs/cli.md, "Dry run"): the decisions a real run would make, as JSON.
struct DryRunPlan {
  std::string mode;         ///< "collective", "ps", "rpc".
  std::string launch_path;  ///< "local", "ips", "slurm", "cloud", "master", "elastic".
  std::string device_mode;  ///< "cpu", "gpu"; empty when not resolved.
  /// The collective cluster, when this node can know it without talking to the others (--ips,
  /// Slurm, PaddleCloud, one node); nullopt for PS jobs (`ps`) and for --master and elastic
  /// jobs, whose topology is decided at the rendezvous.
  std::optional<Cluster> cluster;
  std::vector<std::string> command;  ///< argv of every local process, before its own arguments.
  /// A parameter-server job's lists as every node computes them; nullopt in collective mode.
  struct PsJob {
    std::vector<std::string> servers;  ///< ip:port, in PADDLE_PSERVERS_IP_PORT_LIST order.
    std::vector<std::string> workers;  ///< ip:port, in PADDLE_TRAINER_ENDPOINTS order.
    std::vector<std::vector<std::string>> heter_stages;  ///< Stage 2, 3, ... (ps-heter only).
    std::string gloo_http;                               ///< PADDLE_GLOO_HTTP_ENDPOINT.
    std::vector<std::string> hosts;                      ///< The job's hosts, first seen first.
    std::string this_host;
  };
  std::optional<PsJob> ps;
  struct Process {
    std::string role = "trainer";  ///< "trainer", or "server", "worker", "heter_worker".
    int rank = 0;                  ///< Global rank; a PS process's index in its role's list.
    int local_rank = 0;            ///< Position on this node (among its role in PS jobs).
    std::string log;               ///< Its log file's name in the log directory.
    EnvList env;  ///< The variables the launcher sets (on top of the launcher's environment).
  };
  std::vector<Process> processes;
  std::vector<std::string> notes;  ///< What a real run would decide later, and why; its INFO lines.
  std::vector<std::string> warnings;  ///< The real run's warnings, in the same words.
};

/// The plan as JSON text (keys in a fixed order, a trailing newline). Pure.
std::string FormatDryRun(const DryRunPlan& plan);

}  // namespace pdlaunch
