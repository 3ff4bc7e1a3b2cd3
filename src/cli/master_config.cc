#include "pdlaunch/cli/master_config.h"

#include <fmt/format.h>

#include <charconv>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/cli/cli.h"

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

bool UsesNewInterface(const LaunchOptions& options) {
  if (options.legacy) return false;
  // --job_id is also the legacy elastic mode's flag; without --elastic_server, typed on the
  // command line, it is today's launcher's job id (docs/cli.md, "Differences").
  const bool job_id_alone = options.WasGiven("job_id") && options.from_env.count("job_id") == 0 &&
                            !options.WasGiven("elastic_server") && !options.WasGiven("np");
  return !options.new_flags.empty() || options.WasGiven("master") || options.WasGiven("nnodes") ||
         job_id_alone;
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
    throw UsageError(fmt::format(
        "argument --nnodes: '{}' is a range, which needs an etcd master "
        "(--master etcd://host:port); the HTTP master needs a fixed node count",
        nnodes));
  }
  const int count = FirstCount(nnodes);
  const size_t ips = SplitAndStrip(options.ips, ',').size();
  const bool multi_ips = options.WasGiven("ips") && ips > 1;
  if (multi_ips && options.WasGiven("nnodes") && count != static_cast<int>(ips)) {
    throw UsageError(fmt::format("argument --nnodes: {} but --ips lists {} nodes", count, ips));
  }
  MasterSettings settings;
  settings.nnodes = count;
  settings.rank = options.rank;
  if (const std::optional<int> rank = TrainerIdRank(env)) settings.rank = *rank;
  if (settings.rank >= count && (count > 1 || options.WasGiven("rank"))) {
    throw UsageError(fmt::format("argument --rank: {} is not below --nnodes {} (ranks 0..{})",
                                 settings.rank, count, count - 1));
  }
  if (!master.empty()) {
    std::string text = master;
    if (text.starts_with(kHttpScheme)) text = text.substr(kHttpScheme.size());
    if (text.find(':') == std::string::npos) {
      throw UsageError(fmt::format("argument --master: '{}' needs host:port", master));
    }
    Endpoint endpoint;
    try {
      endpoint = ParseEndpoint(text);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("argument --master: {}", e.what()));
    }
    settings.master_given = true;
    settings.master_host = endpoint.host;
    settings.master_port = endpoint.port;
  }
  settings.job_id = options.job_id.value_or("default");
  settings.sort_ip = options.sort_ip;
  if (options.host && !options.host->empty()) {
    settings.host = options.host;
  } else if (auto it = env.find("POD_IP"); it != env.end() && !it->second.empty()) {
    settings.host = it->second;
  }
  settings.rendezvous_timeout = options.rendezvous_timeout;
  settings.heartbeat_timeout = options.heartbeat_timeout;
  path.master = settings;
  // One node (no master contacted; the settings still serve a one-node PS or RPC job), or --ips.
  if (count >= 2 && !multi_ips) path.kind = LaunchPath::Kind::kMaster;
  return path;
}

}  // namespace pdlaunch
