#include "pdlaunch/coord/store_exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

constexpr size_t kDigestLength = 16;
constexpr std::string_view kNoDigest = "0000000000000000";

struct Record {
  std::string_view digest;
  std::string_view value;
};

Record ParseRecord(const KeyValue& kv) {
  const std::string_view text = kv.value;
  const bool hex = text.size() > kDigestLength &&
                   std::all_of(text.begin(), text.begin() + kDigestLength, [](char c) {
                     return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                   });
  if (!hex || text[kDigestLength] != ' ') {
    throw LaunchError(
        fmt::format("the record of {} in the exchange is not one", OneLine(kv.key.substr(0, 200))));
  }
  if (text.size() - kDigestLength - 1 > kMaxExchangeValue) {
    throw LaunchError(fmt::format("the value of {} in the exchange is {} bytes, over {}",
                                  OneLine(kv.key.substr(0, 200)), text.size() - kDigestLength - 1,
                                  kMaxExchangeValue));
  }
  return {text.substr(0, kDigestLength), text.substr(kDigestLength + 1)};
}

bool HasKey(const std::vector<KeyValue>& kvs, std::string_view key) {
  return std::any_of(kvs.begin(), kvs.end(), [&](const KeyValue& kv) { return kv.key == key; });
}

}  // namespace

std::string ExchangePrefix(std::string_view scope, std::string_view session,
                           std::string_view name) {
  if (session.empty()) return fmt::format("/pdlaunch/auto_tuner/{}/{}/", scope, name);
  return fmt::format("/pdlaunch/auto_tuner/{}/{}/{}/", scope, session, name);
}

std::string EncodeExchangeRecord(std::string_view digest, std::string_view value) {
  return fmt::format("{} {}", digest.empty() ? kNoDigest : digest, value);
}

ExchangeStep DecideExchange(const std::vector<KeyValue>& kvs, size_t nodes,
                            std::string_view own_key) {
  std::vector<Record> records;
  for (const KeyValue& kv : kvs) records.push_back(ParseRecord(kv));
  ExchangeStep step;
  if (kvs.size() != nodes || !HasKey(kvs, own_key)) return step;
  step.digest = ExchangeSession(kvs);
  bool all = true;
  for (size_t i = 0; i < kvs.size(); ++i) {
    const bool confirms = records[i].digest == step.digest;
    if (kvs[i].key == own_key && !confirms) {
      step.kind = ExchangeStep::Kind::kConfirm;
      return step;
    }
    all = all && confirms;
  }
  if (!all) return step;
  step.kind = ExchangeStep::Kind::kDone;
  for (const Record& record : records) step.values.emplace_back(record.value);
  return step;
}

std::string ExchangeShortfall(const std::vector<KeyValue>& kvs, size_t nodes,
                              std::string_view own_key) {
  const bool own = HasKey(kvs, own_key);
  if (kvs.size() < nodes || (kvs.size() == nodes && own)) {
    if (kvs.size() < nodes) return fmt::format("{} of the {} nodes came", kvs.size(), nodes);
    const std::string digest = ExchangeSession(kvs);
    size_t unconfirmed = 0;
    for (const KeyValue& kv : kvs) {
      if (kv.value.substr(0, kDigestLength) != digest) ++unconfirmed;
    }
    return fmt::format(
        "the {} nodes' keys are there, but {} never confirmed them (a key left by a node of a "
        "search of the same --job_id that stopped seconds before, which goes with its lease "
        "within 30 s)",
        nodes, unconfirmed);
  }
  return fmt::format(
      "{} keys for {} nodes{} (another node too many, or keys of a search of the same "
      "--job_id that stopped seconds before without removing them: they go with their lease "
      "within 30 s)",
      kvs.size(), nodes, own ? "" : ", this node's own not among them");
}

std::string ExchangeDigest(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return fmt::format("{:016x}", hash);
}

std::string ExchangeSession(const std::vector<KeyValue>& kvs) {
  std::string keys;
  for (const KeyValue& kv : kvs) keys += kv.key + '\n';
  return ExchangeDigest(keys);
}

}  // namespace pdlaunch
