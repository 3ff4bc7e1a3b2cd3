#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pdlaunch/topology.h"

namespace pdlaunch {

/// Ordered environment variables (name, value).
using EnvList = std::vector<std::pair<std::string, std::string>>;

/// Job-wide values that are not part of the topology.
struct JobEnv {
  std::string gloo_fs_path;     ///< PADDLE_GLOO_FS_PATH: the launcher's temporary directory.
  std::string with_gloo = "0";  ///< PADDLE_WITH_GLOO: the launcher's value, default "0".
  std::string log_dir;          ///< PADDLE_LOG_DIR: absolute log directory.
};

/// The per-process table of contract §3.6, in its order: PADDLE_TRAINER_ID,
/// PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS, PADDLE_RANK_IN_NODE,
/// PADDLE_LOCAL_DEVICE_IDS, PADDLE_WORLD_DEVICE_IDS, then FLAGS_selected_gpus (GPU mode, ids
/// non-empty) and FLAGS_selected_accelerators (ids non-empty). This is what the
/// "Distributed Envs" table shows.
EnvList TrainerTable(const Cluster& cluster, const Trainer& trainer);

/// Every variable pdlaunch sets for `trainer` (docs/env.md): TrainerTable, then the job-wide
/// Paddle ones (PADDLE_WITH_GLOO, PADDLE_GLOO_RENDEZVOUS=3, PADDLE_GLOO_FS_PATH,
/// PADDLE_DISTRI_BACKEND), the newer launcher's (PADDLE_GLOBAL_RANK, PADDLE_LOCAL_RANK,
/// PADDLE_GLOBAL_SIZE, PADDLE_LOCAL_SIZE, PADDLE_NNODES, PADDLE_MASTER, PADDLE_LOG_DIR),
/// PyTorch's (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
/// PYTHONUNBUFFERED=1.
EnvList TrainerVariables(const Cluster& cluster, const Trainer& trainer, const JobEnv& job);

/// The child's environment as "NAME=value" strings: `parent` ("NAME=value" entries, as environ)
/// without http_proxy, https_proxy, HTTP_PROXY and HTTPS_PROXY, with `vars` set over it (a
/// variable of `vars` replaces the parent's; order: parent's survivors, then new names in `vars`
/// order).
std::vector<std::string> ComposeEnvironment(const std::vector<std::string>& parent,
                                            const EnvList& vars);

}  // namespace pdlaunch
