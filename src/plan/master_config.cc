#include "pdlaunch/plan/master_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/nested_launch.h"

namespace pdlaunch {
namespace {

constexpr std::string_view kEtcdScheme = "etcd://";
constexpr std::string_view kHttpScheme = "http://";

int FirstCount(const std::string& nnodes) {
  int n = 1;
  std::from_chars(nnodes.data(), nnodes.data() + nnodes.size(), n);
  return n;
}

std::optional<int> TrainerIdRank(const EnvMap& env) {
  if (env.count(std::string(kNestedMarker))) return std::nullopt;
  const auto it = env.find("PADDLE_TRAINER_ID");
  if (it == env.end()) return std::nullopt;
  int rank = -1;
  const std::string_view text = StripSpace(it->second);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rank);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || rank < 0) {
    return std::nullopt;
  }
  return rank;
}

}  // namespace

namespace {

/// A --master other than etcd://, as Paddle 3's update_args reads it: ip:port, :PORT (no host) or
/// a bare host (no port).
struct MasterForm {
  std::string host;         ///< Empty for :PORT.
  std::optional<int> port;  ///< nullopt for a bare host.
};

MasterForm ParseMasterForm(const std::string& master) {
  std::string text = master;
  if (text.starts_with(kHttpScheme)) text = text.substr(kHttpScheme.size());
  MasterForm form;
  if (text.starts_with(':') && text.find(':', 1) == std::string::npos) {
    form.port =
        ParseInt(text.substr(1), fmt::format("argument --master: port of '{}'", master), 1, 65535);
    return form;
  }
  // A bare IPv6 address has colons and no brackets: a host without a port.
  const bool bare_ipv6 = std::count(text.begin(), text.end(), ':') > 1 && !text.starts_with('[');
  if (text.find(':') == std::string::npos || bare_ipv6) {
    form.host = text;
    return form;
  }
  try {
    const Endpoint endpoint = ParseEndpoint(text);
    form.host = endpoint.host;
    form.port = endpoint.port;
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("argument --master: {}", e.what()));
  }
  return form;
}

/// PADDLE_PORT, when set and not empty: a port number, or a UsageError naming it.
std::optional<int> PaddlePort(const EnvMap& env) {
  const auto it = env.find("PADDLE_PORT");
  if (it == env.end() || StripSpace(it->second).empty()) return std::nullopt;
  return ParseInt(it->second, "PADDLE_PORT", 1, 65535);
}

/// What every master path shares: the job id, the address options and the timeouts.
MasterSettings CommonSettings(const LaunchOptions& options, const EnvMap& env) {
  MasterSettings settings;
  settings.job_id = options.job_id.value_or("default");
  settings.sort_ip = options.sort_ip;
  if (options.host && !options.host->empty()) {
    settings.host = options.host;
  } else if (auto it = env.find("POD_IP"); it != env.end() && !it->second.empty()) {
    settings.host = it->second;
  }
  settings.rendezvous_timeout = options.rendezvous_timeout;
  settings.heartbeat_timeout = options.heartbeat_timeout;
  return settings;
}

/// The master of a job whose nodes do not meet through --ips: --master ip:port, or :PORT on
/// `first_node` (the first of --ips) or else PADDLE_TRAINERS' first node, or a bare ip with
/// PADDLE_PORT (Paddle 3's update_args).
void SetGivenMaster(const std::string& master, const EnvMap& env, const std::string& first_node,
                    MasterSettings& settings) {
  MasterForm form = ParseMasterForm(master);
  if (form.host.empty()) form.host = first_node;
  if (form.host.empty()) {
    const auto trainers = env.find("PADDLE_TRAINERS");
    const std::vector<std::string> first =
        trainers == env.end() ? std::vector<std::string>() : SplitAndStrip(trainers->second, ',');
    if (first.empty() || first.front().empty()) {
      throw UsageError(fmt::format(
          "argument --master: '{}' has no address: with --ips the master is on its first "
          "node, else on PADDLE_TRAINERS' first (neither is given)",
          master));
    }
    form.host = first.front();
  }
  if (!form.port) form.port = PaddlePort(env);
  if (!form.port) {
    throw UsageError(
        fmt::format("argument --master: '{}' needs host:port (a bare address takes its port from "
                    "PADDLE_PORT, or with --ips from Paddle's handshake)",
                    master));
  }
  settings.master_given = true;
  settings.master_host = form.host;
  settings.master_port = *form.port;
}

}  // namespace

std::vector<std::string> ParseHostfile(std::string_view text) {
  std::vector<std::string> nodes;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = StripSpace(text.substr(begin, end - begin));
    const size_t blank = line.find_first_of(" \t\r\f\v");
    const std::string_view token = line.substr(0, blank);
    if (!token.empty()) nodes.emplace_back(token);
    begin = end + 1;
  }
  return nodes;
}

std::vector<std::string> CutIpsToNnodes(std::vector<std::string> ips, int nnodes,
                                        std::string* warning) {
  const int listed = static_cast<int>(ips.size());
  if (nnodes > listed) {
    throw UsageError(
        fmt::format("LAUNCH ERROR the nnodes {} > len(ip_list) (--ips lists {})", nnodes, listed));
  }
  if (nnodes < listed) {
    ips.resize(static_cast<size_t>(std::max(nnodes, 1)));
    *warning = fmt::format(
        "only the first {} nnodes in ip_list will be retained when nnodes {} < len(ip_list)",
        nnodes, nnodes);
  }
  return ips;
}

MasterSettings IpsMasterSettings(const LaunchOptions& options, const EnvMap& env,
                                 std::vector<std::string>* warnings) {
  MasterSettings settings = CommonSettings(options, env);
  settings.ips = SplitAndStrip(options.ips, ',');
  settings.nnodes = static_cast<int>(settings.ips.size());
  settings.rank = -1;  // The position of this node in the list, found by the run.
  std::optional<int> port;
  if (options.master && !options.master->empty()) {
    const MasterForm form = ParseMasterForm(*options.master);
    port = form.port;
    if (!form.host.empty()) {
      const auto at = std::find(settings.ips.begin(), settings.ips.end(), form.host);
      if (at != settings.ips.end()) {
        settings.master_index = static_cast<size_t>(at - settings.ips.begin());
      } else {
        warnings->push_back(fmt::format("master {} will be reset when master not in ip_list {}.",
                                        *options.master, PythonListRepr(settings.ips)));
      }
    }
  }
  if (!port) port = PaddlePort(env);
  settings.master_host = settings.ips.at(settings.master_index);
  settings.master_given = true;
  settings.master_port = port.value_or(0);
  settings.handshake = !port;
  return settings;
}

LaunchPath SelectLaunchPath(const LaunchOptions& options, const EnvMap& env) {
  LaunchPath path;
  const std::string nnodes = options.nnodes.value_or("1");
  const bool range = nnodes.find(':') != std::string::npos;
  const std::string master = options.master.value_or("");
  if (master.starts_with(kEtcdScheme)) {
    path.kind = LaunchPath::Kind::kEtcd;
    path.etcd_server = master.substr(kEtcdScheme.size());
    ParseEndpoint(path.etcd_server);
    path.etcd_np = nnodes;
    return path;
  }
  if (range) {
    throw UsageError(
        fmt::format("argument --nnodes: '{}' is a range, which needs an etcd master "
                    "(--master etcd://host:port); the HTTP master needs a fixed node count",
                    nnodes));
  }
  const int count = FirstCount(nnodes);
  const size_t ips = SplitAndStrip(options.ips, ',').size();
  const bool multi_ips = options.WasGiven("ips") && ips > 1;
  if (multi_ips && options.WasGiven("nnodes") && count != static_cast<int>(ips)) {
    throw UsageError(fmt::format("argument --nnodes: {} but --ips lists {} nodes", count, ips));
  }
  if (multi_ips && options.nodes_meet && UsesNewInterface(options)) {
    // Paddle 3's update_by_ips: the nodes of the list meet at a master on one of them.
    path.master = IpsMasterSettings(options, env, &path.warnings);
    path.kind = LaunchPath::Kind::kMaster;
    return path;
  }
  MasterSettings settings = CommonSettings(options, env);
  settings.nnodes = count;
  settings.rank = options.rank;
  if (const std::optional<int> rank = TrainerIdRank(env)) settings.rank = *rank;
  if (settings.rank >= count && (count > 1 || options.WasGiven("rank"))) {
    throw UsageError(fmt::format("argument --rank: {} is not below --nnodes {} (ranks 0..{})",
                                 settings.rank, count, count - 1));
  }
  if (!master.empty()) {
    SetGivenMaster(master, env, multi_ips ? SplitAndStrip(options.ips, ',').front() : "", settings);
  }
  path.master = settings;
  // One node (no master contacted; the settings still serve a one-node PS or RPC job), or --ips.
  if (count >= 2 && !multi_ips) path.kind = LaunchPath::Kind::kMaster;
  return path;
}

}  // namespace pdlaunch
