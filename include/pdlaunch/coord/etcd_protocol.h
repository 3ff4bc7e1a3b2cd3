#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/coord/kv_store.h"

/// The wire format of etcd v3's JSON gateway (etcd 3.4, grpc-gateway v1), without any I/O: request
/// bodies, response parsing and the decoder of a watch's streaming HTTP response. Keys and values
/// travel as standard base64; int64 values as JSON strings; fields holding their default value
/// (0, false, empty) are omitted.
namespace pdlaunch::etcd {

/// An error answer of etcd, e.g. {"error":"…","message":"etcdserver: requested lease not
/// found","code":5}. what() is the message (callers prefix endpoint and call).
class EtcdError : public KvUnavailable {
 public:
  EtcdError(int code, const std::string& message) : KvUnavailable(message), code_(code) {}
  /// The gRPC status code (5: not found), 0 when the answer carried none.
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// gRPC status code of "not found" (an unknown lease).
inline constexpr int kCodeNotFound = 5;

/// Standard base64 (RFC 4648, section 4) with '=' padding.
std::string Base64Encode(std::string_view bytes);
/// Inverse of Base64Encode; the padding may be omitted. Throws KvUnavailable "invalid base64
/// '<text>'" on any other character or length.
std::string Base64Decode(std::string_view text);

/// The [key, range_end) that selects every key starting with a prefix.
struct KeyRange {
  std::string key;
  std::string range_end;

  bool operator==(const KeyRange&) const = default;
};

/// etcd's prefix convention: range_end is the prefix with its last byte below 0xff incremented
/// (and the 0xff bytes after it dropped); without such a byte range_end is "\0" (every key from
/// `prefix` on). The empty prefix is key "\0", range_end "\0": every key (etcd rejects an empty
/// key).
KeyRange PrefixRange(std::string_view prefix);

/// Request bodies. `range_end` empty: the single key. `lease` 0: no lease.
std::string PutRequest(std::string_view key, std::string_view value, int64_t lease);
std::string RangeRequest(std::string_view key, std::string_view range_end);
std::string DeleteRangeRequest(std::string_view key, std::string_view range_end);
/// A txn that puts `key` only if its mod_revision is `expected_mod_revision` (0: only if the key
/// does not exist, compared as create_revision 0).
std::string PutIfRequest(std::string_view key, int64_t expected_mod_revision,
                         std::string_view value, int64_t lease);
std::string LeaseGrantRequest(int ttl_seconds);
/// The body of /v3/lease/keepalive and /v3/lease/revoke: {"ID":"<lease>"}.
std::string LeaseIdRequest(int64_t lease);
/// Watches [key, range_end) from `start_revision` (0: from the next revision on).
std::string WatchCreateRequest(std::string_view key, std::string_view range_end,
                               int64_t start_revision);

/// Response parsers. Each throws EtcdError for an error answer and KvUnavailable "invalid
/// response: …" for a body that is not the expected JSON.
/// The header's revision of a /v3/kv/put answer.
int64_t ParsePutResponse(std::string_view body);
KvStore::Range ParseRangeResponse(std::string_view body);
/// "deleted" of a /v3/kv/deleterange answer.
int64_t ParseDeleteRangeResponse(std::string_view body);
/// "succeeded" of a /v3/kv/txn answer.
bool ParseTxnResponse(std::string_view body);
/// "ID" of a /v3/lease/grant answer.
int64_t ParseLeaseGrantResponse(std::string_view body);
/// "TTL" of a /v3/lease/keepalive answer ({"result":{…}}, one message per line); 0: no such lease.
int64_t ParseKeepAliveResponse(std::string_view body);
/// Checks a /v3/lease/revoke answer.
void ParseRevokeResponse(std::string_view body);

/// The error a non-2xx HTTP answer carries: EtcdError for an etcd error body, else KvUnavailable
/// "HTTP <status> <reason>" (with the body's first line when it has one). Does nothing for 2xx.
void CheckHttpStatus(int status, std::string_view reason, std::string_view body);

/// Decodes the streaming HTTP/1.1 response of POST /v3/watch, fed as raw bytes from the socket in
/// pieces of any size: status line and headers, then a chunked body (or one delimited by
/// Content-Length, or by the end of the connection) holding one JSON message per line. Once
/// broken() it ignores further input.
class WatchStreamDecoder {
 public:
  /// Consumes all of `bytes`; returns the events of the messages completed by them, in order.
  std::vector<KvEvent> Feed(std::string_view bytes);
  /// Consumes `bytes` up to and including the message that reports the watch created and the
  /// framing after it (chunk CRLF, next chunk size), but no byte of a later message; all of them
  /// if that message does not come. Returns how many were consumed; 0 once created(). Events
  /// decoded meanwhile are kept for the next Feed(). Lets the caller leave later messages in the
  /// socket, keeping it readable.
  size_t FeedUntilCreated(std::string_view bytes);
  /// The connection ended (EOF).
  void FeedEof();

  /// The HTTP status, 0 until the status line is complete.
  int status() const { return status_; }
  /// The watch was created ({"created":true} arrived).
  bool created() const { return created_; }
  /// The stream can deliver no more events: ended, cancelled (also by compaction), an error
  /// message or HTTP error status, or malformed input. error() says why.
  bool broken() const { return !error_.empty(); }
  /// Why broken(), e.g. "watch cancelled: revision 3 compacted", "connection closed".
  const std::string& error() const { return error_; }
  /// The compact_revision of a cancel (0: none).
  int64_t compact_revision() const { return compact_revision_; }

 private:
  enum class State { kHead, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kBody, kDone };

  size_t Consume(std::string_view bytes, bool stop_when_created);
  size_t ConsumeLine(std::string_view bytes);
  void ProcessLine(const std::string& line);
  void ProcessHeadLine(const std::string& line);
  void ProcessStatusLine(const std::string& line);
  void EndHead();
  size_t ConsumeBody(std::string_view bytes, bool stop_when_created);
  size_t ConsumeMessages(std::string_view bytes, bool stop_when_created);
  size_t ConsumeErrorBody(std::string_view bytes);
  void ProcessMessage(std::string_view message);
  void EndBody(std::string_view reason);
  void Break(std::string reason);

  State state_ = State::kHead;
  std::string line_;  // The status, header, chunk-size or trailer line so far.
  std::string body_;  // The current message so far (or the whole body of an HTTP error).
  int status_ = 0;
  std::string reason_;  // Of the status line.
  bool chunked_ = false;
  bool length_known_ = false;
  uint64_t remaining_ = 0;  // Of the current chunk, or of a Content-Length body.
  bool created_ = false;
  int64_t compact_revision_ = 0;
  std::string error_;
  std::vector<KvEvent> events_;
};

}  // namespace pdlaunch::etcd
