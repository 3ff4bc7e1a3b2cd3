#pragma once

// The auto tuner's driver (docs/auto-tuner.md): trials as ordinary jobs of this launcher, one
// after another, then the best. It runs them through the JobRunner it is given (run/launch.cc's
// RunJob) and agrees with the other nodes through the TunerExchange it is given (the job's
// master or etcd): it knows no launch path.

#include <functional>
#include <string>

#include "pdlaunch/coord/node_exchange.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/process/job_controls.h"

namespace pdlaunch {

/// The usage error of a search across several nodes without an HTTP master.
extern const char* const kTunerNeedsAMaster;

/// The agreement between the nodes of a search across several nodes (ExchangeOverMaster through
/// the job's master): publishes `value` as job `job_id` and returns every node's; `first` is the
/// plan's, before any trial, when the nodes may still be starting; `trial` is the job (a trial,
/// by its job name) that every node is past once this exchange is done, so that what it left in
/// the store can go (empty for the plan's); `wait` (seconds, 0: the exchange's own) is the least
/// it waits for the others, for a node that ran no part of the trial and waits out its run.
/// Called with an empty `job_id` after the best run (a job of all the nodes: every node is past
/// every exchange), it lets the exchange drop what it still holds.
using TunerExchange =
    std::function<ExchangeResult(const std::string& job_id, const std::string& value, bool first,
                                 const std::string& trial, double wait)>;

/// The etcd key name of the search's job `job_name` (auto_tuner_<n>, gbs_tuner_<n>, best_cfg):
/// `<--job_id, else default>:<job_name>` (JobControls::etcd_key_job). No job id holds a ':'
/// (--job_id takes letters, digits, '-', '_' and '.'): a user's job is never a trial's.
std::string TrialKeyJob(const LaunchOptions& options, const std::string& job_name);

/// This node's devices as the job would use them (Paddle: len(--devices), else 8): asked once,
/// after the tuner file's own checks.
using DeviceResolver = std::function<DevicePlan()>;

/// Runs the search of options.auto_tuner_json on this node's devices (`devices`); `run_job` runs
/// one job (a trial, or the best) as `launch` would with those options, under the search's controls
/// (a trial's deadline, its etcd keys, one job of a sequence), and says how it ended; `exchange` is
/// given for a job of several nodes (--nnodes > 1 through an HTTP master or etcd), null otherwise.
/// Returns the launcher's exit code: the best run's, 0 when run_best is false and a best was found,
/// 1 when no trial gave a metric, 130/143 when interrupted (the history is written; the same
/// command resumes). `announce` writes the configuration dump and the lines held until then (once;
/// idempotent): called before a trial's console goes to its directory. Each job's record
/// (RunResult::record) is added to `report` as it ends, its processes marked with its job id;
/// the report's root cause is the best run's.
int RunAutoTuner(const LaunchOptions& options, const DeviceResolver& devices,
                 const JobRunner& run_job, const TunerExchange& exchange,
                 const std::function<void()>& announce, RunReport& report);

/// --dry_run with --auto_tuner_json: the ordered layouts as JSON on stdout, each with the static
/// prune that removed it (or null), and nothing started. Returns 0.
int PrintAutoTunerPlan(const LaunchOptions& options, const DeviceResolver& devices);

}  // namespace pdlaunch
