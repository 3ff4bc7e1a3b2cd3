#include "pdlaunch/coord/rendezvous.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/json_number.h"
#include "pdlaunch/base/json_string.h"
#include "pdlaunch/coord/kv_http.h"

namespace pdlaunch {
namespace {

// The number of the last path segment of `key`, if it is an integer.
std::optional<int> KeyRank(const std::string& key) {
  const std::string_view last = std::string_view(key).substr(key.rfind('/') + 1);
  int rank = 0;
  const auto [end, ec] = std::from_chars(last.data(), last.data() + last.size(), rank);
  if (last.empty() || ec != std::errc() || end != last.data() + last.size()) return std::nullopt;
  return rank;
}

uint32_t Ipv4Number(const std::string& candidate) {
  std::string host;
  try {
    host = ParseEndpoint(candidate).host;
  } catch (const LaunchError&) {
    return 0;
  }
  in_addr address{};
  if (::inet_pton(AF_INET, host.c_str(), &address) != 1) return 0;
  return ntohl(address.s_addr);
}

// A field of a peer record, of exactly the type asked for: a string, or an integer in the range
// of int (a float such as 1e300, or an integer past INT_MAX, is malformed, never cast).
template <typename T>
T Field(const nlohmann::json& json, const char* name, const std::string& key) {
  const auto it = json.find(name);
  if (it == json.end()) {
    throw LaunchError(fmt::format("peer {} at the master has no \"{}\"", OneLine(key), name));
  }
  const auto malformed = [&] {
    return LaunchError(fmt::format("peer {} at the master has a malformed \"{}\"", OneLine(key),
                                   name));
  };
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) throw malformed();
    return it->template get<std::string>();
  } else {
    static_assert(std::is_same_v<T, int>);
    const auto value = JsonIntIn(*it, std::numeric_limits<int>::min(),
                                 std::numeric_limits<int>::max());
    if (!value) throw malformed();
    return static_cast<int>(*value);
  }
}

// A string field of a failure record for the console: escaped (OneLine) and cut to `max` bytes;
// `fallback` when absent or not a string.
std::string ShownField(const nlohmann::json& json, const char* name, std::string_view fallback) {
  constexpr size_t kMax = 2048;
  const auto it = json.find(name);
  const std::string_view text = it != json.end() && it->is_string()
                                    ? std::string_view(it->get_ref<const std::string&>())
                                    : fallback;
  std::string shown = OneLine(text.substr(0, kMax));
  if (text.size() > kMax) shown += "...";
  return shown;
}

}  // namespace

std::string EncodePeerInfo(const PeerInfo& peer) {
  return fmt::format(
      "{{\"name\": {}, \"rank\": {}, \"replicas\": {}, \"dtype\": {}, \"candidate\": {}, "
      "\"endpoints\": {}}}",
      EncodeJsonString(peer.name), peer.rank, peer.replicas, EncodeJsonString(peer.dtype),
      EncodeJsonString(peer.candidate), EncodeJsonString(peer.endpoints));
}

PeerInfo DecodePeerInfo(const std::string& key, const std::string& value) {
  const nlohmann::json json = nlohmann::json::parse(value, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    throw LaunchError(fmt::format("peer {} at the master is not a JSON object", OneLine(key)));
  }
  PeerInfo peer;
  peer.name = Field<std::string>(json, "name", key);
  peer.rank = Field<int>(json, "rank", key);
  peer.replicas = Field<int>(json, "replicas", key);
  peer.dtype = Field<std::string>(json, "dtype", key);
  peer.candidate = Field<std::string>(json, "candidate", key);
  peer.endpoints = Field<std::string>(json, "endpoints", key);
  // A pod name is a store key's part and shows in log lines: printable ASCII, bounded (Paddle's
  // are six letters and digits).
  const auto printable = [](char c) { return c > ' ' && c < 0x7f; };
  if (peer.name.empty() || peer.name.size() > 253 ||
      !std::all_of(peer.name.begin(), peer.name.end(), printable)) {
    throw LaunchError(fmt::format("peer {} at the master has a malformed \"name\"", OneLine(key)));
  }
  const std::vector<std::string> endpoints = SplitAndStrip(peer.endpoints, ',');
  if (peer.replicas < 1 || endpoints.size() != static_cast<size_t>(peer.replicas)) {
    throw LaunchError(fmt::format("peer {} at the master has {} endpoints for {} replicas",
                                  OneLine(key), endpoints.size(), peer.replicas));
  }
  try {
    ParseEndpoint(peer.candidate);
    for (const std::string& endpoint : endpoints) ParseEndpoint(endpoint);
  } catch (const LaunchError& e) {
    throw LaunchError(fmt::format("peer {} at the master: {}", OneLine(key), OneLine(e.what())));
  }
  return peer;
}

KeyOrder OrderKeys(const std::vector<std::string>& keys, const std::string& own_key,
                   const std::map<std::string, std::string>& names,
                   const std::map<std::string, std::string>* candidates) {
  const auto name_of = [&](const std::string& key) {
    const auto it = names.find(key);
    return it == names.end() ? key : it->second;
  };
  std::vector<std::string> ordered = keys;
  std::sort(ordered.begin(), ordered.end());
  size_t explicit_ranks = 0;
  for (const std::string& key : ordered) {
    const std::optional<int> rank = KeyRank(key);
    if (rank && *rank >= 0) ++explicit_ranks;
  }
  const size_t n = ordered.size();
  if (candidates) {
    std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
      return Ipv4Number(candidates->at(a)) < Ipv4Number(candidates->at(b));
    });
  } else if (explicit_ranks > 0) {
    if (explicit_ranks != n) {
      throw LaunchError(fmt::format(
          "{} of {} nodes gave --rank and the others did not: give every node its rank or none",
          explicit_ranks, n));
    }
    std::vector<std::optional<std::string>> placed(n);
    for (const std::string& key : ordered) {
      const int rank = *KeyRank(key);
      if (static_cast<size_t>(rank) >= n) {
        throw LaunchError(fmt::format("node {} has --rank {} but the job has {} nodes (0..{})",
                                      name_of(key), rank, n, n - 1));
      }
      if (placed[static_cast<size_t>(rank)]) {
        throw LaunchError(fmt::format("nodes {} and {} both have --rank {}",
                                      name_of(*placed[static_cast<size_t>(rank)]), name_of(key),
                                      rank));
      }
      placed[static_cast<size_t>(rank)] = key;
    }
    for (size_t i = 0; i < n; ++i) ordered[i] = *placed[i];
  }
  KeyOrder order;
  order.own_index = -1;
  for (size_t i = 0; i < n; ++i) {
    if (ordered[i] == own_key) order.own_index = static_cast<int>(i);
  }
  if (order.own_index < 0) {
    throw LaunchError(fmt::format("this node's key {} is missing at the master", own_key));
  }
  order.keys = std::move(ordered);
  return order;
}

PeerOrder OrderPeers(const std::map<std::string, std::string>& entries,
                     const std::string& own_key, bool sort_ip) {
  std::map<std::string, PeerInfo> peers;
  std::map<std::string, std::string> candidates;
  std::vector<std::string> keys;
  for (const auto& [key, value] : entries) {
    PeerInfo peer = DecodePeerInfo(key, value);
    candidates[key] = peer.candidate;
    keys.push_back(key);
    peers.emplace(key, std::move(peer));
  }
  const KeyOrder order = OrderKeys(keys, own_key, candidates, sort_ip ? &candidates : nullptr);
  PeerOrder result;
  result.own_index = order.own_index;
  result.keys = order.keys;
  for (const std::string& key : order.keys) result.peers.push_back(peers.at(key));
  return result;
}

Cluster BuildMasterCluster(const PeerOrder& order, const DevicePlan& devices) {
  Cluster cluster;
  cluster.local_index = order.own_index;
  cluster.mode = devices.mode;
  cluster.backend = devices.backend;
  cluster.master = ParseEndpoint(order.peers.front().candidate);
  int rank = 0;
  for (size_t k = 0; k < order.peers.size(); ++k) {
    const PeerInfo& peer = order.peers[k];
    Pod pod;
    pod.node_index = static_cast<int>(k);
    pod.ip = ParseEndpoint(peer.candidate).host;
    const std::vector<std::string> endpoints = SplitAndStrip(peer.endpoints, ',');
    for (size_t i = 0; i < endpoints.size(); ++i) {
      Trainer trainer;
      trainer.global_rank = rank++;
      trainer.local_rank = static_cast<int>(i);
      trainer.endpoint = ParseEndpoint(endpoints[i]);
      if (static_cast<int>(k) == order.own_index && i < devices.devices_per_proc.size()) {
        trainer.devices = devices.devices_per_proc[i];
      }
      pod.trainers.push_back(std::move(trainer));
    }
    cluster.pods.push_back(std::move(pod));
  }
  return cluster;
}

std::string EncodeFailure(const JobFailure& failure) {
  nlohmann::json json = {{"node", failure.node},
                         {"pod", failure.pod},
                         {"cause", failure.cause},
                         {"exit_code", failure.exit_code}};
  return json.dump();
}

JobFailure DecodeFailure(const std::string& value) {
  const nlohmann::json json = nlohmann::json::parse(value, nullptr, false);
  JobFailure failure;
  if (json.is_discarded() || !json.is_object()) {
    failure.cause = ShownField(nlohmann::json::object(), "cause", value);
    return failure;
  }
  // Whatever wrote it (any client of the master may), what is shown is escaped and bounded.
  failure.node = ShownField(json, "node", "");
  failure.pod = ShownField(json, "pod", "");
  failure.cause = ShownField(json, "cause", value);
  const auto code = json.find("exit_code");
  if (code != json.end()) {
    if (const auto in_range = JsonIntIn(*code, 1, 255)) {
      failure.exit_code = static_cast<int>(*in_range);
    }
  }
  return failure;
}

std::string EncodeJobTerms(const JobTerms& terms) {
  return fmt::format("{{\"nnodes\": {}, \"mode\": {}, \"node\": {}}}", terms.nnodes,
                     EncodeJsonString(terms.mode), EncodeJsonString(terms.node));
}

std::optional<JobTerms> DecodeJobTerms(const std::string& value) {
  const nlohmann::json json = nlohmann::json::parse(value, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  const auto nnodes = json.find("nnodes");
  const auto mode = json.find("mode");
  if (nnodes == json.end() || mode == json.end() || !mode->is_string()) return std::nullopt;
  const std::optional<int64_t> count = JsonIntIn(*nnodes, 1, 1000000);
  const std::string& name = mode->get_ref<const std::string&>();
  if (!count || (name != "collective" && name != "ps" && name != "rpc")) return std::nullopt;
  return JobTerms{static_cast<int>(*count), name, ShownField(json, "node", "").substr(0, 256)};
}

std::optional<std::string> TermsMismatch(const JobTerms& job, const JobTerms& node) {
  if (node.nnodes != job.nnodes) {
    return fmt::format("--nnodes {} where the job's is {}", node.nnodes, job.nnodes);
  }
  if (node.mode != job.mode) {
    return fmt::format("run mode {} where the job's is {}", node.mode, job.mode);
  }
  return std::nullopt;
}

CoordState ParseCoordState(const MasterKeys& keys, const std::map<std::string, std::string>& kvs) {
  CoordState state;
  const std::string alive = keys.alive("");
  const std::string done = keys.done("");
  const std::string node_terms = keys.node_terms("");
  const std::string refused = keys.refused("");
  for (const auto& [key, value] : kvs) {
    if (key.starts_with(alive) && key.size() > alive.size()) {
      state.alive.insert(key.substr(alive.size()));
    } else if (key.starts_with(done) && key.size() > done.size()) {
      int code = 1;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), code);
      if (ec != std::errc() || end != value.data() + value.size()) code = 1;
      state.done[key.substr(done.size())] = code;
    } else if (key == keys.failure()) {
      state.failure = DecodeFailure(value);
    } else if (key == keys.terms()) {
      state.terms = DecodeJobTerms(value);
    } else if (key.starts_with(node_terms) && key.size() > node_terms.size()) {
      if (const auto terms = DecodeJobTerms(value)) {
        state.node_terms[key.substr(node_terms.size())] = *terms;
      }
    } else if (key.starts_with(refused) && key.size() > refused.size()) {
      state.refused[key.substr(refused.size())] = OneLine(value.substr(0, 512));
    }
  }
  return state;
}

MasterStep DecideMasterStep(const CoordState& state, const std::vector<std::string>& members,
                            const std::set<std::string>& seen_alive) {
  MasterStep step;
  if (state.failure) {
    step.kind = MasterStep::Kind::kJobFailed;
    step.failure = *state.failure;
    return step;
  }
  bool all_done = true;
  for (const std::string& pod : members) {
    const bool done = state.done.count(pod) != 0;
    // A node never seen alive (Paddle's own launcher) reports nothing: not waited for.
    if (!done && seen_alive.count(pod) != 0) all_done = false;
    if (!done && state.alive.count(pod) == 0 && seen_alive.count(pod) != 0) {
      step.lost.push_back(pod);
    }
  }
  if (!step.lost.empty()) {
    step.kind = MasterStep::Kind::kNodesLost;
  } else if (all_done && !members.empty()) {
    step.kind = MasterStep::Kind::kAllDone;
  }
  return step;
}

}  // namespace pdlaunch
