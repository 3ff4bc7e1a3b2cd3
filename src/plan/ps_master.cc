#include "pdlaunch/plan/ps_master.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/json_number.h"
#include "pdlaunch/base/json_string.h"

namespace pdlaunch {

std::string EncodePsPeer(const PsPeerInfo& peer) {
  const auto list = [](const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + EncodeJsonString(items[i]);
    return out + "]";
  };
  return fmt::format(
      "{{\"name\": {}, \"rank\": {}, \"servers\": {}, \"trainers\": {}, \"dtype\": {}, "
      "\"gloo_port\": {}}}",
      EncodeJsonString(peer.name), peer.rank, list(peer.servers), list(peer.trainers),
      EncodeJsonString(peer.dtype), peer.gloo_port);
}

PsPeerInfo DecodePsPeer(const std::string& key, const std::string& value) {
  const nlohmann::json json = nlohmann::json::parse(value, nullptr, false);
  const auto bad = [&](const std::string& what) {
    return LaunchError(
        fmt::format("parameter-server peer {} at the master: {}", OneLine(key), OneLine(what)));
  };
  if (json.is_discarded() || !json.is_object()) throw bad("not a JSON object");
  // Integers in range only: a float (1e300) or a huge number is malformed, never cast.
  const auto checked_int = [&](const char* name, int64_t min, int64_t max) {
    const std::optional<int64_t> number = JsonIntIn(json.at(name), min, max);
    if (!number) throw bad(fmt::format("\"{}\" is not an integer in [{}, {}]", name, min, max));
    return *number;
  };
  PsPeerInfo peer;
  try {
    peer.name = json.at("name").get<std::string>();
    peer.rank = static_cast<int>(checked_int("rank", -1, 1 << 24));  // -1: auto
    peer.servers = json.at("servers").get<std::vector<std::string>>();
    peer.trainers = json.at("trainers").get<std::vector<std::string>>();
    const auto dtype = json.find("dtype");
    peer.dtype = dtype == json.end() ? "cpu" : dtype->get<std::string>();
    peer.gloo_port = static_cast<int>(checked_int("gloo_port", 0, 65535));
  } catch (const nlohmann::json::exception& e) {
    throw bad(e.what());
  }
  try {
    for (const std::string& e : peer.servers) ParseEndpoint(e);
    for (const std::string& e : peer.trainers) ParseEndpoint(e);
  } catch (const LaunchError& e) {
    throw bad(e.what());
  }
  return peer;
}

std::pair<int, int> PsMasterCounts(const LaunchOptions& options) {
  const int servers = options.server_num.value_or(0);
  const int trainers = options.worker_num.value_or(0);
  return {servers > 0 ? servers : 1, trainers > 0 ? trainers : 1};
}

std::vector<PsProcess> PlanPsFromPeers(const std::vector<PsPeerInfo>& peers, int own_index,
                                       const std::string& node_ip, const std::string& pod,
                                       const JobEnv& job) {
  std::vector<std::string> servers;
  std::vector<std::string> trainers;
  size_t server_offset = 0;
  size_t trainer_offset = 0;
  for (size_t k = 0; k < peers.size(); ++k) {
    if (static_cast<int>(k) == own_index) {
      server_offset = servers.size();
      trainer_offset = trainers.size();
    }
    servers.insert(servers.end(), peers[k].servers.begin(), peers[k].servers.end());
    trainers.insert(trainers.end(), peers[k].trainers.begin(), peers[k].trainers.end());
  }
  const std::string server_list = fmt::format("{}", fmt::join(servers, ","));
  const std::string trainer_list = fmt::format("{}", fmt::join(trainers, ","));
  const std::string gloo_host = servers.empty() ? node_ip : ParseEndpoint(servers.front()).host;
  const std::string gloo = Endpoint{gloo_host, peers.front().gloo_port}.ToString();
  const PsPeerInfo& own = peers.at(static_cast<size_t>(own_index));
  std::vector<PsProcess> processes;
  const auto add = [&](PsRole role, size_t i, const std::string& endpoint, size_t global) {
    PsProcess p;
    p.role = role;
    p.local_index = static_cast<int>(i);
    p.global_id = static_cast<int>(global);
    p.endpoint = ParseEndpoint(endpoint);
    const bool server = role == PsRole::kServer;
    p.log_name = fmt::format("{}.{}", server ? "serverlog" : "workerlog", i);
    p.env = {{"PADDLE_NNODES", std::to_string(peers.size())},
             {"PADDLE_PSERVERS_IP_PORT_LIST", server_list},
             {"PADDLE_TRAINER_ENDPOINTS", trainer_list},
             {"PADDLE_PORT", std::to_string(p.endpoint.port)},
             {"PADDLE_ROLE", server ? "PSERVER" : "TRAINER"},
             {"TRAINING_ROLE", server ? "PSERVER" : "TRAINER"},
             {"PADDLE_TRAINERS_NUM", std::to_string(trainers.size())}};
    if (!server) p.env.emplace_back("PADDLE_TRAINER_ID", std::to_string(global));
    p.env.insert(p.env.end(), {{"POD_IP", node_ip},
                               {"PADDLE_GLOO_RENDEZVOUS", "3"},
                               {"PADDLE_GLOO_FS_PATH", job.gloo_fs_path},
                               {"PADDLE_GLOO_HTTP_ENDPOINT", gloo},
                               {"PADDLE_WITH_GLOO", job.with_gloo},
                               {"POD_NAME", pod},
                               {"PADDLE_LOG_DIR", job.log_dir}});
    processes.push_back(std::move(p));
  };
  for (size_t i = 0; i < own.servers.size(); ++i) {
    add(PsRole::kServer, i, own.servers[i], server_offset + i);
  }
  for (size_t i = 0; i < own.trainers.size(); ++i) {
    add(PsRole::kWorker, i, own.trainers[i], trainer_offset + i);
  }
  return processes;
}

}  // namespace pdlaunch
