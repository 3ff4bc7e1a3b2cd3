#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/coord/kv_store.h"

namespace pdlaunch {

/// The auto tuner's agreement between nodes through etcd (`--master etcd://`, docs/auto-tuner.md
/// "Several nodes"): each node writes its value under `<prefix><node id>` (its own lease), and
/// the exchange is over for a node once `nodes` keys are there. The node ids are random per run;
/// every node reads the values in key order, so all see them in one order.

/// The most a node's value may hold (the tuner's records are under 1 KiB).
inline constexpr size_t kMaxExchangeValue = 16 * 1024;

/// The prefix of exchange `name`: `/pdlaunch/auto_tuner/<scope>/<name>/` before the nodes met
/// (`session` empty), `/pdlaunch/auto_tuner/<scope>/<session>/<name>/` after, so that a search's
/// exchanges never meet the keys a search of the same job left seconds before.
std::string ExchangePrefix(std::string_view scope, std::string_view session, std::string_view name);

/// What the keys under an exchange's prefix say to the node whose key is `own_key`: every value
/// in key order once exactly `nodes` keys are there, this node's among them; nullopt otherwise:
/// fewer (nodes still to come) or more, or all without this node's own (keys of a search of the
/// same job that ended seconds ago, which go with their lease; or a node too many, which the
/// wait's deadline reports with ExchangeShortfall). Throws LaunchError (one line, the key
/// escaped) for a value over kMaxExchangeValue.
std::optional<std::vector<std::string>> ReadExchange(const std::vector<KeyValue>& kvs, size_t nodes,
                                                     std::string_view own_key);

/// Why an exchange that timed out did not complete, in words: "1 of the 2 nodes" came, or "3
/// keys for 2 nodes (another node too many, or ...)".
std::string ExchangeShortfall(const std::vector<KeyValue>& kvs, size_t nodes,
                              std::string_view own_key);

/// The session the nodes share after their first exchange: a digest (FNV-1a 64, hex) of its
/// keys, which name the nodes of this run.
std::string ExchangeSession(const std::vector<KeyValue>& kvs);

}  // namespace pdlaunch
