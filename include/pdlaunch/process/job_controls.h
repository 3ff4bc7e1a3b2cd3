#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "pdlaunch/options/options.h"
#include "pdlaunch/process/run_report.h"
#include "pdlaunch/process/supervisor.h"

namespace pdlaunch {

/// A deadline as the supervisor's external events: once armed, `seconds` later the run is
/// stopped as by a stop request (SIGTERM to every group, the usual grace) and "<what> of
/// <seconds> s<note>; stopping it" is logged. Owned by whoever set it; hit() says afterwards
/// whether it ended the run.
class JobDeadline : public ExternalEvents {
 public:
  JobDeadline(double seconds, std::string what, std::string note = "");

  /// Starts the clock (again): called when the job's processes are about to start.
  void Arm();
  bool hit() const { return hit_; }

  int fd() override { return -1; }
  bool OnReadable() override { return false; }
  double tick_seconds() const override;
  bool OnTick() override;

 private:
  std::string what_;
  std::string note_;
  double seconds_;
  std::chrono::steady_clock::time_point end_;
  bool hit_ = false;
};

/// What a caller that runs one job after another (the auto tuner: its trials, then the best)
/// sets for each beyond the job's options. A user's own job has none of them. The run paths
/// read these; none of them knows who set them.
struct JobControls {
  /// Not owned; null: none. Armed when the job's processes start (max_time_per_task).
  JobDeadline* deadline = nullptr;
  /// One of a sequence of jobs on one master address: a master still serving the previous job
  /// is waited for, not an error.
  bool one_of_a_sequence = false;
  /// The name under which a job through etcd keeps its keys (/paddle/<name>/) in place of its
  /// job id (the tuner's `<--job_id>:auto_tuner_<n>`: two searches on one etcd never share a
  /// trial's keys, and no user's job is a trial, a job id holding no ':').
  std::optional<std::string> etcd_key_job;
};

/// How a job ended, for a caller that runs several (torchrun's RunResult).
struct RunResult {
  int exit_code = 0;          ///< The launcher's exit code for this job alone.
  bool deadline_hit = false;  ///< JobControls::deadline stopped it.
  /// What this job's runs recorded (every process and its exit, the root cause, a signal the
  /// launcher received, another node's stop, this node's rank, the device log's figures); the
  /// fields of the launcher's whole run (version, command line, times, outcome) are left empty.
  RunReport record;
};

/// Runs one job as `launch` would with these options, under these controls.
using JobRunner = std::function<RunResult(LaunchOptions, const JobControls&)>;

}  // namespace pdlaunch
