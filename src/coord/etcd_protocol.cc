#include "pdlaunch/coord/etcd_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <nlohmann/json.hpp>
#include <utility>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"

namespace pdlaunch::etcd {

namespace {

using nlohmann::json;

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr size_t kMaxHeaderBytes = 64 * 1024;  // Of one header or trailer line.
constexpr size_t kMaxLineBytes = 4 * 1024;
// One watch message (docs/elastic.md, "Bounds"): a batch of events of a job's keys is a few
// kilobytes per node. A stream that sends more without a newline is broken: the caller drops
// the connection and watches again, as after any other etcd failure.
constexpr size_t kMaxWatchMessageBytes = 8u << 20;
constexpr size_t kMaxErrorBodyBytes = 64 * 1024;
constexpr size_t kQuoteBytes = 200;

// -1 for bytes outside the alphabet.
constexpr std::array<int, 256> Base64Values() {
  std::array<int, 256> values{};
  values.fill(-1);
  for (size_t i = 0; i < kBase64Alphabet.size(); ++i) {
    values[static_cast<unsigned char>(kBase64Alphabet[i])] = static_cast<int>(i);
  }
  return values;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

// The first line of `text`, cut to a readable length and escaped (OneLine) for an error
// message: what a gateway sends reaches the console only this way.
std::string Quote(std::string_view text) {
  text = Trim(text);
  text = text.substr(0, text.find('\n'));
  if (text.size() <= kQuoteBytes) return OneLine(Trim(text));
  return OneLine(text.substr(0, kQuoteBytes)) + "...";
}

[[noreturn]] void ThrowInvalid(std::string_view what) {
  throw KvUnavailable(fmt::format("invalid response: {}", what));
}

// etcd writes int64 fields as JSON strings; numbers are accepted too. Absent means 0.
int64_t Int64Field(const json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const auto& text = it->get_ref<const std::string&>();
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (!text.empty() && error == std::errc() && end == text.data() + text.size()) return value;
  }
  ThrowInvalid(fmt::format("field '{}' is not an integer: {}", name, it->dump()));
}

bool BoolField(const json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) ThrowInvalid(fmt::format("field '{}' is not a boolean", name));
  return it->get<bool>();
}

// A string field; absent means empty.
std::string StringField(const json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return "";
  if (!it->is_string()) ThrowInvalid(fmt::format("field '{}' is not a string", name));
  return it->get<std::string>();
}

// A base64 bytes field; absent means empty.
std::string BytesField(const json& object, const char* name) {
  return Base64Decode(StringField(object, name));
}

const json& ObjectField(const json& object, const char* name) {
  static const json kEmpty = json::object();
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return kEmpty;
  if (!it->is_object()) ThrowInvalid(fmt::format("field '{}' is not an object", name));
  return *it;
}

// Throws EtcdError when `answer` is one of the gateway's error shapes: {"error":"…","message":
// "…","code":N} for unary calls, {"error":{"grpc_code":N,"message":"…",…}} inside streams.
void ThrowIfError(const json& answer) {
  const auto error = answer.find("error");
  if (error != answer.end() && error->is_object()) {
    const std::string message = StringField(*error, "message");
    throw EtcdError(static_cast<int>(Int64Field(*error, "grpc_code")),
                    Quote(message.empty() ? error->dump() : message));
  }
  const std::string text = StringField(answer, "error");
  const bool bare = answer.contains("code") && answer.contains("message") &&
                    !answer.contains("header") && !answer.contains("result");
  if (text.empty() && !bare) return;
  const std::string message = StringField(answer, "message");
  throw EtcdError(static_cast<int>(Int64Field(answer, "code")),
                  Quote(message.empty() ? text : message));
}

json ParseJson(std::string_view text) {
  json answer = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    ThrowInvalid(fmt::format("not a JSON object: '{}'", Quote(text)));
  }
  return answer;
}

json ParseAnswer(std::string_view body) {
  json answer = ParseJson(body);
  ThrowIfError(answer);
  return answer;
}

int64_t HeaderRevision(const json& answer) {
  return Int64Field(ObjectField(answer, "header"), "revision");
}

KeyValue ParseKeyValue(const json& kv) {
  KeyValue parsed;
  parsed.key = BytesField(kv, "key");
  parsed.value = BytesField(kv, "value");
  parsed.create_revision = Int64Field(kv, "create_revision");
  parsed.mod_revision = Int64Field(kv, "mod_revision");
  parsed.lease = Int64Field(kv, "lease");
  return parsed;
}

KvEvent ParseEvent(const json& event) {
  if (!event.is_object()) ThrowInvalid("an event is not an object");
  KvEvent parsed;
  const std::string type = StringField(event, "type");
  if (type == "DELETE") {
    parsed.type = KvEvent::Type::kDelete;
  } else if (!type.empty() && type != "PUT") {
    ThrowInvalid(fmt::format("unknown event type '{}'", type));
  }
  parsed.kv = ParseKeyValue(ObjectField(event, "kv"));
  return parsed;
}

const json& ArrayField(const json& object, const char* name) {
  static const json kEmpty = json::array();
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return kEmpty;
  if (!it->is_array()) ThrowInvalid(fmt::format("field '{}' is not an array", name));
  return *it;
}

json KeyJson(std::string_view key, std::string_view range_end) {
  json request = {{"key", Base64Encode(key)}};
  if (!range_end.empty()) request["range_end"] = Base64Encode(range_end);
  return request;
}

json PutJson(std::string_view key, std::string_view value, int64_t lease) {
  json request = {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) request["lease"] = std::to_string(lease);
  return request;
}

bool ParseHexSize(std::string_view text, uint64_t& size) {
  text = Trim(text.substr(0, text.find(';')));
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), size, 16);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string text;
  text.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t j = 0; j < 3; ++j) {
      group = group << 8 | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0U);
    }
    for (size_t j = 0; j < 4; ++j) {
      text += j <= n ? kBase64Alphabet[group >> (18 - 6 * j) & 0x3f] : '=';
    }
  }
  return text;
}

std::string Base64Decode(std::string_view text) {
  static constexpr std::array<int, 256> kValues = Base64Values();
  const auto invalid = [text] {
    return KvUnavailable(fmt::format("invalid base64 '{}'", Quote(text)));
  };
  std::string_view data = text;
  if (text.size() % 4 == 0 && data.ends_with('=')) data.remove_suffix(1);
  if (text.size() % 4 == 0 && data.ends_with('=')) data.remove_suffix(1);
  if (data.size() % 4 == 1) throw invalid();
  std::string bytes;
  bytes.reserve(data.size() * 3 / 4);
  uint32_t bits = 0;
  int bit_count = 0;
  for (const char c : data) {
    const int value = kValues[static_cast<unsigned char>(c)];
    if (value < 0) throw invalid();
    bits = (bits << 6 | static_cast<uint32_t>(value)) & 0xffffff;
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      bytes += static_cast<char>(bits >> bit_count & 0xff);
    }
  }
  return bytes;
}

KeyRange PrefixRange(std::string_view prefix) {
  if (prefix.empty()) return {std::string(1, '\0'), std::string(1, '\0')};
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return {std::string(prefix), std::string(1, '\0')};
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return {std::string(prefix), end};
}

std::string PutRequest(std::string_view key, std::string_view value, int64_t lease) {
  return PutJson(key, value, lease).dump();
}

std::string RangeRequest(std::string_view key, std::string_view range_end) {
  return KeyJson(key, range_end).dump();
}

std::string DeleteRangeRequest(std::string_view key, std::string_view range_end) {
  return KeyJson(key, range_end).dump();
}

std::string PutIfRequest(std::string_view key, int64_t expected_mod_revision,
                         std::string_view value, int64_t lease) {
  json compare = {{"key", Base64Encode(key)}, {"result", "EQUAL"}};
  if (expected_mod_revision == 0) {
    compare["target"] = "CREATE";
    compare["create_revision"] = "0";
  } else {
    compare["target"] = "MOD";
    compare["mod_revision"] = std::to_string(expected_mod_revision);
  }
  const json request = {{"compare", json::array({compare})},
                        {"success", json::array({{{"request_put", PutJson(key, value, lease)}}})}};
  return request.dump();
}

std::string LeaseGrantRequest(int ttl_seconds) { return json{{"TTL", ttl_seconds}}.dump(); }

std::string LeaseIdRequest(int64_t lease) { return json{{"ID", std::to_string(lease)}}.dump(); }

std::string WatchCreateRequest(std::string_view key, std::string_view range_end,
                               int64_t start_revision) {
  json create = KeyJson(key, range_end);
  if (start_revision != 0) create["start_revision"] = std::to_string(start_revision);
  return json{{"create_request", create}}.dump();
}

int64_t ParsePutResponse(std::string_view body) { return HeaderRevision(ParseAnswer(body)); }

KvStore::Range ParseRangeResponse(std::string_view body) {
  const json answer = ParseAnswer(body);
  KvStore::Range range;
  range.revision = HeaderRevision(answer);
  for (const json& kv : ArrayField(answer, "kvs")) {
    if (!kv.is_object()) ThrowInvalid("a key-value is not an object");
    range.kvs.push_back(ParseKeyValue(kv));
  }
  return range;
}

int64_t ParseDeleteRangeResponse(std::string_view body) {
  return Int64Field(ParseAnswer(body), "deleted");
}

bool ParseTxnResponse(std::string_view body) { return BoolField(ParseAnswer(body), "succeeded"); }

int64_t ParseLeaseGrantResponse(std::string_view body) {
  const json answer = ParseAnswer(body);
  const int64_t id = Int64Field(answer, "ID");
  if (id == 0) ThrowInvalid(fmt::format("no lease ID in '{}'", Quote(body)));
  return id;
}

int64_t ParseKeepAliveResponse(std::string_view body) {
  // A stream of one message per line; the first one answers our single request.
  const std::string_view trimmed = Trim(body);
  const json message = ParseAnswer(Trim(trimmed.substr(0, trimmed.find('\n'))));
  return Int64Field(ObjectField(message, "result"), "TTL");
}

void ParseRevokeResponse(std::string_view body) { ParseAnswer(body); }

void CheckHttpStatus(int status, std::string_view reason, std::string_view body) {
  if (status >= 200 && status < 300) return;
  const json answer = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_object()) ThrowIfError(answer);
  std::string message = fmt::format("HTTP {} {}", status, Quote(reason));
  const std::string first_line = Quote(body);
  if (!first_line.empty()) message += ": " + first_line;
  throw KvUnavailable(message);
}

std::vector<KvEvent> WatchStreamDecoder::Feed(std::string_view bytes) {
  Consume(bytes, /*stop_when_created=*/false);
  return std::exchange(events_, {});
}

size_t WatchStreamDecoder::FeedUntilCreated(std::string_view bytes) {
  if (created_) return 0;
  return Consume(bytes, /*stop_when_created=*/true);
}

void WatchStreamDecoder::FeedEof() {
  if (broken()) return;
  if (state_ == State::kBody && !length_known_) {
    EndBody("connection closed");
  } else {
    Break("connection closed");
  }
}

size_t WatchStreamDecoder::Consume(std::string_view bytes, bool stop_when_created) {
  size_t pos = 0;
  // Once created, FeedUntilCreated still takes the framing after the message (the chunk's CRLF,
  // the next chunk size) but no byte of the next message.
  const auto at_data = [this] { return state_ == State::kChunkData || state_ == State::kBody; };
  while (pos < bytes.size() && !broken() && !(stop_when_created && created_ && at_data())) {
    const std::string_view rest = bytes.substr(pos);
    switch (state_) {
      case State::kHead:
      case State::kChunkSize:
      case State::kChunkDataEnd:
      case State::kTrailers:
        pos += ConsumeLine(rest);
        break;
      case State::kChunkData:
      case State::kBody:
        pos += ConsumeBody(rest, stop_when_created);
        break;
      case State::kDone:
        Break("data after the end of the stream");
        break;
    }
  }
  return pos;
}

size_t WatchStreamDecoder::ConsumeLine(std::string_view bytes) {
  const size_t newline = bytes.find('\n');
  const size_t taken = newline == std::string_view::npos ? bytes.size() : newline + 1;
  line_.append(bytes.substr(0, taken));
  const size_t limit =
      state_ == State::kHead || state_ == State::kTrailers ? kMaxHeaderBytes : kMaxLineBytes;
  if (line_.size() > limit) {
    Break("malformed HTTP response: line too long");
    return taken;
  }
  if (newline == std::string_view::npos) return taken;
  std::string line = std::exchange(line_, {});
  line.pop_back();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ProcessLine(line);
  return taken;
}

void WatchStreamDecoder::ProcessLine(const std::string& line) {
  switch (state_) {
    case State::kHead:
      ProcessHeadLine(line);
      break;
    case State::kChunkSize:
      if (!ParseHexSize(line, remaining_)) {
        Break(fmt::format("malformed chunk size '{}'", Quote(line)));
      } else {
        state_ = remaining_ == 0 ? State::kTrailers : State::kChunkData;
      }
      break;
    case State::kChunkDataEnd:
      if (!line.empty()) Break("malformed chunked body: no CRLF after a chunk");
      state_ = State::kChunkSize;
      break;
    case State::kTrailers:
      if (line.empty()) EndBody("stream ended");
      break;
    default:
      break;
  }
}

void WatchStreamDecoder::ProcessHeadLine(const std::string& line) {
  if (status_ == 0) {
    ProcessStatusLine(line);
    return;
  }
  if (line.empty()) {
    EndHead();
    return;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) {
    Break(fmt::format("malformed HTTP header '{}'", Quote(line)));
    return;
  }
  const std::string name = AsciiLower(Trim(std::string_view(line).substr(0, colon)));
  const std::string value = AsciiLower(Trim(std::string_view(line).substr(colon + 1)));
  if (name == "transfer-encoding") {
    chunked_ = value.ends_with("chunked");
  } else if (name == "content-length") {
    const auto [end, error] =
        std::from_chars(value.data(), value.data() + value.size(), remaining_);
    length_known_ = !value.empty() && error == std::errc() && end == value.data() + value.size();
    if (!length_known_) Break(fmt::format("malformed Content-Length '{}'", value));
  }
}

void WatchStreamDecoder::ProcessStatusLine(const std::string& line) {
  // "HTTP/1.1 200 OK"
  const size_t space = line.find(' ');
  int status = 0;
  const char* digits = line.data() + (space == std::string::npos ? 0 : space + 1);
  const char* line_end = line.data() + line.size();
  const auto [end, error] = std::from_chars(digits, std::min(digits + 3, line_end), status);
  if (!line.starts_with("HTTP/") || space == std::string::npos || error != std::errc() ||
      end != digits + 3 || status < 100 || (end != line_end && *end != ' ')) {
    Break(fmt::format("malformed HTTP status line '{}'", Quote(line)));
    return;
  }
  status_ = status;
  reason_ = std::string(Trim(std::string_view(end, line_end)));
}

void WatchStreamDecoder::EndHead() {
  if (status_ < 200) {  // An interim answer (100 Continue): the real one follows.
    status_ = 0;
    chunked_ = length_known_ = false;
    return;
  }
  if (chunked_) {
    state_ = State::kChunkSize;
  } else {
    state_ = State::kBody;
    if (length_known_ && remaining_ == 0) EndBody("stream ended");
  }
}

size_t WatchStreamDecoder::ConsumeBody(std::string_view bytes, bool stop_when_created) {
  const bool bounded = state_ == State::kChunkData || length_known_;
  if (bounded && remaining_ < bytes.size()) bytes = bytes.substr(0, remaining_);
  const size_t taken =
      status_ < 300 ? ConsumeMessages(bytes, stop_when_created) : ConsumeErrorBody(bytes);
  if (bounded) remaining_ -= taken;
  if (bounded && remaining_ == 0 && !broken()) {
    if (state_ == State::kChunkData) {
      state_ = State::kChunkDataEnd;
    } else {
      EndBody("stream ended");
    }
  }
  return taken;
}

size_t WatchStreamDecoder::ConsumeErrorBody(std::string_view bytes) {
  body_.append(bytes.substr(0, kMaxErrorBodyBytes - std::min(body_.size(), kMaxErrorBodyBytes)));
  return bytes.size();
}

size_t WatchStreamDecoder::ConsumeMessages(std::string_view bytes, bool stop_when_created) {
  size_t pos = 0;
  while (pos < bytes.size() && !broken()) {
    const size_t newline = bytes.find('\n', pos);
    const size_t end = newline == std::string_view::npos ? bytes.size() : newline;
    if (body_.size() + (end - pos) > kMaxWatchMessageBytes) {
      Break(fmt::format("malformed watch stream: a message over {} bytes", kMaxWatchMessageBytes));
      return bytes.size();
    }
    if (newline == std::string_view::npos) {
      body_.append(bytes.substr(pos));
      return bytes.size();
    }
    body_.append(bytes.substr(pos, newline - pos));
    pos = newline + 1;
    ProcessMessage(std::exchange(body_, {}));
    if (stop_when_created && created_) break;
  }
  return pos;
}

void WatchStreamDecoder::ProcessMessage(std::string_view message) {
  message = Trim(message);
  if (message.empty()) return;
  try {
    const json parsed = ParseJson(message);
    ThrowIfError(parsed);
    const json& result = ObjectField(parsed, "result");
    for (const json& event : ArrayField(result, "events")) events_.push_back(ParseEvent(event));
    if (BoolField(result, "created")) created_ = true;
    compact_revision_ = Int64Field(result, "compact_revision");
    if (compact_revision_ != 0) {
      Break(fmt::format("watch cancelled: revision compacted (compact revision {})",
                        compact_revision_));
    } else if (BoolField(result, "canceled")) {
      const std::string reason = StringField(result, "cancel_reason");
      Break(reason.empty() ? "watch cancelled" : "watch cancelled: " + Quote(reason));
    }
  } catch (const KvUnavailable& error) {
    Break(error.what());
  } catch (const json::exception& error) {
    Break(fmt::format("invalid response: {}", error.what()));
  }
}

void WatchStreamDecoder::EndBody(std::string_view reason) {
  state_ = State::kDone;
  if (status_ >= 300) {
    try {
      CheckHttpStatus(status_, reason_, body_);
    } catch (const KvUnavailable& error) {
      Break(error.what());
    }
    return;
  }
  ProcessMessage(std::exchange(body_, {}));
  Break(std::string(reason));
}

void WatchStreamDecoder::Break(std::string reason) {
  if (error_.empty()) error_ = std::move(reason);
  if (error_.empty()) error_ = "broken";
}

}  // namespace pdlaunch::etcd
