#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/coord/kv_store.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/cloud.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/topology.h"
#include "pdlaunch/plan/trainer_env.h"

namespace pdlaunch {

/// Paddle's exit code asking an outer supervisor to restart the pod (docs/elastic.md).
inline constexpr int kExitElasticRestart = 101;
/// Exit code of an elastic job that failed for good in elastic level (docs/elastic.md).
inline constexpr int kExitElasticError = 3;

/// Elastic settings after flags and their environment twins are merged (docs/elastic.md,
/// "Options and environment"). Pure data.
struct ElasticConfig {
  std::string server;  ///< etcd "host:port".
  std::string job_id;
  int np_min = 0;  ///< --np N → N..N; --np N:M → N..M; --scale adds to both.
  int np_max = 0;
  bool force = false;    ///< --force / PADDLE_ELASTIC_FORCE: a stored np that differs is replaced.
  int ttl_seconds = 60;  ///< PADDLE_ELASTIC_TTL: lease of a node key; refreshed every TTL/3.
  int timeout_seconds = 120;  ///< PADDLE_ELASTIC_TIMEOUT: wait for etcd, and for np in N:M mode.
  int max_restart = 3;  ///< --max_restart / PADDLE_MAX_RESTART: restarts after failures, job-wide.
  std::optional<std::string> pre_hook;  ///< --elastic_pre_hook: shell command before every launch.
  /// --elastic_level / PADDLE_ELASTIC_LEVEL, Paddle's meaning (docs/elastic.md, "Elastic
  /// levels"): -1 a failure or a departure anywhere ends the job on every node; 0 a node whose
  /// rank fails leaves, and the others hold and form the next world without it; 1 every node
  /// stops and the next world forms, rank failures counted against max_restart. Default: -1
  /// through --master etcd:// (Paddle's), 1 through --elastic_server (pdlaunch's in-place
  /// restarts of the legacy interface).
  int level = 1;

  /// Elastic level (N < M): failures end with exit 3. Fault-tolerance level (N == M): exit 101.
  bool elastic_level() const { return np_max > np_min; }
  bool operator==(const ElasticConfig&) const = default;
};

/// Whether elastic mode is on and with what. Sources, flag first then env: server
/// --elastic_server / PADDLE_ELASTIC_SERVER / PADDLE_ELASTIC_ETCD_SERVICE_HOST +
/// PADDLE_ELASTIC_ETCD_SERVICE_PORT; job --job_id / PADDLE_ELASTIC_JOB_ID; np --np /
/// PADDLE_ELASTIC_NP; scale --scale (when given) / PADDLE_ELASTIC_SCALE; force --force / env
/// PADDLE_ELASTIC_FORCE ("1", "true", "True", "yes"); max_restart --max_restart /
/// PADDLE_MAX_RESTART. Results:
/// * none of server, job, np from flags or env → nullopt, `info` empty (not elastic);
/// * all three from anywhere → the config;
/// * some from flags, not all → UsageError "elastic mode needs --elastic_server, --job_id and
///   --np: --job_id is missing" (the first missing one, in that order);
/// * only env, not all → nullopt with `info` = Paddle's line
///   "Elastic is not enabled with server {s} name {n} and np {np}" (None for absent values).
/// Bad values throw UsageError naming the source and token: server without a port
/// ("--elastic_server: '127.0.0.1' is not host:port"), np not "N" or "N:M" with 1 <= N <= M
/// ("--np: '2:1' is not N or N:M with 1 <= N <= M"), non-integer or non-positive TTL/timeout,
/// negative max_restart, N + scale < 1.
/// Details: an environment variable set to "" counts as absent (Paddle tests os.getenv()'s
/// truth); PADDLE_ELASTIC_NP reading as the integer 0 does not enable (Paddle 2.2's int env,
/// non-zero), and the info line then shows "np 0"; the etcd service variables count only as a
/// pair; integers read as Python's int() (whitespace, a leading '+'), also each side of "N:M";
/// --scale counts as given when in `given` or non-zero; --force in `given` beats the variable.
/// Messages: "PADDLE_ELASTIC_SCALE: '-3' makes np -2; np must be at least 1",
/// "PADDLE_ELASTIC_TTL: '0' must be at least 1", "--max_restart: '-1' must be at least 0".
struct ElasticDecision {
  std::optional<ElasticConfig> config;
  std::string info;
};
ElasticDecision ResolveElasticConfig(const LaunchOptions& options, const EnvMap& env);

/// What a node publishes about itself under /paddle/<job>/nodes/<id>: JSON
/// {"host":"10.0.0.1","ports":[6170,6171],"master_port":6172,"pid":123}.
struct NodeRecord {
  std::string host;        ///< Address its ranks are reached at.
  std::vector<int> ports;  ///< One per local rank, in local-rank order.
  int master_port = 0;     ///< MASTER_PORT when this node is node 0.
  int pid = 0;             ///< The launcher's pid (for messages).
  bool operator==(const NodeRecord&) const = default;
};
std::string EncodeNodeRecord(const NodeRecord& record);
/// nullopt for anything that is not such a JSON object (wrong types, missing fields, trailing
/// text): host non-empty, ports in 1..65535, master_port in 0..65535, pid >= 0. Unknown keys are
/// ignored.
std::optional<NodeRecord> DecodeNodeRecord(std::string_view text);

/// The world of one generation, written once by whichever node forms it (compare-and-put on
/// /paddle/<job>/world): JSON {"generation":2,"restarts":1,"members":["id",...],"nodes":[{node
/// record},...]}. Node rank k = members[k]; nodes[k] is its record at formation time.
struct WorldRecord {
  int64_t generation = 0;  ///< 1 for the first world, +1 for every new one.
  int restarts = 0;        ///< Worlds formed after a rank failure, job-wide (--max_restart).
  std::vector<std::string> members;
  std::vector<NodeRecord> nodes;
  bool operator==(const WorldRecord&) const = default;
};
std::string EncodeWorldRecord(const WorldRecord& world);
/// nullopt unless generation >= 1, restarts >= 0, members are distinct non-empty strings and
/// there are as many valid node records as members.
std::optional<WorldRecord> DecodeWorldRecord(std::string_view text);

/// The root cause of a generation's failure, first writer wins (/paddle/<job>/failure/<gen>):
/// JSON {"generation":2,"node":"id","host":"10.0.0.2","rank":3,"exit_code":7} or with
/// "signal":9 instead of "exit_code" for a rank killed by a signal.
struct FailureRecord {
  int64_t generation = 0;
  std::string node;
  std::string host;
  int rank = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool operator==(const FailureRecord&) const = default;
};
/// Writes the fields that are set (a record is meant to have exactly one of exit_code, signal).
std::string EncodeFailureRecord(const FailureRecord& failure);
/// nullopt unless generation >= 1, rank >= 0 and exactly one of exit_code (any int) and signal
/// (>= 1) is present.
std::optional<FailureRecord> DecodeFailureRecord(std::string_view text);
/// One line for every node's console: "rank 3 on node 10.0.0.2 (launcher pid 77) exited with
/// code 7" / "... was killed by signal 9 (SIGKILL)". `pid` 0: the parenthesis is left out.
/// With neither exit_code nor signal the line ends in "failed".
std::string DescribeFailure(const FailureRecord& failure, int pid = 0);

/// The key layout of job `job` (docs/elastic.md). Paddle's keys: status, nodes/, np, endpoints.
struct ElasticKeys {
  explicit ElasticKeys(std::string job);
  std::string status() const;  ///< "/paddle/<job>": "0" running, "1" completed.
  std::string prefix() const;  ///< "/paddle/<job>/": every other key.
  std::string nodes() const;   ///< "/paddle/<job>/nodes/"
  std::string node(const std::string& id) const;
  std::string np() const;         ///< "/paddle/<job>/np": desired np (max), decimal.
  std::string endpoints() const;  ///< "/paddle/<job>/endpoints": "<endpoints>|<hosts>".
  std::string world() const;      ///< "/paddle/<job>/world"
  std::string failure(int64_t generation) const;  ///< "/paddle/<job>/failure/<gen>"
  std::string done(int64_t generation, const std::string& id) const;  ///< ".../done/<gen>/<id>"

  std::string job;
};

/// A registered node, in join order.
struct ElasticNode {
  std::string id;
  NodeRecord record;
  int64_t create_revision = 0;
  bool operator==(const ElasticNode&) const = default;
};

/// Everything the store says about one job, parsed. Malformed values are skipped.
struct JobState {
  std::optional<std::string> status;
  std::optional<int> np;
  std::vector<ElasticNode> nodes;  ///< Sorted by create_revision (join order).
  std::optional<WorldRecord> world;
  int64_t world_mod_revision = 0;                 ///< 0 when there is no world key (for PutIf).
  std::map<int64_t, FailureRecord> failures;      ///< By generation.
  std::map<int64_t, std::set<std::string>> done;  ///< Node ids done, by generation.

  bool HasNode(const std::string& id) const;
};
/// Parses the keys of GetPrefix(keys.status()) — which may include other jobs whose id starts
/// with this one's ("/paddle/job1x/..."): only keys.status() itself and keys under keys.prefix()
/// count. Skipped as malformed: an np that is not a positive decimal; node values that are not
/// NodeRecords (Paddle's plain-IP values included) or ids with '/'; a failure whose record names
/// another generation than its key; done keys without "<gen>/<id>". world_mod_revision is set
/// whenever the world key exists, even when its value is unreadable (PutIf must still match it).
/// Nodes created in the same revision keep key order.
JobState ParseJobState(const ElasticKeys& keys, const std::vector<KeyValue>& kvs);

/// The member order of a new world, or nullopt when `live` (ids in join order) cannot form one:
/// * fewer than np_min live nodes → nullopt;
/// * np_min <= live < np_max and !waited → nullopt (wait for more until the timeout);
/// * otherwise the world has min(live, np_max) members: members of `previous` that are still
///   live keep their position while it is < the new size; free positions are filled by live
///   nodes not in `previous`, in join order; if members remain beyond the new size, the last of
///   them move into the free positions (Paddle's scale-in: docs/elastic.md, "Protocol"), lowest
///   free position first. Those displaced members take free positions before newcomers do (a
///   member keeps its seat in preference to a node that was never in the world). No live node
///   at all → nullopt.
std::optional<std::vector<std::string>> FormWorld(const std::vector<std::string>& previous,
                                                  const std::vector<std::string>& live, int np_min,
                                                  int np_max, bool waited);

/// The collective cluster of `world` seen from node `self` (must be a member): pod k = members[k]
/// at nodes[k].host with trainers on nodes[k].ports[i] for i < devices.devices_per_proc.size(),
/// master = nodes[0].host:nodes[0].master_port. Throws LaunchError when a member has fewer ports
/// than local processes ("node <host> offers 1 ports for 2 processes"), when `self` is not a
/// member ("node <id> is not a member of world <generation>") and when members and nodes differ
/// in number.
Cluster BuildElasticCluster(const WorldRecord& world, const std::string& self,
                            const DevicePlan& devices);

/// Variables elastic ranks get on top of TrainerVariables (docs/elastic.md): PADDLE_TRAINERS (hosts
/// in node order, comma-joined), DISTRIBUTED_TRAINER_ENDPOINTS (every rank's endpoint, as
/// PADDLE_TRAINER_ENDPOINTS), PADDLE_ELASTIC_JOB_ID, PADDLE_ELASTIC_GENERATION, and
/// TORCHELASTIC_RESTART_COUNT (= world.restarts).
EnvList ElasticVariables(const WorldRecord& world, const Cluster& cluster,
                         const std::string& job_id);

/// The value of the /paddle/<job>/endpoints key:
/// "<DISTRIBUTED_TRAINER_ENDPOINTS>|<PADDLE_TRAINERS>".
std::string FormatEndpointsValue(const Cluster& cluster);

}  // namespace pdlaunch
