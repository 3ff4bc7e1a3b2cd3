#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/coord/job_token.h"
#include "pdlaunch/coord/kv_store.h"

namespace pdlaunch {

/// The auto tuner's agreement between nodes through etcd (`--master etcd://`, docs/auto-tuner.md
/// "Several nodes"): each node writes its record under `<prefix><node id>` (its own lease, kept
/// alive while it waits), and the exchange is over once `nodes` keys are there and every record
/// confirms that same set of keys. The node ids are random per run; every node reads the values
/// in key order, so all see them in one order. The confirmation is what keeps a key left by a
/// node that died (a search stopped seconds before) from being counted: it cannot confirm a set
/// that holds a newer key, and its lease takes it away. A record's digest covers the values too,
/// and each node checks its own record at every listing: a value a stranger changed is put back
/// (docs/auto-tuner.md, "Several nodes"); with a job token, records without its MAC are ignored.

/// The most a node's value may hold (the tuner's records are under 1 KiB).
inline constexpr size_t kMaxExchangeValue = 16 * 1024;

/// The prefix of exchange `name`: `/pdlaunch/auto_tuner/<scope>/<name>/` before the nodes met
/// (`session` empty), `/pdlaunch/auto_tuner/<scope>/<session>/<name>/` after, so that a search's
/// exchanges never meet the keys a search of the same job left seconds before.
std::string ExchangePrefix(std::string_view scope, std::string_view session, std::string_view name);

/// A node's record: the digest of the complete set it confirms (16 hex digits; the `digest` of
/// the ExchangeStep that asked for it), or 16 '0' before it has seen one; with a job token, ':'
/// and the HMAC of the key, the digest and the value; a space, then its value. The MAC binds the
/// record to its key: a node's record copied under another key is not a record.
std::string EncodeExchangeRecord(std::string_view key, std::string_view digest,
                                 std::string_view value, const JobToken* token = nullptr);

/// A key under an exchange's prefix that is not counted: not a record, a value over
/// kMaxExchangeValue, or, with a job token, no MAC or a wrong one.
struct IgnoredKey {
  std::string key;  ///< Escaped (OneLine) and cut to 200 bytes.
  std::string why;
};

/// What a node does next with the keys under an exchange's prefix.
struct ExchangeStep {
  enum class Kind {
    kWait,     ///< Not exactly `nodes` records with its own among them, or not all confirm yet.
    kConfirm,  ///< All there: write its record again, confirming `digest`.
    kRepair,   ///< Its own record is gone or not what it wrote: someone else's doing; write it
               ///< again.
    kDone,     ///< Every record confirms `digest`: `values`, in key order.
  };
  Kind kind = Kind::kWait;
  /// The digest of the records' keys and values (ExchangeSession), once `nodes` are there.
  std::string digest;
  std::vector<std::string> values;
  std::vector<IgnoredKey> ignored;
};

/// The step for these keys, for the node whose key is `own_key` and whose last write there was
/// `own_record`. Keys that are not records are skipped and listed in `ignored`, never counted.
ExchangeStep DecideExchange(const std::vector<KeyValue>& kvs, size_t nodes,
                            std::string_view own_key, std::string_view own_record,
                            const JobToken* token = nullptr);

/// Why an exchange that timed out did not complete, in words: "1 of the 2 nodes came", "3
/// records for 2 nodes (...)", or "the 2 nodes' records are there, but 1 never confirmed them
/// (...)"; a record with no lease is said to stay until removed, ignored keys are counted.
std::string ExchangeShortfall(const std::vector<KeyValue>& kvs, size_t nodes,
                              std::string_view own_key, const JobToken* token = nullptr);

/// The digest of a set of records (FNV-1a 64 of each key and the value it carries, hex): what the
/// records confirm, and the session the nodes share after their first exchange. A record's own
/// confirmation is not in it; its value is, so that a value changed after a node confirmed the
/// set is a set it never confirmed. `kvs` must be records (DecideExchange skips the others).
std::string ExchangeSession(const std::vector<KeyValue>& kvs);

/// FNV-1a 64 of `text`, 16 hex digits: a digest the same on every build of every node (unlike
/// std::hash), for what the nodes compare.
std::string ExchangeDigest(std::string_view text);

}  // namespace pdlaunch
