#include "pdlaunch/coord/store_exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

constexpr size_t kDigestLength = 16;
constexpr size_t kMacLength = 64;
constexpr std::string_view kNoDigest = "0000000000000000";

struct Record {
  std::string_view digest;
  std::string_view value;
};

bool IsHex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string MacText(std::string_view key, std::string_view digest, std::string_view value) {
  std::string text;
  text.reserve(key.size() + digest.size() + value.size() + 2);
  text.append(key).append(1, '\0').append(digest).append(1, '\0').append(value);
  return text;
}

// The record in `kv`, or why it is not one (`why` set).
std::optional<Record> ParseRecord(const KeyValue& kv, const JobToken* token, std::string& why) {
  const std::string_view text = kv.value;
  if (text.size() <= kDigestLength || !IsHex(text.substr(0, kDigestLength))) {
    why = "not a record";
    return std::nullopt;
  }
  const std::string_view digest = text.substr(0, kDigestLength);
  std::string_view mac;
  size_t header = kDigestLength + 1;
  if (text[kDigestLength] == ':') {
    header += kMacLength + 1;
    if (text.size() < header || !IsHex(text.substr(kDigestLength + 1, kMacLength)) ||
        text[header - 1] != ' ') {
      why = "not a record";
      return std::nullopt;
    }
    mac = text.substr(kDigestLength + 1, kMacLength);
  } else if (text[kDigestLength] != ' ') {
    why = "not a record";
    return std::nullopt;
  }
  const std::string_view value = text.substr(header);
  if (value.size() > kMaxExchangeValue) {
    why = fmt::format("its value is {} bytes, over {}", value.size(), kMaxExchangeValue);
    return std::nullopt;
  }
  if (token && mac.empty()) {
    why = fmt::format("it carries no MAC under {} (forged, or a node without the token)",
                      kJobTokenVariable);
    return std::nullopt;
  }
  if (token && !token->Verify(MacText(kv.key, digest, value), mac)) {
    why = fmt::format("its MAC is not one under this node's {} (forged, or another token)",
                      kJobTokenVariable);
    return std::nullopt;
  }
  if (!token && !mac.empty()) {
    why = fmt::format("it carries a MAC: its node has {} and this one has not", kJobTokenVariable);
    return std::nullopt;
  }
  return Record{digest, value};
}

// The records of `kvs` (the others in `ignored`), and the kvs they came from.
struct Records {
  std::vector<KeyValue> kvs;
  std::vector<Record> records;
  std::vector<IgnoredKey> ignored;
};

Records ParseRecords(const std::vector<KeyValue>& kvs, const JobToken* token) {
  Records out;
  out.kvs.reserve(kvs.size());
  for (const KeyValue& kv : kvs) {
    std::string why;
    if (ParseRecord(kv, token, why)) {
      out.kvs.push_back(kv);
    } else {
      out.ignored.push_back({OneLine(kv.key.substr(0, 200)), std::move(why)});
    }
  }
  // Parsed again on the kept copies: a Record views the text it came from.
  for (const KeyValue& kv : out.kvs) {
    std::string why;
    out.records.push_back(*ParseRecord(kv, token, why));
  }
  return out;
}

bool HasKey(const std::vector<KeyValue>& kvs, std::string_view key) {
  return std::any_of(kvs.begin(), kvs.end(), [&](const KeyValue& kv) { return kv.key == key; });
}

// The value a record carries, past its digest and MAC; the whole text when it is not a record.
std::string_view ValueOf(std::string_view text) {
  if (text.size() > kDigestLength && text[kDigestLength] == ' ') {
    return text.substr(kDigestLength + 1);
  }
  if (text.size() > kDigestLength + kMacLength + 1 && text[kDigestLength] == ':') {
    return text.substr(kDigestLength + kMacLength + 2);
  }
  return text;
}

}  // namespace

std::string ExchangePrefix(std::string_view scope, std::string_view session,
                           std::string_view name) {
  if (session.empty()) return fmt::format("/pdlaunch/auto_tuner/{}/{}/", scope, name);
  return fmt::format("/pdlaunch/auto_tuner/{}/{}/{}/", scope, session, name);
}

std::string EncodeExchangeRecord(std::string_view key, std::string_view digest,
                                 std::string_view value, const JobToken* token) {
  const std::string_view confirmed = digest.empty() ? kNoDigest : digest;
  if (!token) return fmt::format("{} {}", confirmed, value);
  return fmt::format("{}:{} {}", confirmed, token->Mac(MacText(key, confirmed, value)), value);
}

ExchangeStep DecideExchange(const std::vector<KeyValue>& kvs, size_t nodes,
                            std::string_view own_key, std::string_view own_record,
                            const JobToken* token) {
  ExchangeStep step;
  const auto own =
      std::find_if(kvs.begin(), kvs.end(), [&](const KeyValue& kv) { return kv.key == own_key; });
  if (own == kvs.end() || own->value != own_record) {
    step.kind = ExchangeStep::Kind::kRepair;
    return step;
  }
  Records parsed = ParseRecords(kvs, token);
  step.ignored = std::move(parsed.ignored);
  if (parsed.kvs.size() != nodes || !HasKey(parsed.kvs, own_key)) return step;
  step.digest = ExchangeSession(parsed.kvs);
  bool all = true;
  for (size_t i = 0; i < parsed.kvs.size(); ++i) {
    const bool confirms = parsed.records[i].digest == step.digest;
    if (parsed.kvs[i].key == own_key && !confirms) {
      step.kind = ExchangeStep::Kind::kConfirm;
      return step;
    }
    all = all && confirms;
  }
  if (!all) return step;
  step.kind = ExchangeStep::Kind::kDone;
  for (const Record& record : parsed.records) step.values.emplace_back(record.value);
  return step;
}

std::string ExchangeShortfall(const std::vector<KeyValue>& kvs, size_t nodes,
                              std::string_view own_key, const JobToken* token) {
  const Records parsed = ParseRecords(kvs, token);
  const std::vector<KeyValue>& records = parsed.kvs;
  const std::string ignored =
      parsed.ignored.empty()
          ? std::string()
          : fmt::format("; {} more key{} under the prefix {} not a record and {} ignored",
                        parsed.ignored.size(), parsed.ignored.size() == 1 ? "" : "s",
                        parsed.ignored.size() == 1 ? "is" : "are",
                        parsed.ignored.size() == 1 ? "was" : "were");
  const bool own = HasKey(records, own_key);
  if (records.size() < nodes) {
    return fmt::format("{} of the {} nodes came{}", records.size(), nodes, ignored);
  }
  if (records.size() == nodes && own) {
    const std::string digest = ExchangeSession(records);
    size_t unconfirmed = 0;
    for (const Record& record : parsed.records) {
      if (record.digest != digest) ++unconfirmed;
    }
    return fmt::format(
        "the {} nodes' records are there, but {} never confirmed them (a record left by a node "
        "of a search of the same --job_id that stopped seconds before, which goes with its "
        "lease within 30 s){}",
        nodes, unconfirmed, ignored);
  }
  const size_t unleased = static_cast<size_t>(std::count_if(
      records.begin(), records.end(), [](const KeyValue& kv) { return kv.lease == 0; }));
  const std::string leases =
      unleased == 0
          ? std::string(
                "another node too many, or records of a search of the same --job_id that "
                "stopped seconds before without removing them: they go with their lease within "
                "30 s")
          : fmt::format(
                "{} of them with no lease, which no node of pdlaunch writes and which stay "
                "until someone removes them (etcdctl del --prefix /pdlaunch/auto_tuner/)",
                unleased);
  return fmt::format("{} records for {} nodes{} ({}){}", records.size(), nodes,
                     own ? "" : ", this node's own not among them", leases, ignored);
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
  // Each key and value with its length: no two sets of records read as one text.
  std::string text;
  for (const KeyValue& kv : kvs) {
    const std::string_view value = ValueOf(kv.value);
    fmt::format_to(std::back_inserter(text), "{}:{}\n{}:{}\n", kv.key.size(), kv.key, value.size(),
                   value);
  }
  return ExchangeDigest(text);
}

}  // namespace pdlaunch
