#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/base/exit_status.h"

namespace pdlaunch {

/// One process of the run, as --report records it (docs/report.md).
struct ProcessRecord {
  std::string role;    ///< "trainer", "server", "worker", "heter_worker".
  int rank = 0;        ///< Global rank within its role.
  int local_rank = 0;  ///< Index among this node's processes of its run.
  pid_t pid = 0;
  std::string endpoint;  ///< PADDLE_CURRENT_ENDPOINT; empty when it has none.
  std::string devices;   ///< FLAGS_selected_gpus (or _xpus); empty on CPU.
  std::string log_path;
  double start_time = 0;  ///< Seconds since the epoch.
  double end_time = 0;    ///< 0 while running.
  std::optional<ExitStatus> status;
  /// The job it was part of, where a run holds several (an auto-tuner search: the trial's job
  /// id, `auto_tuner_3`, or `best_cfg`); empty otherwise, and then not in the JSON.
  std::string job_id{};
};

/// What --report writes when the launcher exits (docs/report.md, docs/report.schema.json).
struct RunReport {
  std::string version;
  std::vector<std::string> command_line;  ///< argv, the program included.
  std::string host;                       ///< gethostname().
  std::string mode;                       ///< "collective", "ps", "rpc"; "" before decided.
  std::string launch_path;                ///< "local", "ips", "master", "elastic", "slurm", ...
  int node_rank = -1;                     ///< -1: not known (a PS node, or before the cluster).
  int nodes = 0;                          ///< 0: not known.
  double start_time = 0;
  double end_time = 0;
  int exit_code = 0;
  std::string reason;         ///< "success", "process failure", "signal SIGINT", or the error.
  std::optional<int> signal;  ///< The termination signal the launcher received.
  /// Set when another node's launcher was stopped by a signal during this node's job (its failure
  /// record's cause, "the launcher on node X received SIGINT"); not in the JSON.
  std::optional<std::string> stopped_node;
  std::optional<size_t> root_cause;      ///< Index into `processes` of the first failure.
  std::vector<ProcessRecord> processes;  ///< Every process of every run (elastic restarts add).
  /// What <job_id>.gpu.log measured, per device index; empty when it did not run.
  struct DeviceUsageRecord {
    std::string index;
    double peak_memory_used_mib = 0;
    double mean_utilization_percent = 0;
    int samples = 0;
  };
  std::vector<DeviceUsageRecord> device_usage;
};

/// The report as JSON text (one object, keys in a fixed order, a trailing newline). Pure.
std::string FormatRunReport(const RunReport& report);

/// "2026-11-24T13:05:05.123Z" for seconds since the epoch. Pure.
std::string IsoTime(double epoch_seconds);

}  // namespace pdlaunch
