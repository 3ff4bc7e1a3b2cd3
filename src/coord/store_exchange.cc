#include "pdlaunch/coord/store_exchange.h"

#include <fmt/format.h>

#include <cstdint>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {

std::string ExchangePrefix(std::string_view scope, std::string_view session,
                           std::string_view name) {
  if (session.empty()) return fmt::format("/pdlaunch/auto_tuner/{}/{}/", scope, name);
  return fmt::format("/pdlaunch/auto_tuner/{}/{}/{}/", scope, session, name);
}

std::optional<std::vector<std::string>> ReadExchange(const std::vector<KeyValue>& kvs, size_t nodes,
                                                     std::string_view own_key) {
  bool own = false;
  std::vector<std::string> values;
  for (const KeyValue& kv : kvs) {
    if (kv.value.size() > kMaxExchangeValue) {
      throw LaunchError(fmt::format("the value of {} in the exchange is {} bytes, over {}",
                                    OneLine(kv.key.substr(0, 200)), kv.value.size(),
                                    kMaxExchangeValue));
    }
    own = own || kv.key == own_key;
    values.push_back(kv.value);
  }
  if (kvs.size() != nodes || !own) return std::nullopt;
  return values;
}

std::string ExchangeShortfall(const std::vector<KeyValue>& kvs, size_t nodes,
                              std::string_view own_key) {
  bool own = false;
  for (const KeyValue& kv : kvs) own = own || kv.key == own_key;
  if (kvs.size() < nodes || (kvs.size() == nodes && own)) {
    return fmt::format("{} of the {} nodes came", kvs.size(), nodes);
  }
  return fmt::format(
      "{} keys for {} nodes{} (another node too many, or keys of a search of the same "
      "--job_id that stopped seconds before without removing them: they go with their lease "
      "within 10 s)",
      kvs.size(), nodes, own ? "" : ", this node's own not among them");
}

std::string ExchangeSession(const std::vector<KeyValue>& kvs) {
  uint64_t hash = 14695981039346656037ull;
  for (const KeyValue& kv : kvs) {
    for (const char c : kv.key + '\n') {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ull;
    }
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace pdlaunch
