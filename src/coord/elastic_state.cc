#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "pdlaunch/base/exit_status.h"
#include "pdlaunch/base/json_number.h"
#include "pdlaunch/coord/elastic.h"

namespace pdlaunch {

namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxPort = 65535;

// Never throws: invalid UTF-8 in a string is replaced rather than refused.
std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<Json> ParseObject(std::string_view text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  return json;
}

const Json* Field(const Json& object, const char* name) {
  const auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

std::optional<int64_t> IntField(const Json& object, const char* name, int64_t min, int64_t max) {
  const Json* value = Field(object, name);
  return value ? JsonIntIn(*value, min, max) : std::nullopt;
}

std::optional<std::string> StringField(const Json& object, const char* name) {
  const Json* value = Field(object, name);
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

Json NodeJson(const NodeRecord& record) {
  Json json = Json::object();
  json["host"] = record.host;
  json["ports"] = record.ports;
  json["master_port"] = record.master_port;
  json["pid"] = record.pid;
  return json;
}

std::optional<std::vector<int>> Ports(const Json& object) {
  const Json* ports = Field(object, "ports");
  if (ports == nullptr || !ports->is_array()) return std::nullopt;
  std::vector<int> result;
  for (const Json& port : *ports) {
    const auto value = JsonIntIn(port, 1, kMaxPort);
    if (!value) return std::nullopt;
    result.push_back(static_cast<int>(*value));
  }
  return result;
}

std::optional<NodeRecord> NodeFromJson(const Json& json) {
  if (!json.is_object()) return std::nullopt;
  auto host = StringField(json, "host");
  auto ports = Ports(json);
  const auto master_port = IntField(json, "master_port", 0, kMaxPort);
  const auto pid = IntField(json, "pid", 0, kIntMax);
  if (!host || host->empty() || !ports || !master_port || !pid) return std::nullopt;
  return NodeRecord{std::move(*host), std::move(*ports), static_cast<int>(*master_port),
                    static_cast<int>(*pid)};
}

std::optional<std::vector<std::string>> Members(const Json& object) {
  const Json* members = Field(object, "members");
  if (members == nullptr || !members->is_array()) return std::nullopt;
  std::vector<std::string> result;
  for (const Json& member : *members) {
    if (!member.is_string() || member.get_ref<const std::string&>().empty()) return std::nullopt;
    result.push_back(member.get<std::string>());
  }
  std::vector<std::string> sorted = result;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
  return result;
}

std::optional<std::vector<NodeRecord>> Nodes(const Json& object) {
  const Json* nodes = Field(object, "nodes");
  if (nodes == nullptr || !nodes->is_array()) return std::nullopt;
  std::vector<NodeRecord> result;
  for (const Json& node : *nodes) {
    auto record = NodeFromJson(node);
    if (!record) return std::nullopt;
    result.push_back(std::move(*record));
  }
  return result;
}

// A whole decimal number in [min, max], nothing else (keys and values we wrote ourselves).
std::optional<int64_t> Decimal(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

// A path component that is a whole id: not empty, no '/'.
bool IsId(std::string_view text) { return !text.empty() && text.find('/') == text.npos; }

void AddNode(JobState& state, std::string_view id, const KeyValue& kv) {
  if (!IsId(id)) return;
  if (auto record = DecodeNodeRecord(kv.value)) {
    state.nodes.push_back(ElasticNode{std::string(id), std::move(*record), kv.create_revision});
  }
}

void AddFailure(JobState& state, std::string_view generation_text, const std::string& value) {
  const auto generation = Decimal(generation_text, 1, kInt64Max);
  auto failure = DecodeFailureRecord(value);
  if (generation && failure && failure->generation == *generation) {
    state.failures.emplace(*generation, std::move(*failure));
  }
}

// "done/<gen>/<id>": the value does not matter.
void AddDone(JobState& state, std::string_view rest) {
  const size_t slash = rest.find('/');
  if (slash == rest.npos) return;
  const auto generation = Decimal(rest.substr(0, slash), 1, kInt64Max);
  const std::string_view id = rest.substr(slash + 1);
  if (generation && IsId(id)) state.done[*generation].emplace(id);
}

void AddKey(JobState& state, std::string_view rest, const KeyValue& kv) {
  constexpr std::string_view kNodes = "nodes/";
  constexpr std::string_view kFailure = "failure/";
  constexpr std::string_view kDone = "done/";
  if (rest == "np") {
    if (auto np = Decimal(kv.value, 1, kIntMax)) state.np = static_cast<int>(*np);
  } else if (rest == "world") {
    state.world = DecodeWorldRecord(kv.value);
    state.world_mod_revision = kv.mod_revision;
  } else if (rest.starts_with(kNodes)) {
    AddNode(state, rest.substr(kNodes.size()), kv);
  } else if (rest.starts_with(kFailure)) {
    AddFailure(state, rest.substr(kFailure.size()), kv.value);
  } else if (rest.starts_with(kDone)) {
    AddDone(state, rest.substr(kDone.size()));
  }
}

}  // namespace

std::string EncodeNodeRecord(const NodeRecord& record) { return Dump(NodeJson(record)); }

std::optional<NodeRecord> DecodeNodeRecord(std::string_view text) {
  const std::optional<Json> json = ParseObject(text);
  return json ? NodeFromJson(*json) : std::nullopt;
}

std::string EncodeWorldRecord(const WorldRecord& world) {
  Json json = Json::object();
  json["generation"] = world.generation;
  json["restarts"] = world.restarts;
  json["members"] = world.members;
  json["nodes"] = Json::array();
  for (const NodeRecord& node : world.nodes) json["nodes"].push_back(NodeJson(node));
  return Dump(json);
}

std::optional<WorldRecord> DecodeWorldRecord(std::string_view text) {
  const std::optional<Json> json = ParseObject(text);
  if (!json) return std::nullopt;
  const auto generation = IntField(*json, "generation", 1, kInt64Max);
  const auto restarts = IntField(*json, "restarts", 0, kIntMax);
  auto members = Members(*json);
  auto nodes = Nodes(*json);
  if (!generation || !restarts || !members || !nodes || members->size() != nodes->size()) {
    return std::nullopt;
  }
  return WorldRecord{*generation, static_cast<int>(*restarts), std::move(*members),
                     std::move(*nodes)};
}

std::string EncodeFailureRecord(const FailureRecord& failure) {
  Json json = Json::object();
  json["generation"] = failure.generation;
  json["node"] = failure.node;
  json["host"] = failure.host;
  json["rank"] = failure.rank;
  if (failure.exit_code) json["exit_code"] = *failure.exit_code;
  if (failure.signal) json["signal"] = *failure.signal;
  return Dump(json);
}

std::optional<FailureRecord> DecodeFailureRecord(std::string_view text) {
  const std::optional<Json> json = ParseObject(text);
  if (!json) return std::nullopt;
  FailureRecord failure;
  const auto generation = IntField(*json, "generation", 1, kInt64Max);
  auto node = StringField(*json, "node");
  auto host = StringField(*json, "host");
  const auto rank = IntField(*json, "rank", 0, kIntMax);
  const auto exit_code = IntField(*json, "exit_code", -kIntMax - 1, kIntMax);
  const auto signal = IntField(*json, "signal", 1, kIntMax);
  const bool has_exit_code = Field(*json, "exit_code") != nullptr;
  const bool has_signal = Field(*json, "signal") != nullptr;
  if (!generation || !node || !host || !rank || has_exit_code == has_signal ||
      has_exit_code != exit_code.has_value() || has_signal != signal.has_value()) {
    return std::nullopt;
  }
  failure.generation = *generation;
  failure.node = std::move(*node);
  failure.host = std::move(*host);
  failure.rank = static_cast<int>(*rank);
  if (exit_code) failure.exit_code = static_cast<int>(*exit_code);
  if (signal) failure.signal = static_cast<int>(*signal);
  return failure;
}

std::string DescribeFailure(const FailureRecord& failure, int pid) {
  std::string line = fmt::format("rank {} on node {}", failure.rank, failure.host);
  if (pid != 0) line += fmt::format(" (launcher pid {})", pid);
  if (failure.signal) {
    return line + fmt::format(" was killed by signal {} ({})", *failure.signal,
                              SignalName(*failure.signal));
  }
  if (failure.exit_code) return line + fmt::format(" exited with code {}", *failure.exit_code);
  return line + " failed";
}

ElasticKeys::ElasticKeys(std::string job_id) : job(std::move(job_id)) {}

std::string ElasticKeys::status() const { return "/paddle/" + job; }
std::string ElasticKeys::prefix() const { return status() + "/"; }
std::string ElasticKeys::nodes() const { return prefix() + "nodes/"; }
std::string ElasticKeys::node(const std::string& id) const { return nodes() + id; }
std::string ElasticKeys::np() const { return prefix() + "np"; }
std::string ElasticKeys::endpoints() const { return prefix() + "endpoints"; }
std::string ElasticKeys::world() const { return prefix() + "world"; }

std::string ElasticKeys::failure(int64_t generation) const {
  return fmt::format("{}failure/{}", prefix(), generation);
}

std::string ElasticKeys::done(int64_t generation, const std::string& id) const {
  return fmt::format("{}done/{}/{}", prefix(), generation, id);
}

bool JobState::HasNode(const std::string& id) const {
  return std::any_of(nodes.begin(), nodes.end(),
                     [&id](const ElasticNode& node) { return node.id == id; });
}

JobState ParseJobState(const ElasticKeys& keys, const std::vector<KeyValue>& kvs) {
  JobState state;
  const std::string status = keys.status();
  const std::string prefix = keys.prefix();
  for (const KeyValue& kv : kvs) {
    if (kv.key == status) {
      state.status = kv.value;
    } else if (kv.key.starts_with(prefix)) {
      AddKey(state, std::string_view(kv.key).substr(prefix.size()), kv);
    }
  }
  std::stable_sort(state.nodes.begin(), state.nodes.end(),
                   [](const ElasticNode& a, const ElasticNode& b) {
                     return a.create_revision < b.create_revision;
                   });
  return state;
}

}  // namespace pdlaunch
