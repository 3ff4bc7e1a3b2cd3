#include "pdlaunch/coord/rendezvous.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
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
    return LaunchError(
        fmt::format("peer {} at the master has a malformed \"{}\"", OneLine(key), name));
  };
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) throw malformed();
    return it->template get<std::string>();
  } else {
    static_assert(std::is_same_v<T, int>);
    const auto value =
        JsonIntIn(*it, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
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

// The fast path of DecodePeerInfo: the record exactly as json.dumps (and EncodePeerInfo) lays it
// out, plain strings (ReadPlainJsonString) and decimal integers in the range of int. False for
// any other layout; the full parser then decides. Every node reads the whole world's records:
// at 2,048 nodes this is four million records on the machine, each nlohmann parse ~1.3 us.
bool DecodeCanonicalPeer(std::string_view text, PeerInfo& peer) {
  size_t i = 0;
  const auto literal = [&](std::string_view expected) {
    if (text.substr(i, expected.size()) != expected) return false;
    i += expected.size();
    return true;
  };
  const auto integer = [&](int& out) {
    const char* begin = text.data() + i;
    const char* end = text.data() + text.size();
    const auto digit = [&](const char* p) { return p < end && *p >= '0' && *p <= '9'; };
    const char* first = begin < end && *begin == '-' ? begin + 1 : begin;
    if (!digit(first) || (*first == '0' && digit(first + 1))) return false;  // JSON's rules.
    const auto [stop, ec] = std::from_chars(begin, end, out);
    if (ec != std::errc()) return false;
    i += static_cast<size_t>(stop - begin);
    return i >= text.size() || (text[i] != '.' && text[i] != 'e' && text[i] != 'E');
  };
  return literal("{\"name\": ") && ReadPlainJsonString(text, i, peer.name) &&
         literal(", \"rank\": ") && integer(peer.rank) && literal(", \"replicas\": ") &&
         integer(peer.replicas) && literal(", \"dtype\": ") &&
         ReadPlainJsonString(text, i, peer.dtype) && literal(", \"candidate\": ") &&
         ReadPlainJsonString(text, i, peer.candidate) && literal(", \"endpoints\": ") &&
         ReadPlainJsonString(text, i, peer.endpoints) && literal("}") && i == text.size();
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
  PeerInfo peer;
  if (!DecodeCanonicalPeer(value, peer)) {
    const nlohmann::json json = nlohmann::json::parse(value, nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
      throw LaunchError(fmt::format("peer {} at the master is not a JSON object", OneLine(key)));
    }
    peer.name = Field<std::string>(json, "name", key);
    peer.rank = Field<int>(json, "rank", key);
    peer.replicas = Field<int>(json, "replicas", key);
    peer.dtype = Field<std::string>(json, "dtype", key);
    peer.candidate = Field<std::string>(json, "candidate", key);
    peer.endpoints = Field<std::string>(json, "endpoints", key);
  }
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
      std::vector<std::pair<int, std::string>> ranked;  // In rank order in the message.
      std::vector<std::string> without;
      for (const std::string& key : ordered) {
        const std::optional<int> rank = KeyRank(key);
        if (rank && *rank >= 0) {
          ranked.emplace_back(*rank, name_of(key));
        } else {
          without.push_back(name_of(key));
        }
      }
      std::sort(ranked.begin(), ranked.end());
      std::vector<std::string> with;
      for (const auto& [rank, name] : ranked) with.push_back(fmt::format("{} rank {}", name, rank));
      throw LaunchError(fmt::format(
          "{} of {} nodes gave --rank ({}) and {} did not ({}): give every node its rank or none",
          explicit_ranks, n, fmt::join(with, ", "), n - explicit_ranks, fmt::join(without, ", ")));
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

PeerOrder OrderPeers(const std::map<std::string, std::string>& entries, const std::string& own_key,
                     bool sort_ip) {
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

int OwnIndexInWorld(const WorldEntries& world, const std::string& own_key) {
  for (size_t i = 0; i < world.size(); ++i) {
    if (world[i].first == own_key) return static_cast<int>(i);
  }
  throw LaunchError(fmt::format(
      "the world formed with {} nodes without this node (its key {}): the job's nodes had "
      "registered before it; is this node one too many, or late from an earlier run?",
      world.size(), OneLine(own_key)));
}

PeerOrder PeersInOrder(const WorldEntries& world, const std::string& own_key) {
  PeerOrder order;
  order.own_index = OwnIndexInWorld(world, own_key);
  order.peers.reserve(world.size());
  order.keys.reserve(world.size());
  for (const auto& [key, value] : world) {
    order.peers.push_back(DecodePeerInfo(key, value));
    order.keys.push_back(key);
  }
  return order;
}

Cluster BuildMasterCluster(const PeerOrder& order, const DevicePlan& devices) {
  Cluster cluster;
  cluster.local_index = order.own_index;
  cluster.family = devices.family;
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
  if (failure.signal != 0) json["signal"] = failure.signal;
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
  const auto signal = json.find("signal");
  if (signal != json.end()) {
    if (const auto in_range = JsonIntIn(*signal, 1, 64))
      failure.signal = static_cast<int>(*in_range);
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
  if (!count ||
      (name != "collective" && name != "ps" && name != "rpc" && name != "legacy-collective")) {
    return std::nullopt;
  }
  return JobTerms{static_cast<int>(*count), name, ShownField(json, "node", "").substr(0, 256)};
}

std::optional<std::string> ForeignJobError(const std::string& master, const std::string& server,
                                           const std::string& served_job,
                                           const std::string& own_job) {
  if (!server.starts_with("pdlaunch/") || served_job.empty() || served_job == own_job) {
    return std::nullopt;
  }
  return fmt::format(
      "the master at {} serves job {}, not this node's job {}: give each job its own --master "
      "address or port",
      master, served_job, OneLine(own_job));
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

std::string InfoKeyPod(const MasterKeys& keys, const std::string& key) {
  const std::string prefix = keys.info_prefix();
  if (!key.starts_with(prefix)) return {};
  const size_t slash = key.find('/', prefix.size());
  return key.substr(prefix.size(), slash == std::string::npos ? slash : slash - prefix.size());
}

namespace {

// A member's record in the world record: a collective peer exactly as EncodePeerInfo writes it
// is sent as its six fields, "~name rank replicas dtype candidate endpoints" (a third of the
// bytes, and read without a JSON parser); any other record as it is (JSON starts with '{').
std::string CompactRecord(const std::string& value) {
  PeerInfo peer;
  if (!DecodeCanonicalPeer(value, peer) || EncodePeerInfo(peer) != value) return value;
  for (const std::string* field : {&peer.name, &peer.dtype, &peer.candidate, &peer.endpoints}) {
    if (field->empty() || field->find(' ') != std::string::npos) return value;
  }
  return fmt::format("~{} {} {} {} {} {}", peer.name, peer.rank, peer.replicas, peer.dtype,
                     peer.candidate, peer.endpoints);
}

std::string ExpandRecord(std::string_view record) {
  if (!record.starts_with('~')) return std::string(record);
  std::vector<std::string_view> fields;
  record.remove_prefix(1);
  while (fields.size() < 6) {
    const size_t space = fields.size() == 5 ? std::string_view::npos : record.find(' ');
    fields.push_back(record.substr(0, space));
    if (space == std::string_view::npos) break;
    record.remove_prefix(space + 1);
  }
  PeerInfo peer;
  const auto number = [](std::string_view text, int& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty();
  };
  if (fields.size() != 6 || record.find(' ') != std::string_view::npos ||
      !number(fields[1], peer.rank) || !number(fields[2], peer.replicas)) {
    throw LaunchError("the master's world record has a malformed member");
  }
  peer.name = fields[0];
  peer.dtype = fields[3];
  peer.candidate = fields[4];
  peer.endpoints = fields[5];
  return EncodePeerInfo(peer);  // DecodePeerInfo validates it as any other peer record.
}

}  // namespace

std::string EncodeWorld(const WorldEntries& entries) {
  size_t size = 16;
  for (const auto& [key, value] : entries) size += key.size() + value.size() + 24;
  std::string out;
  out.reserve(size);
  out += std::to_string(entries.size());
  out += '\n';
  const auto append = [&](const std::string& text) {
    out += std::to_string(text.size());
    out += ':';
    out += text;
    out += ',';
  };
  for (const auto& [key, value] : entries) {
    append(key);
    append(CompactRecord(value));
  }
  return out;
}

WorldEntries DecodeWorld(std::string_view text, size_t max_nodes) {
  const auto malformed = [](std::string_view what) {
    return LaunchError(fmt::format("the master's world record is malformed: {}", what));
  };
  size_t i = 0;
  // A decimal count or length: digits only, within `max`.
  const auto number = [&](char end, size_t max) {
    const size_t start = i;
    size_t value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 10) {
      value = value * 10 + static_cast<size_t>(text[i] - '0');
      ++i;
    }
    if (i == start || i >= text.size() || text[i] != end || value > max) {
      throw malformed(fmt::format("a bad number at byte {}", start));
    }
    ++i;
    return value;
  };
  const size_t n = number('\n', max_nodes);
  const auto netstring = [&] {
    const size_t length = number(':', text.size());
    if (length > text.size() - i || i + length >= text.size() || text[i + length] != ',') {
      throw malformed(fmt::format("a length past the end at byte {}", i));
    }
    std::string item(text.substr(i, length));
    i += length + 1;
    return item;
  };
  WorldEntries entries;
  entries.reserve(n);
  std::set<std::string_view> keys;
  for (size_t k = 0; k < n; ++k) {
    std::string key = netstring();
    std::string value = ExpandRecord(netstring());
    entries.emplace_back(std::move(key), std::move(value));
  }
  if (i != text.size()) throw malformed("bytes after the last member");
  for (const auto& entry : entries) {
    if (!keys.insert(entry.first).second) {
      throw malformed(fmt::format("{} is there twice", OneLine(entry.first.substr(0, 256))));
    }
  }
  return entries;
}

std::string EncodeFormed(const WorldFormed& formed) {
  if (!formed.error.empty())
    return fmt::format("{{\"error\": {}}}", EncodeJsonString(formed.error));
  return fmt::format("{{\"nodes\": {}}}", formed.nodes);
}

std::optional<WorldFormed> DecodeFormed(const std::string& value) {
  const nlohmann::json json = nlohmann::json::parse(value, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  if (const auto error = json.find("error"); error != json.end() && error->is_string()) {
    return WorldFormed{0, ShownField(json, "error", "")};
  }
  const auto nodes = json.find("nodes");
  if (nodes == json.end()) return std::nullopt;
  const std::optional<int64_t> count = JsonIntIn(*nodes, 1, 1000000);
  if (!count) return std::nullopt;
  return WorldFormed{static_cast<int>(*count), {}};
}

JobNews ParseNews(const MasterKeys& keys, const std::string& pod,
                  const std::map<std::string, std::string>& kvs) {
  JobNews news;
  if (const auto it = kvs.find(keys.terms()); it != kvs.end()) {
    news.terms = DecodeJobTerms(it->second);
  }
  if (const auto it = kvs.find(keys.refused(pod)); it != kvs.end()) {
    news.refused = OneLine(std::string_view(it->second).substr(0, 512));
  }
  if (const auto it = kvs.find(keys.formed()); it != kvs.end()) {
    // Malformed: the host's error is unknown, but the world will not come.
    news.formed = DecodeFormed(it->second)
                      .value_or(WorldFormed{0, fmt::format("malformed record {}",
                                                           OneLine(it->second.substr(0, 256)))});
  }
  if (const auto it = kvs.find(keys.failure()); it != kvs.end()) {
    news.failure = DecodeFailure(it->second);
  }
  news.complete = kvs.count(keys.complete()) != 0;
  return news;
}

NodeStep DecideNodeStep(const JobNews& news, const JobTerms& mine, bool formed) {
  NodeStep step;
  if (news.failure) {
    step.kind = NodeStep::Kind::kJobFailed;
    step.failure = *news.failure;
    return step;
  }
  if (formed) {
    if (news.complete) step.kind = NodeStep::Kind::kComplete;
    return step;
  }
  // A node whose --nnodes or run mode is not the job's would form a world of its own (silent
  // wrong training): it stops, whether or not the host has refused it yet.
  const std::optional<std::string> mismatch =
      news.terms ? TermsMismatch(*news.terms, mine) : std::nullopt;
  if (mismatch || news.refused) {
    step.kind = NodeStep::Kind::kRefused;
    step.reason = mismatch ? *mismatch : *news.refused;
  } else if (news.formed && !news.formed->error.empty()) {
    step.kind = NodeStep::Kind::kCannotForm;
    step.reason = news.formed->error;
  } else if (news.formed) {
    step.kind = NodeStep::Kind::kReadWorld;
  }
  return step;
}

}  // namespace pdlaunch
