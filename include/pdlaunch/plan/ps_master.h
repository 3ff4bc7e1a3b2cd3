#pragma once
// Today's parameter-server job through the master (docs/ps.md, "Today's interface: counts
// instead of lists, through the master"): what a node publishes there, and this node's processes
// once every node has.

#include <string>
#include <utility>
#include <vector>

#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/ps.h"

namespace pdlaunch {

/// What one node publishes at the master in a parameter-server job (docs/ps.md, "Today's
/// interface: counts instead of lists, through the master"): {"name", "rank", "servers":
/// [ip:port...], "trainers": [...], "dtype", "gloo_port"}.
struct PsPeerInfo {
  std::string name;
  int rank = -1;
  std::vector<std::string> servers;
  std::vector<std::string> trainers;
  std::string dtype = "cpu";
  int gloo_port = 0;

  bool operator==(const PsPeerInfo&) const = default;
};

/// json.dumps of the PS peer dict, keys in Paddle's order.
std::string EncodePsPeer(const PsPeerInfo& peer);
/// Parses a PS peer value; throws LaunchError naming `key` when it is malformed.
PsPeerInfo DecodePsPeer(const std::string& key, const std::string& value);

/// Today's launcher's defaults of a PS job through the master or on one node (docs/ps.md,
/// "Today's interface: counts instead of lists, through the master"): servers and trainers per
/// node = --server_num / --trainer_num, 1 when absent or 0.
std::pair<int, int> PsMasterCounts(const LaunchOptions& options);

/// This node's processes of a PS job formed through the master (docs/ps.md, "Today's interface:
/// counts instead of lists, through the master"): the full server and trainer lists are the
/// peers' lists concatenated in node order; servers first, then trainers (logs serverlog.i,
/// workerlog.i); a trainer's PADDLE_TRAINER_ID is its index in the full list; gloo's HTTP
/// endpoint is the first server's host with peer 0's gloo port. Every process also gets
/// PADDLE_NNODES, POD_IP = `node_ip`, POD_NAME = `pod` and PADDLE_LOG_DIR; no FLAGS_selected_*,
/// no PADDLE_MASTER (as Paddle).
std::vector<PsProcess> PlanPsFromPeers(const std::vector<PsPeerInfo>& peers, int own_index,
                                       const std::string& node_ip, const std::string& pod,
                                       const JobEnv& job);

}  // namespace pdlaunch
