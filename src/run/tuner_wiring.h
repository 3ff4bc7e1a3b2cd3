#pragma once
// How the nodes of an auto tuner's search agree on each trial (docs/auto-tuner.md, "Several
// nodes"): through the job's HTTP master or through etcd; no exchange for a search of one node.
// Internal to run/.

#include "pdlaunch/options/options.h"
#include "pdlaunch/tuner/driver.h"
#include "run/job_decision.h"

namespace pdlaunch {

struct TunerWiring {
  TunerExchange exchange;  ///< Empty for a search of one node.
  /// A multi-node --ips search: each trial is an --ips job of the list, and the --master is the
  /// search's own, not the trial's.
  bool ips_search = false;
};

/// The exchange of the search `options` asks for. Throws UsageError for a search across nodes
/// with no master to agree through (kTunerNeedsAMaster), or elastic flags that would restart or
/// shrink a trial.
TunerWiring WireTuner(const LaunchOptions& options, const JobDecision& decision, const EnvMap& env);

}  // namespace pdlaunch
