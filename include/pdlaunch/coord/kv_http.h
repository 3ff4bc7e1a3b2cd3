#pragma once

// Paddle's HTTP KV master (docs/master.md, "The wire protocol") as pure data and functions:
// the store, the handling of one request, the JSON the wire carries. No I/O and no clock: the
// server (http_master.cc) passes the time in. docs/master.md describes the protocol.

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pdlaunch {

/// Bounds that keep one misbehaving client from exhausting the hosting launcher.
struct KvLimits {
  size_t max_keys = 65536;
  size_t max_bytes = 32u << 20;  ///< Keys and values together.
  /// The JSON of one GET answer (a prefix object); over it the GET gets 413. A job of 2,048
  /// nodes answers about 0.6 MB for its whole prefix.
  size_t max_answer_bytes = 4u << 20;
  double max_wait_seconds = 60;  ///< Longest long-poll a client may ask for.
  double max_ttl_seconds = 3600;
};

/// A request as the server read it. `target` is the request target as sent ("/job/info?x=1").
struct KvHttpRequest {
  std::string method;
  std::string target;
  std::string body;
};

/// What to answer. A parked long-poll (`wait_until`) is answered later by AnswerWait.
struct KvHttpResponse {
  int status = 200;
  std::string body;  ///< Empty when `shared_body` holds the body.
  /// A GET answer: encoded once per prefix and revision, shared by every client it goes to.
  std::shared_ptr<const std::string> shared_body;
  std::string_view Body() const { return shared_body ? std::string_view(*shared_body) : body; }
  /// Set when the request is a long-poll to hold: answer when a key under `wait_prefix` changes
  /// (the server tells by KvMemoryStore::ChangedUnder) or at `wait_until` (seconds on the
  /// caller's clock), whichever is first.
  std::optional<double> wait_until;
  int64_t wait_revision = 0;
  std::string wait_prefix;
};

/// The target split into the path (the key or prefix, Paddle's only notion) and pdlaunch's
/// query parameters. Paddle's server treats a '?' as part of the key; pdlaunch's clients send
/// query parameters only to a pdlaunch master (docs/master.md).
struct KvTarget {
  std::string path;
  std::optional<int64_t> wait;  ///< ?wait=REV: long-poll until the revision exceeds REV.
  double timeout = 30;          ///< ?timeout=S: longest wait.
  std::optional<double> ttl;    ///< ?ttl=S on PUT/POST: the key expires S seconds after it.
  bool create_only = false;     ///< ?create=1 on PUT/POST: 412 if the key exists.
};

/// Splits `target` at its first '?' and reads wait, timeout, ttl and create; unknown or malformed
/// parameters are ignored (a malformed number leaves the default).
KvTarget ParseKvTarget(std::string_view target);

/// Paddle's store: path → bytes, pre-seeded with /healthy = ok, plus one revision counter that
/// every change increments (long-polls wait on it) and optional expiry times (heartbeats). A PUT
/// of the value a key already holds is no change (its expiry may move).
class KvMemoryStore {
 public:
  explicit KvMemoryStore(KvLimits limits = {});

  /// Handles one request at time `now` (seconds): GET prefix, PUT/POST exact key, DELETE exact
  /// key, with Paddle's status codes; 413 when a limit would be exceeded, 501 for other methods.
  KvHttpResponse Handle(const KvHttpRequest& request, double now);
  /// The answer to a GET (or a parked long-poll) of `prefix` now: 200 with the prefix object,
  /// 404 when no key matches, 413 when its JSON would exceed max_answer_bytes. Encoded once per
  /// prefix and revision (a few answers are kept until the next change), so every long-poll one
  /// change satisfies shares one body; the work of one encoding is bounded by max_answer_bytes.
  KvHttpResponse Answer(const std::string& prefix) const;

  /// Direct access for the node that hosts the store. Put returns false when a limit is hit;
  /// with `within_limits` false it never is (the host's own records: a handful of small keys).
  bool Put(const std::string& key, const std::string& value,
           std::optional<double> expires_at = std::nullopt, bool within_limits = true);
  bool PutIfAbsent(const std::string& key, const std::string& value, bool within_limits = true);
  /// Keys under `prefix` (the job's) may use `keys` more keys and `bytes` more bytes than the
  /// limits: a client that fills the store (any client may write) cannot shut the job's own
  /// records out.
  void Reserve(std::string prefix, size_t keys, size_t bytes);
  /// Keys only the process that owns the store writes (the host's decisions: the world, the
  /// news): a request from the network that writes or deletes `key`, or a key under it when
  /// `prefix`, is answered 403 and changes nothing; `except` (a key under such a prefix) stays
  /// writable from the network. The owner's own Put/Delete are not affected.
  void Protect(std::string key, bool prefix, std::string except = "");
  bool Delete(const std::string& key);
  /// The value of `key`; nullptr when it does not exist. Valid until the next change.
  const std::string* Find(const std::string& key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second.value;
  }
  /// Every key starting with `prefix` (a pure string prefix, as Paddle matches).
  std::map<std::string, std::string> Prefix(std::string_view prefix) const;

  /// Deletes the keys whose expiry time is <= now; returns them. O(log n) per key expired.
  std::vector<std::string> Expire(double now);
  /// The earliest expiry time of any key, if any. O(1).
  std::optional<double> NextExpiry() const;
  int64_t revision() const { return revision_; }
  /// Whether a key under `prefix` changed after `revision`, so that a long-poll asking to wait
  /// past `revision` must be answered at once rather than parked. Exact while at most
  /// kMaxScannedKeys keys lie under `prefix` and the last kMaxRecentDeletes deletions reach back
  /// to `revision`; true (answer at once) when it cannot tell. O(kMaxScannedKeys).
  bool ChangedSince(const std::string& prefix, int64_t revision) const;
  static constexpr size_t kMaxScannedKeys = 64;
  static constexpr size_t kMaxRecentDeletes = 64;
  /// The keys changed since ClearChanged(), in order (a key may repeat); nullptr when more than
  /// kMaxChangedKeys changed (not recorded: read what you need again).
  const std::vector<std::string>* ChangedKeys() const {
    return changed_overflow_ ? nullptr : &changed_;
  }
  /// Whether a key starting with one of `prefixes` was written or deleted since ClearChanged()
  /// (the server clears after each change it reports), so that a watcher can skip changes of
  /// keys it does not read. True as well when more than kMaxChangedKeys changed (not recorded).
  bool ChangedUnder(std::initializer_list<std::string_view> prefixes) const;
  void ClearChanged() {
    changed_.clear();
    changed_overflow_ = false;
  }
  static constexpr size_t kMaxChangedKeys = 256;

 private:
  struct Protected {
    std::string key;
    bool prefix = false;
    std::string except;
  };
  bool IsProtected(const std::string& key) const;
  std::vector<Protected> protected_;
  using Expiries = std::multimap<double, std::string>;
  struct Entry {
    std::string value;
    std::optional<Expiries::iterator> expiry;  ///< Its place in expiries_, when it expires.
    int64_t mod_revision = 0;                  ///< The revision that last changed it.
  };
  bool Fits(const std::string& key, const std::string& value) const;
  KvHttpResponse Encode(const std::string& prefix) const;

  KvLimits limits_;
  std::string reserved_prefix_;
  size_t reserved_keys_ = 0;
  size_t reserved_bytes_ = 0;
  std::map<std::string, Entry> entries_;
  Expiries expiries_;  // Expiry time -> key: writes and expiry stay O(log n).
  size_t bytes_ = 0;
  int64_t revision_ = 1;
  std::vector<std::string> changed_;
  bool changed_overflow_ = false;
  std::deque<std::pair<int64_t, std::string>> recent_deletes_;  // (revision, key), oldest first.
  void NoteChanged(const std::string& key);
  // Answers encoded at cache_revision_, by prefix.
  mutable std::map<std::string, KvHttpResponse> answers_;
  mutable size_t answer_bytes_ = 0;
  mutable int64_t answers_revision_ = 0;
};

/// `values` as Python's json.dumps writes a dict of str: {"k": "v", "k2": "v2"} (", " and ": "
/// separators, non-ASCII as \uXXXX escapes, invalid UTF-8 as U+FFFD).
std::string EncodeJsonObject(const std::map<std::string, std::string>& values);

/// Parses a GET answer: a JSON object whose values are strings. Throws LaunchError on anything
/// else (naming what was wrong).
std::map<std::string, std::string> DecodeJsonObject(std::string_view body);

}  // namespace pdlaunch
