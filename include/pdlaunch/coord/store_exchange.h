#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/coord/kv_store.h"

namespace pdlaunch {

/// The auto tuner's agreement between nodes through etcd (`--master etcd://`, docs/auto-tuner.md
/// "Several nodes"): each node writes its record under `<prefix><node id>` (its own lease, kept
/// alive while it waits), and the exchange is over once `nodes` keys are there and every record
/// confirms that same set of keys. The node ids are random per run; every node reads the values
/// in key order, so all see them in one order. The confirmation is what keeps a key left by a
/// node that died (a search stopped seconds before) from being counted: it cannot confirm a set
/// that holds a newer key, and its lease takes it away.

/// The most a node's value may hold (the tuner's records are under 1 KiB).
inline constexpr size_t kMaxExchangeValue = 16 * 1024;

/// The prefix of exchange `name`: `/pdlaunch/auto_tuner/<scope>/<name>/` before the nodes met
/// (`session` empty), `/pdlaunch/auto_tuner/<scope>/<session>/<name>/` after, so that a search's
/// exchanges never meet the keys a search of the same job left seconds before.
std::string ExchangePrefix(std::string_view scope, std::string_view session, std::string_view name);

/// A node's record: the digest of the complete set of keys it confirms (16 hex digits;
/// ExchangeSession of them), or 16 '0' before it has seen one, a space, then its value.
std::string EncodeExchangeRecord(std::string_view digest, std::string_view value);

/// What a node does next with the keys under an exchange's prefix (its own key `own_key`).
struct ExchangeStep {
  enum class Kind {
    kWait,     ///< Not exactly `nodes` keys with its own among them, or not all confirm yet.
    kConfirm,  ///< All there: write its record again, confirming `digest`.
    kDone,     ///< Every record confirms `digest`: `values`, in key order.
  };
  Kind kind = Kind::kWait;
  std::string digest;
  std::vector<std::string> values;
};

/// The step for these keys. Throws LaunchError (one line, the key escaped) for a record that is
/// not one or holds a value over kMaxExchangeValue.
ExchangeStep DecideExchange(const std::vector<KeyValue>& kvs, size_t nodes,
                            std::string_view own_key);

/// Why an exchange that timed out did not complete, in words: "1 of the 2 nodes came", "3 keys
/// for 2 nodes (...)", or "the 2 nodes' keys are there, but 1 never confirmed them (...)".
std::string ExchangeShortfall(const std::vector<KeyValue>& kvs, size_t nodes,
                              std::string_view own_key);

/// The digest of a set of keys (FNV-1a 64 of the keys, hex): what the records confirm, and the
/// session the nodes share after their first exchange.
std::string ExchangeSession(const std::vector<KeyValue>& kvs);

/// FNV-1a 64 of `text`, 16 hex digits: a digest the same on every build of every node (unlike
/// std::hash), for what the nodes compare.
std::string ExchangeDigest(std::string_view text);

}  // namespace pdlaunch
