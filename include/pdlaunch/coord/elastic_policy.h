#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pdlaunch/coord/elastic.h"

namespace pdlaunch {

/// What a node that is not running ranks should do next, decided from the job's keys alone, so
/// that every node reaches the same decision from the same state (docs/elastic.md "Protocol").
struct ElasticStep {
  enum class Kind {
    kWait,      ///< Nothing to do until the job's keys change (or time passes).
    kPropose,   ///< Write `world` with PutIf(world key, state.world_mod_revision).
    kRun,       ///< Run this node's ranks in `world`.
    kComplete,  ///< Every member of the last world finished: the job is done.
    kFail,      ///< The last world failed and the restart budget is spent.
  };
  Kind kind = Kind::kWait;
  WorldRecord world;                     ///< kPropose, kRun.
  std::optional<FailureRecord> failure;  ///< kFail: the root cause, when a rank failed.
  std::string cause;                     ///< kFail: the root cause in words.
  /// kFail: 101 (fault tolerance) or 3 (elastic range) once the restart budget is spent; at
  /// --elastic_level -1, the failed rank's code (128 + signal), or 1 for a node that left.
  int exit_code = 0;
  std::string status;  ///< kWait: one line for the console, e.g. "not ready for np 2 ...".
};

/// The next step of node `self`, which last ran the world of generation `ran_generation` (0:
/// none yet). `waited`: this node has waited PADDLE_ELASTIC_TIMEOUT for the first world (an
/// N:M job then starts with fewer than M nodes). Rules, in order, for the stored world W:
/// * no W, or W is history (none of its members is registered: an earlier run of the job id) →
///   propose generation W+1 (1 without W) of FormWorld({}, live) with 0 restarts, or wait;
/// * W is newer than ran_generation, includes self and is healthy (every member registered, no
///   failure record for it) → run it;
/// * every member of W reported done → complete;
/// * W has a failure record: restarts spent (W.restarts >= max_restart) → fail; else propose
///   W+1 with restarts + 1 once FormWorld(W.members, live, waited = true) allows;
/// * a member of W is gone → propose W+1 (restarts unchanged) when FormWorld allows;
/// * W is healthy and can grow (a registered non-member, fewer than np_max members, nobody done
///   yet) → propose W+1 with the newcomers;
/// * otherwise wait (a spare beyond np_max, or waiting for the other members to finish).
ElasticStep DecideElasticStep(const JobState& state, const std::string& self,
                              int64_t ran_generation, const ElasticConfig& config, bool waited);

/// While this node runs `running`: why its ranks must stop now, or nullopt to keep running. A
/// newer world exists; a failure record for `running` exists (the line names the root cause);
/// a member's key is gone ("node 10.0.0.2 left the job"); or, in an elastic (N:M) job, a node
/// joined while `running` has fewer than np_max members and nobody is done.
std::optional<std::string> ReasonToStop(const JobState& state, const WorldRecord& running,
                                        const ElasticConfig& config);

/// "[10.0.0.1, 10.0.0.2]": the hosts of registered nodes in join order (console lines).
std::string FormatHosts(const JobState& state);

}  // namespace pdlaunch
