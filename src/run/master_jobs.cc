#include "run/master_jobs.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/coord/rendezvous.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/ps_master.h"
#include "pdlaunch/plan/trainer_env.h"
#include "run/job_processes.h"
#include "run/log_files.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal {
namespace {

namespace fs = std::filesystem;

std::string Describe(const std::string& host, const std::string& pod) {
  return fmt::format("{} ({})", host, pod);
}

/// Collective and RPC (docs/master.md, "Rendezvous (Paddle's protocol)"): the same peer JSON,
/// different variables and log names.
class CollectiveJob : public MasterJob {
 public:
  CollectiveJob(const LaunchOptions& options, const TrainingCommand& command, bool rpc)
      : options_(options), command_(command), rpc_(rpc) {}

  void Plan(const std::string& node_ip) override {
    devices_ = ResolveCollectiveDevices(options_);
    for (const std::string& line : devices_.warnings) PDLOG_WARN("{}", line);
    for (const std::string& line : devices_.info) PDLOG_INFO("{}", line);
    const int local = static_cast<int>(devices_.devices_per_proc.size());
    ports_ = PlanLocalPorts(GivenStartPort(options_), local);
    if (!ports_.reservation) {
      std::vector<int> all = ports_.ports;
      all.push_back(ports_.master_port);
      CheckPortsFree(all);
    }
    info_.replicas = local;
    // Paddle's DeviceType values: cpu, gpu, xpu, custom_device.
    info_.dtype = devices_.mode == DeviceMode::kCustom ? "custom_device" : devices_.family.type;
    info_.candidate = Endpoint{node_ip, ports_.master_port}.ToString();
    std::vector<Endpoint> endpoints;
    for (int port : ports_.ports) endpoints.push_back(Endpoint{node_ip, port});
    info_.endpoints = JoinEndpoints(endpoints);
  }

  std::string Value(const std::string& pod, int rank) const override {
    PeerInfo info = info_;
    info.name = pod;
    info.rank = rank;
    return EncodePeerInfo(info);
  }

  MasterWorld Form(const std::map<std::string, std::string>& info, const std::string& own_key,
                   bool sort_ip) override {
    return Adopt(OrderPeers(info, own_key, sort_ip));
  }

  MasterWorld Take(const WorldEntries& world, const std::string& own_key) override {
    return Adopt(PeersInOrder(world, own_key));
  }

  MasterWorld Adopt(const PeerOrder& order) {
    cluster_ = BuildMasterCluster(order, devices_);
    MasterWorld world;
    world.keys = order.keys;
    world.own_index = order.own_index;
    for (const PeerInfo& peer : order.peers) {
      world.members.push_back(peer.name);
      world.addresses.push_back(Describe(ParseEndpoint(peer.candidate).host, peer.name));
    }
    return world;
  }

  MasterLocal Build(const fs::path& log_dir, const std::string& pod) override {
    const Cluster& cluster = cluster_;
    const MasterJobEnv job{pod, log_dir.string(), options_.auto_cluster_config};
    MasterLocal local;
    const Trainer& first = cluster.local_pod().trainers.at(0);
    if (rpc_) {
      local.processes = BuildProcesses(
          cluster, command_, log_dir, options_.log_overwrite,
          [&](const Trainer& trainer) { return RpcVariables(cluster, trainer, job); },
          /*log_by_global_rank=*/true);
      local.debug_table = FormatDistributedEnvs(RpcVariables(cluster, first, job));
    } else {
      const WorldValues world(cluster);
      local.processes = BuildProcesses(
          cluster, command_, log_dir, options_.log_overwrite, [&](const Trainer& trainer) {
            return MasterTrainerVariables(cluster, trainer, job, world);
          });
      local.debug_table = FormatDistributedEnvs(MasterTrainerVariables(cluster, first, job, world));
    }
    MarkRunInLogs(local.processes, options_.job_id.value_or("default"), pod);
    local.mode_line = devices_.mode_line;
    local.supervisor.echo_path = local.processes.front().log_path;
    ChooseEcho(local.supervisor, options_, cluster.pods.size() > 1, cluster.local_pod().ip);
    local.supervisor.device_log = DeviceLogOf(options_, cluster, log_dir.string());
    ApplyNumaBinding(options_, cluster, local.processes);
    return local;
  }

 private:
  const LaunchOptions& options_;
  const TrainingCommand& command_;
  bool rpc_;
  DevicePlan devices_;
  LocalPorts ports_;
  PeerInfo info_;
  Cluster cluster_;
};

/// Parameter server through the master (docs/ps.md, "Today's interface: counts instead of lists,
/// through the master").
class PsJob : public MasterJob {
 public:
  PsJob(const LaunchOptions& options, const TrainingCommand& command)
      : options_(options), command_(command) {}

  void Plan(const std::string& node_ip) override {
    const auto [servers, trainers] = PsMasterCounts(options_);
    const int needed = servers + trainers + 1;  // The last one: gloo's HTTP port.
    std::vector<int> ports;
    if (const std::optional<int> start = GivenStartPort(options_)) {
      for (int i = 0; i < needed; ++i) ports.push_back(*start + i);
      CheckPortsFree(ports);
    } else {
      reservation_ = MakeLockingPortAllocator()->Reserve(needed);
      ports = reservation_->ports();
    }
    for (int i = 0; i < servers; ++i) {
      info_.servers.push_back(Endpoint{node_ip, ports[static_cast<size_t>(i)]}.ToString());
    }
    for (int i = 0; i < trainers; ++i) {
      info_.trainers.push_back(
          Endpoint{node_ip, ports[static_cast<size_t>(servers) + static_cast<size_t>(i)]}
              .ToString());
    }
    info_.gloo_port = ports.back();
    node_ip_ = node_ip;
  }

  std::string Value(const std::string& pod, int rank) const override {
    PsPeerInfo info = info_;
    info.name = pod;
    info.rank = rank;
    return EncodePsPeer(info);
  }

  MasterWorld Form(const std::map<std::string, std::string>& info, const std::string& own_key,
                   bool sort_ip) override {
    if (sort_ip) PDLOG_WARN("--sort_ip has no effect on a parameter-server job (no candidate)");
    std::map<std::string, PsPeerInfo> peers;
    std::map<std::string, std::string> names;
    std::vector<std::string> keys;
    for (const auto& [key, value] : info) {
      PsPeerInfo peer = DecodePsPeer(key, value);
      names[key] = peer.servers.empty() ? peer.name : peer.servers.front();
      keys.push_back(key);
      peers.emplace(key, std::move(peer));
    }
    return Adopt(OrderKeys(keys, own_key, names, nullptr), peers);
  }

  MasterWorld Take(const WorldEntries& world, const std::string& own_key) override {
    KeyOrder order;
    order.own_index = OwnIndexInWorld(world, own_key);
    std::map<std::string, PsPeerInfo> peers;
    for (const auto& [key, value] : world) {
      order.keys.push_back(key);
      peers.emplace(key, DecodePsPeer(key, value));
    }
    return Adopt(order, peers);
  }

  MasterWorld Adopt(const KeyOrder& order, const std::map<std::string, PsPeerInfo>& peers) {
    MasterWorld world;
    world.keys = order.keys;
    world.own_index = order.own_index;
    peers_.clear();
    for (const std::string& key : order.keys) {
      const PsPeerInfo& peer = peers.at(key);
      peers_.push_back(peer);
      world.members.push_back(peer.name);
      const std::vector<std::string>& any = peer.servers.empty() ? peer.trainers : peer.servers;
      world.addresses.push_back(
          Describe(any.empty() ? std::string("?") : ParseEndpoint(any.front()).host, peer.name));
    }
    own_index_ = order.own_index;
    return world;
  }

  MasterLocal Build(const fs::path& log_dir, const std::string& pod) override {
    const JobEnv job{gloo_dir_.path(), options_.with_gloo.value_or("1"), log_dir.string()};
    const std::vector<PsProcess> ps = PlanPsFromPeers(peers_, own_index_, node_ip_, pod, job);
    size_t servers = 0;
    size_t trainers = 0;
    for (const PsPeerInfo& peer : peers_) {
      servers += peer.servers.size();
      trainers += peer.trainers.size();
    }
    MasterLocal local;
    local.processes = BuildPsProcesses(ps,
                                       {{PsRole::kServer, static_cast<int>(servers)},
                                        {PsRole::kWorker, static_cast<int>(trainers)}},
                                       command_, log_dir, options_.log_overwrite);
    MarkRunInLogs(local.processes, options_.job_id.value_or("default"), pod);
    local.supervisor.remove_if_killed = {gloo_dir_.path()};
    SetPsSupervision(local.processes, local.supervisor, local.console);
    ChooseEcho(local.supervisor, options_, false, "");
    local.job_wide_completion = peers_.size() > 1;
    if (!ps.empty()) local.debug_table = FormatDistributedEnvs(ps.front().env);
    return local;
  }

 private:
  const LaunchOptions& options_;
  const TrainingCommand& command_;
  std::unique_ptr<PortReservation> reservation_;
  PsPeerInfo info_;
  std::string node_ip_;
  std::vector<PsPeerInfo> peers_;
  int own_index_ = 0;
  TempDir gloo_dir_;
};

}  // namespace

/// The auto tuner's agreement between nodes: each node's record is {"name": pod, "node": ip,
/// "value": ...}; the world is every record, the host's order (its keys' order) for everyone.
class ExchangeJob : public MasterJob {
 public:
  ExchangeJob(std::string value, std::shared_ptr<std::vector<std::string>> values)
      : value_(std::move(value)), values_(std::move(values)) {}

  void Plan(const std::string& node_ip) override { node_ip_ = node_ip; }

  std::string Value(const std::string& pod, int /*rank*/) const override {
    return nlohmann::json{{"name", pod}, {"node", node_ip_}, {"value", value_}}.dump();
  }

  MasterWorld Form(const std::map<std::string, std::string>& info, const std::string& own_key,
                   bool /*sort_ip*/) override {
    return Adopt(WorldEntries(info.begin(), info.end()), own_key);
  }

  MasterWorld Take(const WorldEntries& world, const std::string& own_key) override {
    return Adopt(world, own_key);
  }

  MasterLocal Build(const fs::path& /*log_dir*/, const std::string& /*pod*/) override { return {}; }

  bool RunsProcesses() const override { return false; }

 private:
  // A peer's record comes from the network: bounded, and every field checked before use.
  MasterWorld Adopt(const WorldEntries& entries, const std::string& own_key) {
    MasterWorld world;
    std::vector<std::string> values;
    bool own = false;
    for (const auto& [key, record] : entries) {
      nlohmann::json parsed;
      if (record.size() <= kMaxRecord) {
        parsed = nlohmann::json::parse(record, nullptr, /*allow_exceptions=*/false);
      }
      if (!parsed.is_object() || !parsed["name"].is_string() || !parsed["node"].is_string() ||
          !parsed["value"].is_string()) {
        throw LaunchError(fmt::format("the record of {} in the exchange is not one", OneLine(key)));
      }
      world.keys.push_back(key);
      world.members.push_back(parsed["name"].get<std::string>());
      world.addresses.push_back(
          Describe(OneLine(parsed["node"].get<std::string>()), OneLine(world.members.back())));
      values.push_back(parsed["value"].get<std::string>());
      if (key == own_key) {
        own = true;
        world.own_index = static_cast<int>(world.keys.size()) - 1;
      }
    }
    if (!own) throw LaunchError("this node is not a member of the exchange's world");
    *values_ = std::move(values);
    return world;
  }

  static constexpr size_t kMaxRecord = 16 * 1024;
  std::string value_;
  std::shared_ptr<std::vector<std::string>> values_;
  std::string node_ip_;
};

std::optional<int> MasterJob::RankOf(const std::string& value) const {
  try {
    return DecodePeerInfo("", value).rank;
  } catch (const LaunchError&) {
    return std::nullopt;
  }
}

void MasterJob::WriteRecords(const fs::path& /*log_dir*/, const fs::path& pod_log,
                             const std::vector<std::string>& peers, bool truncate) {
  WritePodLog(pod_log, PythonListRepr(peers), truncate);
}

std::unique_ptr<MasterJob> MakeExchangeJob(std::string value,
                                           std::shared_ptr<std::vector<std::string>> values) {
  return std::make_unique<ExchangeJob>(std::move(value), std::move(values));
}

std::unique_ptr<MasterJob> MakeMasterJob(MasterJobKind kind, const LaunchOptions& options,
                                         const TrainingCommand& command) {
  switch (kind) {
    case MasterJobKind::kPs:
      return std::make_unique<PsJob>(options, command);
    case MasterJobKind::kRpc:
      return std::make_unique<CollectiveJob>(options, command, /*rpc=*/true);
    case MasterJobKind::kCollective:
      break;
  }
  return std::make_unique<CollectiveJob>(options, command, /*rpc=*/false);
}

}  // namespace pdlaunch::internal
