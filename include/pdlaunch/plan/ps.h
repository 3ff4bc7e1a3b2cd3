#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/trainer_env.h"

namespace pdlaunch {

/// The kind of job (docs/cli.md).
enum class JobMode { kCollective, kPs, kPsHeter };

/// Decides the mode from the launcher's own options (issue #4 item 1), never from argv text:
/// * `--run_mode` given: it decides ("collective", "ps", "ps-heter"; anything else is a
///   UsageError with the CLI's "argument --run_mode: invalid choice: ..." text).
/// * else any given PS flag (--worker_num, --server_num, --heter_worker_num, --servers,
///   --workers, --heter_workers, --heter_devices, --http_port) selects PS, PS_HETER when one of
///   the heter flags (--heter_worker_num, --heter_workers, --heter_devices) is among them;
///   otherwise collective.
/// Collective-only flags are --ips, --nproc_per_node and a --backend other than auto (--gpus,
/// --host and --start_port serve both modes). A collective-only flag (or --run_mode=collective)
/// together with a PS flag (or --run_mode=ps/ps-heter) is a UsageError naming both:
/// "Only one mode(Collective or Parameter-Server) can be selected at the same time, but more than
/// one configuration was received: --ips and --servers". A heter flag with --run_mode=ps is a
/// UsageError "--heter_workers needs --run_mode=ps-heter, not --run_mode=ps".
JobMode SelectMode(const LaunchOptions& options);

/// The PS flags that were given, as "--name", in Paddle's order (docs/ps.md, "Mode").
std::vector<std::string> GivenPsFlags(const LaunchOptions& options);

/// Paddle's INFO line for a PS job: "Run parameter-sever mode. pserver arguments:['--worker_num',
/// '--server_num'], accelerators count:0" (sic "sever").
std::string FormatPsModeLine(const LaunchOptions& options, int accelerators);

/// Paddle's port of port-less `--workers` items: worker i gets 6170 + server count + i
/// (docs/ps.md, "Endpoints").
/// Also the start port pdlaunch recommends for generated ports of a job spanning several hosts
/// when neither --start_port nor FLAGS_START_PORT is given (free ports differ between hosts).
inline constexpr int kPsDefaultStartPort = 6170;

/// Number of ports PlanPs generates for `options` in `mode` (generated server, worker and heter
/// endpoints, port-less heter stages, and the gloo HTTP port unless --http_port is given): the
/// number of free ports the caller reserves when it does not use a fixed start port. Throws the
/// same UsageErrors as PlanPs for malformed lists. Pure.
int PsPortsNeeded(const LaunchOptions& options, JobMode mode);

/// The hosts of the job in order of first appearance over servers, workers, then heter workers
/// (generated endpoints are on 127.0.0.1), as PlanPs computes them. The caller uses it to decide
/// between free and fixed ports (more than one host: fixed) and to find the host names to
/// resolve (HostNamesToResolve of the comma-joined list). Throws as PlanPs. Pure.
std::vector<std::string> PsNodeIps(const LaunchOptions& options, JobMode mode);

/// Everything PlanPs needs; the caller gathers it from the machine.
struct PsInputs {
  LaunchOptions options;
  JobMode mode = JobMode::kPs;
  /// POD_IP, local interface addresses and resolved host names, as for collective mode.
  NodeEnv node;
  /// Fixed ports: the generated port at Paddle's offset k is start_port + k (servers from 0,
  /// workers from server count, heter stages after the workers, the HTTP port last; docs/ps.md,
  /// "Endpoints").
  std::optional<int> start_port;
  /// Without `start_port`: PsPortsNeeded ports the caller reserved, consumed in order (servers,
  /// workers, heter stages, HTTP port). Extra ports are unused.
  std::vector<int> free_ports;
  /// The node's device list (docs/ps.md, "Environment per role"; ResolveDevices with --gpus or
  /// --xpus, no --nproc_per_node, backend "auto"): GPUs or XPUs, else CPU.
  DevicePlan devices;
  /// The family's visible list (CUDA_VISIBLE_DEVICES or XPU_VISIBLE_DEVICES): turns logical ids
  /// back into physical ones.
  std::optional<std::string> cuda_visible_devices;
  /// PADDLE_GLOO_FS_PATH and PADDLE_WITH_GLOO (log_dir is not used).
  JobEnv job;
};

/// Role of a PS process.
enum class PsRole { kServer, kWorker, kHeterWorker };

/// One process of this node.
struct PsProcess {
  PsRole role = PsRole::kServer;
  int local_index = 0;  ///< Position among this node's processes of the same role.
  int global_id = 0;    ///< Index of its endpoint in the role's full list.
  int stage = 0;        ///< 0 for servers, 1 for workers, 2.. for heter stages.
  Endpoint endpoint;
  std::string device;    ///< CUDA_VISIBLE_DEVICES of workers and heter workers; "" for servers.
  std::string log_name;  ///< "serverlog.N", "workerlog.N" or "heterlog.N" with N = local_index.
  /// The role's variables in Paddle's order (docs/ps.md, "Environment per role"): what the child
  /// gets on top of the launcher's environment (ComposeEnvironment) and what the "Distributed
  /// Envs" table shows.
  EnvList env;
};

/// The decided PS job: every list as all nodes compute it, and this node's processes.
struct PsPlan {
  JobMode mode = JobMode::kPs;
  std::vector<Endpoint> servers;
  std::vector<Endpoint> workers;
  std::vector<std::vector<Endpoint>> heter_stages;  ///< Stage 2, 3, ... (PS_HETER only).
  std::vector<std::string> stage_devices;           ///< Stage 1 ("cpu"), 2, ... (PS_HETER only).
  Endpoint http;                                    ///< PADDLE_GLOO_HTTP_ENDPOINT.
  NodeIdentity node;  ///< node_ips: hosts by first appearance; this node; how it was found.
  std::vector<PsProcess> processes;  ///< This node's processes in spawn order.
  /// INFO lines in order: the node line (several hosts only), "Local server start ..." with the
  /// "Distributed Envs" table of the first process of each local role, "Please check ...".
  std::vector<std::string> info;
  std::vector<std::string> warnings;  ///< WARNING lines (GPUs shared, unused --heter_devices).
};

/// Plans a PS or PS_HETER job (docs/ps.md, issue #4 items 2–4). Pure: no processes,
/// sockets, environment or logging. Paddle's assertion texts are UsageErrors ("The server_num and
/// servers doesn't match. ...", "The setting of Parameter-Server must has server_num or
/// servers.", ...); malformed items are UsageErrors naming the flag and the item. Differences
/// from Paddle (docs/ps.md): a worker's PADDLE_TRAINER_ID is its index in
/// PADDLE_TRAINER_ENDPOINTS; CUDA_VISIBLE_DEVICES is a physical id; lists are re-joined stripped;
/// a list mixing items with and without ports, an endpoint used twice, and a node in none of the
/// lists (PS_HETER included) are errors.
PsPlan PlanPs(const PsInputs& inputs);

/// "server", "worker" or "heter_worker" (as in Paddle's "Local server start" lines).
std::string PsRoleName(PsRole role);

}  // namespace pdlaunch
