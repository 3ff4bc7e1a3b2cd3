// The legacy interface's multi-node --ips job once its nodes meet (docs/multi-node.md, "The
// nodes meet"): the world, every variable and every file are the legacy ones, decided by the
// list alone as in Paddle 2; the master only makes the nodes meet, check that they were given
// the same job, and fail as one.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/coord/store_exchange.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/trainer_env.h"
#include "run/collective_plan.h"
#include "run/job_processes.h"
#include "run/log_files.h"
#include "run/master_jobs.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal {
namespace {

namespace fs = std::filesystem;

/// A list longer than this travels as its digest (a record stays small at any node count).
constexpr size_t kListInRecord = 4096;
/// A peer's record comes from the network: at most this long.
constexpr size_t kMaxRecord = 16 * 1024;

/// What a node of the job publishes: who it is, and what it was asked to run.
struct IpsRecord {
  std::string name;  ///< Pod name.
  int rank = -1;     ///< Its entry of --ips.
  std::string node;  ///< Its address, as listed.
  std::string ips;   ///< The list, when short; else empty.
  std::string ips_digest;
  int nodes = 0;
  int processes = 0;
  int start_port = 0;
  std::string device;  ///< "gpu", "cpu", "xpu", a custom device's type.

  std::string Who() const { return fmt::format("{} ({})", OneLine(node), OneLine(name)); }
};

std::string Encode(const IpsRecord& r) {
  return nlohmann::json{{"name", r.name},
                        {"rank", r.rank},
                        {"node", r.node},
                        {"ips", r.ips},
                        {"ips_digest", r.ips_digest},
                        {"nodes", r.nodes},
                        {"processes", r.processes},
                        {"start_port", r.start_port},
                        {"device", r.device}}
      .dump();
}

IpsRecord Decode(const std::string& key, const std::string& value) {
  nlohmann::json j;
  if (value.size() <= kMaxRecord) j = nlohmann::json::parse(value, nullptr, false);
  const auto text = [&](const char* field) {
    if (!j.is_object() || !j.contains(field) || !j[field].is_string()) {
      throw LaunchError(
          fmt::format("the record of {} is not a legacy --ips node's (no '{}'): a "
                      "node of another kind of job?",
                      OneLine(key), field));
    }
    return j[field].get<std::string>();
  };
  const auto number = [&](const char* field) {
    if (!j.is_object() || !j.contains(field) || !j[field].is_number_integer()) {
      throw LaunchError(fmt::format("the record of {} is not a legacy --ips node's (no '{}')",
                                    OneLine(key), field));
    }
    return j[field].get<int>();
  };
  IpsRecord r;
  r.name = text("name");
  r.node = text("node");
  r.ips = text("ips");
  r.ips_digest = text("ips_digest");
  r.device = text("device");
  r.rank = number("rank");
  r.nodes = number("nodes");
  r.processes = number("processes");
  r.start_port = number("start_port");
  return r;
}

std::string Plural(int n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "es");
}

/// The first way `other` differs from `mine`, as one line naming both nodes; nullopt when the
/// two were given the same job.
std::optional<std::string> Difference(const IpsRecord& mine, const IpsRecord& other) {
  if (other.ips_digest != mine.ips_digest || other.nodes != mine.nodes) {
    std::string where;
    if (!mine.ips.empty() && !other.ips.empty()) {
      const std::vector<std::string> a = SplitAndStrip(mine.ips, ',');
      const std::vector<std::string> b = SplitAndStrip(other.ips, ',');
      size_t i = 0;
      while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
      where = fmt::format(": entry {} is {} on {} and {} on {}", i,
                          i < b.size() ? OneLine(b[i]) : "missing", other.Who(),
                          i < a.size() ? OneLine(a[i]) : "missing", mine.Who());
    } else {
      where = fmt::format(" ({} nodes, digest {} on {}; {} nodes, digest {} on {})", other.nodes,
                          OneLine(other.ips_digest), other.Who(), mine.nodes, mine.ips_digest,
                          mine.Who());
    }
    return fmt::format("the nodes were given different --ips lists{}; give every node the same",
                       where);
  }
  if (other.processes != mine.processes) {
    return fmt::format(
        "node {} runs {} and node {} runs {}: every node of an --ips job runs the same number "
        "(give each the same --gpus, --xpus or --nproc_per_node)",
        other.Who(), Plural(other.processes, "process"), mine.Who(),
        Plural(mine.processes, "process"));
  }
  if (other.device != mine.device) {
    return fmt::format("node {} runs on {} and node {} on {}: give every node the same devices",
                       other.Who(), OneLine(other.device), mine.Who(), mine.device);
  }
  if (other.start_port != mine.start_port) {
    return fmt::format(
        "node {} uses start port {} and node {} {} (--start_port, FLAGS_START_PORT or "
        "PADDLE_START_PORT): give every node the same",
        other.Who(), other.start_port, mine.Who(), mine.start_port);
  }
  return std::nullopt;
}

class LegacyIpsJob : public MasterJob {
 public:
  LegacyIpsJob(const LaunchOptions& options, const TrainingCommand& command)
      : options_(options), command_(command) {}

  void Plan(const std::string& node_ip) override {
    plan_ = PlanCollective(options_, EnvironmentMap());
    LogDevicePlan(plan_.devices, /*todays_console=*/false, /*print_mode_line=*/false);
    const Cluster& cluster = plan_.cluster;
    std::vector<std::string> ips;
    for (const Pod& pod : cluster.pods) ips.push_back(pod.ip);
    const std::string list = fmt::format("{}", fmt::join(ips, ","));
    own_.node = node_ip;
    own_.ips = list.size() <= kListInRecord ? list : "";
    own_.ips_digest = ExchangeDigest(list);
    own_.nodes = static_cast<int>(ips.size());
    own_.processes = static_cast<int>(cluster.local_pod().trainers.size());
    own_.start_port = cluster.local_pod().trainers.at(0).endpoint.port;
    own_.device = plan_.devices.family.type;
    // A world whose variables no process could take fails here, before any node is met.
    const WorldValues world(cluster);
    std::vector<std::string> entries;
    for (const auto& [name, value] : TrainerVariables(cluster, cluster.local_pod().trainers.at(0),
                                                      JobEnv{"", "0", ""}, world)) {
      entries.push_back(name + "=" + value);
    }
    CheckEnvironmentSizes(entries);
  }

  std::string Value(const std::string& pod, int rank) const override {
    IpsRecord record = own_;
    record.name = pod;
    record.rank = rank;
    return Encode(record);
  }

  std::optional<int> RankOf(const std::string& value) const override {
    try {
      return Decode("", value).rank;
    } catch (const LaunchError&) {
      return std::nullopt;
    }
  }

  MasterWorld Form(const std::map<std::string, std::string>& info, const std::string& own_key,
                   bool /*sort_ip*/) override {
    return Adopt(WorldEntries(info.begin(), info.end()), own_key);
  }

  MasterWorld Take(const WorldEntries& world, const std::string& own_key) override {
    return Adopt(world, own_key);
  }

  void WriteRecords(const fs::path& log_dir, const fs::path& /*pod_log*/,
                    const std::vector<std::string>& /*peers*/, bool /*truncate*/) override {
    WriteEndpointsFile(log_dir, "", "", plan_.cluster.world_endpoints(), options_.log_overwrite);
  }

  MasterLocal Build(const fs::path& log_dir, const std::string& pod) override {
    const Cluster& cluster = plan_.cluster;
    gloo_dir_.emplace();
    const JobEnv job{gloo_dir_->path(), GetEnv("PADDLE_WITH_GLOO").value_or("0"), log_dir.string()};
    const WorldValues world(cluster);
    MasterLocal local;
    local.processes =
        BuildTrainerProcesses(cluster, world, command_, job, log_dir, options_.log_overwrite);
    MarkRunInLogs(local.processes, options_.job_id.value_or("default"), pod);
    local.debug_table =
        FormatDistributedEnvs(TrainerTable(cluster, cluster.local_pod().trainers.at(0), world));
    local.mode_line = plan_.devices.mode_line;
    local.after_start.push_back(fmt::format(
        "details about PADDLE_TRAINER_ENDPOINTS can be found in {}/endpoints.log, and detail "
        "running logs maybe found in {}/workerlog.0",
        options_.log_dir, options_.log_dir));
    local.supervisor.echo_path = local.processes.front().log_path;
    ChooseEcho(local.supervisor, options_, /*multi_node=*/true, cluster.local_pod().ip);
    local.supervisor.remove_if_killed = {gloo_dir_->path()};
    local.supervisor.device_log = DeviceLogOf(options_, cluster, options_.log_dir);
    ApplyNumaBinding(options_, cluster, local.processes);
    return local;
  }

 private:
  // Every node's record, checked against this node's own: the same list, process count, device
  // and ports, and each node at its own entry of the list. The world is the list's order.
  MasterWorld Adopt(const WorldEntries& entries, const std::string& own_key) {
    std::vector<std::pair<IpsRecord, std::string>> records;
    std::optional<IpsRecord> mine;
    for (const auto& [key, value] : entries) {
      records.emplace_back(Decode(key, value), key);
      if (key == own_key) mine = records.back().first;
    }
    if (!mine) throw LaunchError("this node is not a member of the job's world");
    std::sort(records.begin(), records.end(),
              [](const auto& a, const auto& b) { return a.first.rank < b.first.rank; });
    MasterWorld world;
    for (size_t i = 0; i < records.size(); ++i) {
      const IpsRecord& r = records[i].first;
      if (const std::optional<std::string> why = Difference(*mine, r)) throw LaunchError(*why);
      if (r.rank != static_cast<int>(i)) {
        const bool twice = i > 0 && records[i - 1].first.rank == r.rank;
        throw LaunchError(
            twice ? fmt::format("nodes {} and {} both are entry {} of --ips (--host or POD_IP "
                                "set alike?)",
                                records[i - 1].first.Who(), r.Who(), r.rank)
                  : fmt::format("no node is entry {} of --ips", i));
      }
      world.keys.push_back(records[i].second);
      world.members.push_back(r.name);
      world.addresses.push_back(r.Who());
      if (records[i].second == own_key) world.own_index = static_cast<int>(i);
    }
    return world;
  }

  const LaunchOptions& options_;
  const TrainingCommand& command_;
  CollectivePlan plan_;
  IpsRecord own_;
  std::optional<TempDir> gloo_dir_;
};

}  // namespace

std::unique_ptr<MasterJob> MakeLegacyIpsJob(const LaunchOptions& options,
                                            const TrainingCommand& command) {
  return std::make_unique<LegacyIpsJob>(options, command);
}

}  // namespace pdlaunch::internal
