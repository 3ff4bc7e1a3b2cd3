#pragma once
// What a command line asks for, decided before anything is printed or started, and the one way
// to run it (run/launch.cc): Main runs one decision, the auto tuner several (RunJob). Internal
// to run/.

#include <functional>
#include <optional>
#include <string>

#include "pdlaunch/coord/elastic.h"
#include "pdlaunch/coord/job_token.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/master_config.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/slurm.h"
#include "pdlaunch/plan/training_command.h"
#include "pdlaunch/process/job_controls.h"

namespace pdlaunch {

/// What a command line asks for, decided before anything is printed or started: every check
/// that can end in a usage error (exit 2) happens here, before the configuration dump and before
/// any check that gives exit 1 (a missing script must not hide a bad --gpus).
struct JobDecision {
  LaunchOptions options;  ///< With `--master etcd://` mapped to the elastic flags.
  LaunchPath path;
  /// A collective job of the legacy interface over several --ips nodes, which meet at this
  /// master before any rank starts (docs/multi-node.md, "The nodes meet").
  std::optional<MasterSettings> meeting;
  JobMode mode = JobMode::kCollective;
  bool rpc = false;
  /// Today's PS form: counts, not endpoint lists (docs/ps.md, "Today's interface: counts instead
  /// of lists, through the master").
  bool ps_counts = false;
  ElasticDecision elastic;
  std::optional<SlurmStep> slurm;  ///< Inside an srun step of several nodes (docs/slurm.md).
  /// The job token (docs/master.md, "Exposure"), taken out of the environment by Main
  /// (TakeJobToken): the job's master checks it, and each node presents it.
  std::optional<JobToken> token;
};

/// Every usage check of `options` (exit 2) against the environment `env`, and the path, mode
/// and elastic decision; resolves nothing on the network but a Slurm step's node names later.
JobDecision Decide(const LaunchOptions& options, const EnvMap& env);

/// Where the run's topology comes from, for --report and --dry_run.
const char* PathName(const JobDecision& d);

/// A Slurm step of several nodes is the --ips job of its nodes, this node chosen by SLURM_NODEID;
/// the names are resolved once, forward only (docs/slurm.md).
void ApplySlurmStep(LaunchOptions& options, const SlurmStep& step);

/// This node's entry of an --ips job's list: its rank, its address, and whether it hosts the
/// master. `say` logs which entry it is (the legacy job's plan says it again otherwise).
void PlaceThisNode(const LaunchOptions& options, MasterSettings& settings, bool say);

/// Flags that act only in elastic jobs; given to another job they are said to do nothing.
void WarnModeBoundFlags(const LaunchOptions& options);

/// A --master (HTTP) that the job does not use because a multi-node --ips gives the nodes
/// (docs/master.md, "Which path"): said once, by the run and by --dry_run.
std::optional<std::string> UnusedMasterNote(const JobDecision& d);

/// What the run says of its elastic mode, the dry run too: the legacy launcher's note when the
/// environment only half asks for it, and that --ips plays no part in it.
void LogElasticDecision(const JobDecision& decision);

/// The program each rank runs (run_check: Paddle's own distributed check).
TrainingCommand CommandOf(const LaunchOptions& options);

/// --dry_run: what the run would decide, as JSON on stdout; nothing is started or written
/// (run/dry_run.cc).
int RunDryRun(JobDecision decision);

/// Runs `decision` to its end; returns the launcher's exit code. `announce` prints the
/// configuration dump: called once the job's usage checks have passed, before anything starts.
/// What the run records for --report (its processes, node rank, a signal) goes into `record`,
/// as it happens: a run cut short by an exception keeps what it had recorded.
int RunDecided(JobDecision decision, const EnvMap& env, const std::function<void()>& announce,
               const JobControls& controls, RunReport& record);

/// One job as a caller that runs several sees it (the auto tuner): run as `launch` would, under
/// `controls`, and told how it ended, with its record.
RunResult RunJob(JobDecision decision, const EnvMap& env, const std::function<void()>& announce,
                 const JobControls& controls);

}  // namespace pdlaunch
