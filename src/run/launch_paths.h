#pragma once

// The launch paths' entries (internal to run/): a node of a master's rendezvous
// (launch_master.cc), the auto tuner's exchanges through a master or etcd (etcd_exchange.cc), a
// parameter-server job (launch_ps.cc) and an elastic job (launch_elastic.cc).

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "pdlaunch/coord/elastic.h"
#include "pdlaunch/coord/job_token.h"
#include "pdlaunch/coord/kv_store.h"
#include "pdlaunch/coord/node_exchange.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/master_config.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/training_command.h"
#include "pdlaunch/process/job_controls.h"
#include "pdlaunch/process/run_report.h"

namespace pdlaunch::internal {

/// Runs this node of a master-rendezvous job (launch_master.cc, docs/master.md); returns the
/// launcher's exit code. What it records for --report goes into `record`.
int RunMaster(const LaunchOptions& options, MasterSettings settings, const TrainingCommand& command,
              bool ps, bool rpc, const JobControls& controls, RunReport& record,
              const std::optional<JobToken>& token);

/// A job without processes through the master of `settings` (job id `job_id`): this node
/// publishes `value` and gets every node's, within `timeout` seconds (the auto tuner's
/// agreement between nodes, docs/auto-tuner.md). Its rendezvous's own progress lines are
/// DEBUG (a job's are INFO); its warnings and errors show.
ExchangeResult ExchangeOverMaster(const LaunchOptions& options, MasterSettings settings,
                                  const std::string& job_id, const std::string& value,
                                  double timeout, const std::optional<JobToken>& token);

/// The auto tuner's agreement between nodes through etcd (etcd_exchange.cc, --master etcd://):
/// made once per search, for `nodes` nodes of job `scope`. Each call publishes `value` in
/// exchange `name` and gets every node's, in one order on every node, within `timeout` seconds
/// (code 1, logged, past it, or once etcd was unreachable for `unavailable_limit` seconds in a
/// row; 128 + n for a signal meanwhile); the first call's nodes make the session of the later
/// ones. A value over its bound throws LaunchError. Called with an empty `name`: every node is
/// past the last exchange (a job of them all ran since, the best's), so its key goes now rather
/// than with its lease.
using StoreExchangeCall = std::function<ExchangeResult(const std::string& name,
                                                       const std::string& value, double timeout)>;
StoreExchangeCall MakeStoreExchange(std::shared_ptr<KvStore> store, std::string scope, int nodes,
                                    double unavailable_limit,
                                    std::optional<JobToken> token = std::nullopt);

/// Runs a parameter-server job (launch_ps.cc); returns the launcher's exit code. `announce`
/// (the configuration dump) is called once the plan has passed its checks. What it records for
/// --report goes into `record`.
int RunPs(const LaunchOptions& options, JobMode mode, const TrainingCommand& command,
          const std::function<void()>& announce, RunReport& record);

/// What a parameter-server run decides on this node before it starts anything: the plan, with
/// PADDLE_ROLE added for today's interface, and the free ports it holds (none with fixed ports).
struct PsDecision {
  PsPlan plan;
  std::unique_ptr<PortReservation> reservation;
  int accelerators = 0;  ///< GPUs found for the mode line (0: CPU).
};

/// The decisions of RunPs (devices, hosts, this node, ports, PlanPs), shared with --dry_run;
/// `gloo_dir` and `log_dir` are the paths the processes are told. Throws as PlanPs.
PsDecision DecidePs(const LaunchOptions& options, JobMode mode, const std::string& gloo_dir,
                    const std::string& log_dir);

/// Fixed ports are checked before anything starts (reserved free ports need no check): a port in
/// use is a LaunchError naming it.
void CheckFixedPortsFree(const PsPlan& plan);

/// Runs this node of an elastic collective job (launch_elastic.cc, docs/elastic.md); returns the
/// launcher's exit code: 0 completed, 101 or 3 failed for good, 128+signal. Every generation's
/// processes are recorded in `record` (--report).
int RunElastic(const LaunchOptions& options, const ElasticConfig& config,
               const TrainingCommand& command, const JobControls& controls, RunReport& record);

}  // namespace pdlaunch::internal
