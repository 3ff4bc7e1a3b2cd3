#pragma once

// What one node of a master-rendezvous job publishes, and what it runs once the world is formed:
// collective and RPC (docs/master.md, "Rendezvous (Paddle's protocol)") and parameter server
// (docs/ps.md, "Today's interface: counts instead of lists, through the master"). The
// controller (launch_master.cc) does the rest, the same for all three. Internal to src/.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/coord/rendezvous.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/training_command.h"
#include "pdlaunch/process/console_status.h"
#include "pdlaunch/process/supervisor.h"

namespace pdlaunch::internal {

/// The world as the rendezvous formed it, in node order.
struct MasterWorld {
  std::vector<std::string> keys;       ///< Info keys.
  std::vector<std::string> members;    ///< Pod names.
  std::vector<std::string> addresses;  ///< "10.0.0.2 (abcdef)" for messages.
  int own_index = 0;
};

/// This node's share of the job.
struct MasterLocal {
  std::vector<SupervisedProcess> processes;
  SupervisorOptions supervisor;  ///< Echo path, gloo temp dir.
  ConsoleSettings console;       ///< The PS job's role messages.
  std::string mode_line;         ///< Printed on stdout before the processes start; may be empty.
  std::string debug_table;       ///< Logged at INFO ("Distributed Envs" of the first process).
  std::vector<std::string> after_start;  ///< Logged after "Local start ..." (legacy console).
  /// Servers serve every node's workers: keep them until the whole job's workers are done.
  bool job_wide_completion = false;
};

class MasterJob {
 public:
  virtual ~MasterJob() = default;
  /// Decides devices and ports, before anything is published.
  virtual void Plan(const std::string& node_ip) = 0;
  /// The value this node publishes under its info key.
  virtual std::string Value(const std::string& pod, int rank) const = 0;
  /// Forms the world from every info entry (key → value); throws LaunchError on bad peers or
  /// ranks.
  virtual MasterWorld Form(const std::map<std::string, std::string>& info,
                           const std::string& own_key, bool sort_ip) = 0;
  /// Takes the world the host formed, in its order (a participant of a pdlaunch master); throws
  /// LaunchError on bad peers or when this node is not a member.
  virtual MasterWorld Take(const WorldEntries& world, const std::string& own_key) = 0;
  /// This node's processes, their logs in `log_dir`.
  virtual MasterLocal Build(const std::filesystem::path& log_dir, const std::string& pod) = 0;
  /// The node rank a member's record `value` carries (its entry of --ips in such a job), for the
  /// host's waiting lines; nullopt when it carries none.
  virtual std::optional<int> RankOf(const std::string& value) const;
  /// False for an exchange: the job is complete once the world is formed.
  virtual bool RunsProcesses() const { return true; }
  /// The job's own files before its processes start: today's pod log `pod_log`
  /// (<job>.<pod>.log) with the members' records `peers` (the default), or the legacy
  /// endpoints.log in `log_dir`.
  virtual void WriteRecords(const std::filesystem::path& log_dir,
                            const std::filesystem::path& pod_log,
                            const std::vector<std::string>& peers, bool truncate);
};

enum class MasterJobKind { kCollective, kPs, kRpc };

std::unique_ptr<MasterJob> MakeMasterJob(MasterJobKind kind, const LaunchOptions& options,
                                         const TrainingCommand& command);

/// The legacy interface's --ips job whose nodes meet (ips_job.cc): the legacy world, variables
/// and files; every node checks that the others were given the same list, processes, devices
/// and ports.
std::unique_ptr<MasterJob> MakeLegacyIpsJob(const LaunchOptions& options,
                                            const TrainingCommand& command);

/// A job without processes in which every node publishes `value` (at most 16 KiB); once the
/// world is formed, `values` holds every member's, in the world's order.
std::unique_ptr<MasterJob> MakeExchangeJob(std::string value,
                                           std::shared_ptr<std::vector<std::string>> values);

}  // namespace pdlaunch::internal
