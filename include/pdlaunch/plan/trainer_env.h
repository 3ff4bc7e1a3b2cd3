#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pdlaunch/plan/topology.h"

namespace pdlaunch {

/// Ordered environment variables (name, value).
using EnvList = std::vector<std::pair<std::string, std::string>>;

/// Job-wide values that are not part of the topology.
struct JobEnv {
  std::string gloo_fs_path;     ///< PADDLE_GLOO_FS_PATH: the launcher's temporary directory.
  std::string with_gloo = "0";  ///< PADDLE_WITH_GLOO: the launcher's value, default "0".
  std::string log_dir;          ///< PADDLE_LOG_DIR: absolute log directory.
};

/// The values every process of a job shares, derived from its Cluster once. The lists are as long
/// as the world: built again for each process, they made the environments of N local processes
/// cost O(N x world) (5 ms of 256 ranks' start-up; docs/performance.md).
struct WorldValues {
  explicit WorldValues(const Cluster& cluster);
  std::string trainer_endpoints;  ///< PADDLE_TRAINER_ENDPOINTS: every endpoint, comma-separated.
  std::string world_device_ids;   ///< PADDLE_WORLD_DEVICE_IDS.
  std::string world_size;         ///< Processes in the job.
  std::string local_size;         ///< Processes on this node.
  std::string nnodes;             ///< Nodes (pods).
  std::string master;             ///< The master endpoint, "ip:port".
};

/// The per-process table of docs/env.md, in its order: PADDLE_TRAINER_ID,
/// PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS, PADDLE_RANK_IN_NODE,
/// PADDLE_LOCAL_DEVICE_IDS, PADDLE_WORLD_DEVICE_IDS, then the family's selected key
/// (FLAGS_selected_gpus, _xpus, _npus, ...; ids non-empty) with a custom device's
/// PADDLE_XCCL_BACKEND, and FLAGS_selected_accelerators (ids non-empty). This is what the
/// "Distributed Envs" table shows.
EnvList TrainerTable(const Cluster& cluster, const Trainer& trainer);
EnvList TrainerTable(const Cluster& cluster, const Trainer& trainer, const WorldValues& world);

/// Every variable pdlaunch sets for `trainer` (docs/env.md): TrainerTable, then the job-wide
/// Paddle ones (PADDLE_WITH_GLOO, PADDLE_GLOO_RENDEZVOUS=3, PADDLE_GLOO_FS_PATH,
/// PADDLE_DISTRI_BACKEND), the newer launcher's (PADDLE_GLOBAL_RANK, PADDLE_LOCAL_RANK,
/// PADDLE_GLOBAL_SIZE, PADDLE_LOCAL_SIZE, PADDLE_NNODES, PADDLE_MASTER, PADDLE_LOG_DIR),
/// PyTorch's (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
/// PYTHONUNBUFFERED=1.
EnvList TrainerVariables(const Cluster& cluster, const Trainer& trainer, const JobEnv& job);
EnvList TrainerVariables(const Cluster& cluster, const Trainer& trainer, const JobEnv& job,
                         const WorldValues& world);

/// What the master path adds to the environment of its ranks beyond the topology.
struct MasterJobEnv {
  std::string pod_name;                     ///< POD_NAME.
  std::string log_dir;                      ///< PADDLE_LOG_DIR: absolute log directory.
  std::optional<std::string> auto_cluster;  ///< PADDLE_AUTO_CLUSTER when --auto_cluster_config.
};

/// The environment of today's launcher for a collective process (docs/master.md, "Rendezvous
/// (Paddle's protocol)"), exactly: PADDLE_MASTER (peer 0's candidate), PADDLE_GLOBAL_SIZE,
/// PADDLE_LOCAL_SIZE, PADDLE_GLOBAL_RANK, PADDLE_LOCAL_RANK, PADDLE_NNODES,
/// PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_RANK_IN_NODE,
/// PADDLE_AUTO_CLUSTER (if set), PADDLE_TRAINER_ENDPOINTS, a custom device's
/// PADDLE_DISTRI_BACKEND=xccl and PADDLE_XCCL_BACKEND, the family's selected key
/// (FLAGS_selected_gpus, _xpus, _npus, ...: the ids, all of them for one process) or
/// PADDLE_DISTRI_BACKEND=gloo (CPU), POD_NAME, PADDLE_LOG_DIR; then PyTorch's RANK, WORLD_SIZE,
/// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (the same master).
EnvList MasterTrainerVariables(const Cluster& cluster, const Trainer& trainer,
                               const MasterJobEnv& job);
EnvList MasterTrainerVariables(const Cluster& cluster, const Trainer& trainer,
                               const MasterJobEnv& job, const WorldValues& world);

/// The environment of today's launcher for an RPC process (docs/master.md, "Rendezvous (Paddle's
/// protocol)"): PADDLE_MASTER_ENDPOINT (peer 0's candidate), PADDLE_SERVER_ENDPOINT (its own
/// endpoint), PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, POD_NAME, PADDLE_LOG_DIR.
EnvList RpcVariables(const Cluster& cluster, const Trainer& trainer, const MasterJobEnv& job);

/// The child's environment as "NAME=value" strings: `parent` ("NAME=value" entries, as environ)
/// without http_proxy, https_proxy, HTTP_PROXY and HTTPS_PROXY, with `vars` set over it (a
/// variable of `vars` replaces the parent's; order: parent's survivors, then new names in `vars`
/// order).
std::vector<std::string> ComposeEnvironment(const std::vector<std::string>& parent,
                                            const EnvList& vars);

/// The environments of several processes started from one `parent`, split so that the part
/// they have in common is built once and shared (ProcessSpec::shared_env) instead of copied
/// into each. `common` followed by `own[i]` is exactly ComposeEnvironment(parent, vars[i]),
/// order included. Usually `common` is the parent (proxies left out) and `own[i]` the settings
/// of `vars[i]`; where the parent has a name that some process sets (a launcher started by a
/// rank inherits PADDLE_*), `common` is empty and `own[i]` the whole environment, since
/// ComposeEnvironment replaces such entries in place.
/// Paddle 3's backup of the proxies it removes (context/args_envs.py): after each lower-case
/// `http_proxy=V` or `https_proxy=V` of `parent`, `http_proxy_original=V` (`https_proxy_original`),
/// unless `parent` has that name already. The proxies themselves are removed by
/// ComposeEnvironment(s), the backups kept (docs/env.md).
std::vector<std::string> WithProxyBackups(std::vector<std::string> parent);

struct SplitEnvironments {
  std::shared_ptr<const std::vector<std::string>> common;
  std::vector<std::vector<std::string>> own;
};
SplitEnvironments ComposeEnvironments(const std::vector<std::string>& parent,
                                      const std::vector<const EnvList*>& vars);
SplitEnvironments ComposeEnvironments(const std::vector<std::string>& parent,
                                      const std::vector<EnvList>& vars);

/// The kernel's bound on one "NAME=value" string of a new program's environment (MAX_ARG_STRLEN:
/// 32 pages of 4 KiB, the terminating NUL included).
inline constexpr size_t kMaxEnvEntryBytes = 131072;

/// Throws LaunchError (exit 1) when an entry of `env` ("NAME=value") is too long for execve,
/// naming the variable and its size, and, for a comma-separated list (PADDLE_TRAINER_ENDPOINTS
/// past about 8,000 ranks), how many entries it holds and at about how many it breaks. Checked
/// before any process of a job starts (Supervise).
void CheckEnvironmentSizes(const std::vector<std::string>& env);

}  // namespace pdlaunch
