#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {

/// One key of the store, as etcd v3 reports it.
struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;  ///< 0: none.

  bool operator==(const KeyValue&) const = default;
};

/// A change seen by a watch.
struct KvEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;  ///< For kDelete only key and mod_revision are meaningful.

  bool operator==(const KvEvent&) const = default;
};

/// The store cannot be reached, answered with an error, or a watch stream broke. Callers retry
/// (the store may be restarting); what() names the endpoint and what failed, e.g.
/// "etcd 127.0.0.1:2379: connect: Connection refused".
class KvUnavailable : public LaunchError {
 public:
  explicit KvUnavailable(const std::string& message) : LaunchError(message) {}
};

/// A stream of changes under one prefix. Not thread-safe; single owner.
class KvWatch {
 public:
  virtual ~KvWatch() = default;
  /// A descriptor that becomes readable when Read() has something to return (events, or a broken
  /// stream to report). Stable for the life of the watch; poll it with an event loop.
  virtual int fd() const = 0;
  /// The events received so far, in revision order; never blocks (may return none). Throws
  /// KvUnavailable once the stream is broken or cancelled (store restarted, revision compacted):
  /// then the caller lists the prefix again and starts a new watch.
  virtual std::vector<KvEvent> Read() = 0;
};

/// The coordination store of elastic jobs (docs/elastic.md): etcd v3 in production, an in-memory
/// fake in tests. Every call may throw KvUnavailable. Keys and values are arbitrary bytes.
class KvStore {
 public:
  /// The keys of a range and the store revision the answer reflects.
  struct Range {
    std::vector<KeyValue> kvs;  ///< Sorted by key.
    int64_t revision = 0;
  };

  virtual ~KvStore() = default;

  /// Writes `key` (attached to `lease` unless 0); returns the new store revision.
  virtual int64_t Put(const std::string& key, const std::string& value, int64_t lease = 0) = 0;
  /// Atomically writes `key` only if its mod_revision is `expected_mod_revision` (0: only if the
  /// key does not exist). Returns whether it wrote.
  virtual bool PutIf(const std::string& key, int64_t expected_mod_revision,
                     const std::string& value, int64_t lease = 0) = 0;
  /// The key itself (0 or 1 entries).
  virtual Range Get(const std::string& key) = 0;
  /// Every key starting with `prefix`.
  virtual Range GetPrefix(const std::string& prefix) = 0;
  /// Deletes `key`; returns how many keys were deleted (0 or 1).
  virtual int64_t Delete(const std::string& key) = 0;
  /// Deletes every key starting with `prefix`; returns how many.
  virtual int64_t DeletePrefix(const std::string& prefix) = 0;

  /// A new lease of `ttl_seconds`; returns its id.
  virtual int64_t GrantLease(int ttl_seconds) = 0;
  /// Refreshes `lease`; returns its remaining TTL in seconds, 0 when it no longer exists (expired
  /// or revoked: its keys are gone).
  virtual int64_t KeepAlive(int64_t lease) = 0;
  /// Revokes `lease`, deleting its keys. An unknown lease is not an error.
  virtual void RevokeLease(int64_t lease) = 0;

  /// Watches every key starting with `prefix`, delivering events of revisions >= start_revision.
  virtual std::unique_ptr<KvWatch> Watch(const std::string& prefix, int64_t start_revision) = 0;
};

/// etcd v3 through its JSON gateway (POST /v3/kv/range, /v3/kv/put, /v3/kv/txn,
/// /v3/kv/deleterange, /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke, /v3/watch) at
/// `endpoint` ("host:port"), over HTTP/1.1 with Boost.Beast. Each unary call opens (or reuses) a
/// connection and fails with KvUnavailable after `timeout`. A watch holds its own connection.
std::unique_ptr<KvStore> MakeEtcdStore(const std::string& endpoint,
                                       std::chrono::milliseconds timeout);

}  // namespace pdlaunch
