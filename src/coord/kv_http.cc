#include "pdlaunch/coord/kv_http.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/json_string.h"
#include "pdlaunch/base/seconds.h"

namespace pdlaunch {
namespace {

template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

KvHttpResponse Reply(int status, std::string body = "") {
  KvHttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

}  // namespace

KvTarget ParseKvTarget(std::string_view target) {
  KvTarget parsed;
  const size_t question = target.find('?');
  parsed.path = std::string(target.substr(0, question));
  if (question == std::string_view::npos) return parsed;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (name == "wait") {
      if (auto rev = ParseNumber<int64_t>(value); rev && *rev >= 0) parsed.wait = rev;
    } else if (name == "timeout") {
      if (auto seconds = ParseSeconds(value)) parsed.timeout = *seconds;
    } else if (name == "ttl") {
      if (auto seconds = ParseSeconds(value); seconds && *seconds > 0) parsed.ttl = seconds;
    } else if (name == "create") {
      parsed.create_only = value == "1" || value == "true";
    }
  }
  return parsed;
}

KvMemoryStore::KvMemoryStore(KvLimits limits) : limits_(limits) { Put("/healthy", "ok"); }

bool KvMemoryStore::Fits(const std::string& key, const std::string& value) const {
  const bool reserved = !reserved_prefix_.empty() && key.starts_with(reserved_prefix_);
  const size_t max_keys = limits_.max_keys + (reserved ? reserved_keys_ : 0);
  const size_t max_bytes = limits_.max_bytes + (reserved ? reserved_bytes_ : 0);
  const auto it = entries_.find(key);
  const size_t old = it == entries_.end() ? 0 : key.size() + it->second.value.size();
  if (it == entries_.end() && entries_.size() >= max_keys) return false;
  return bytes_ - old + key.size() + value.size() <= max_bytes;
}

void KvMemoryStore::NoteChanged(const std::string& key) {
  if (changed_.size() < kMaxChangedKeys) {
    changed_.push_back(key);
  } else {
    changed_overflow_ = true;
  }
}

bool KvMemoryStore::ChangedUnder(std::initializer_list<std::string_view> prefixes) const {
  if (changed_overflow_) return true;
  return std::any_of(changed_.begin(), changed_.end(), [&](const std::string& key) {
    return std::any_of(prefixes.begin(), prefixes.end(),
                       [&](std::string_view prefix) { return key.starts_with(prefix); });
  });
}

void KvMemoryStore::Reserve(std::string prefix, size_t keys, size_t bytes) {
  reserved_prefix_ = std::move(prefix);
  reserved_keys_ = keys;
  reserved_bytes_ = bytes;
}

bool KvMemoryStore::Put(const std::string& key, const std::string& value,
                        std::optional<double> expires_at, bool within_limits) {
  if (within_limits && !Fits(key, value)) return false;
  auto [it, inserted] = entries_.try_emplace(key);
  Entry& entry = it->second;
  if (entry.expiry) expiries_.erase(*entry.expiry);
  entry.expiry.reset();
  if (expires_at) entry.expiry = expiries_.emplace(*expires_at, key);
  // The same value again (a heartbeat renewing its TTL): nothing a reader can see changed, so
  // no revision and no long-poll woken; only the expiry moved.
  if (!inserted && entry.value == value) return true;
  if (!inserted) bytes_ -= key.size() + entry.value.size();
  entry.value = value;
  bytes_ += key.size() + value.size();
  ++revision_;
  entry.mod_revision = revision_;
  NoteChanged(key);
  return true;
}

bool KvMemoryStore::PutIfAbsent(const std::string& key, const std::string& value,
                                bool within_limits) {
  if (entries_.count(key) != 0) return false;
  return Put(key, value, std::nullopt, within_limits);
}

bool KvMemoryStore::Delete(const std::string& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  bytes_ -= key.size() + it->second.value.size();
  if (it->second.expiry) expiries_.erase(*it->second.expiry);
  NoteChanged(key);
  entries_.erase(it);
  ++revision_;
  if (recent_deletes_.size() == kMaxRecentDeletes) recent_deletes_.pop_front();
  recent_deletes_.emplace_back(revision_, key);
  return true;
}

bool KvMemoryStore::ChangedSince(const std::string& prefix, int64_t revision) const {
  if (revision >= revision_) return false;
  size_t scanned = 0;
  for (auto it = entries_.lower_bound(prefix);
       it != entries_.end() && std::string_view(it->first).starts_with(prefix); ++it) {
    if (++scanned > kMaxScannedKeys || it->second.mod_revision > revision) return true;
  }
  // Deletions older than the ones kept may have touched the prefix: cannot tell.
  if (recent_deletes_.size() == kMaxRecentDeletes && recent_deletes_.front().first > revision) {
    return true;
  }
  return std::any_of(recent_deletes_.begin(), recent_deletes_.end(), [&](const auto& deleted) {
    return deleted.first > revision && deleted.second.starts_with(prefix);
  });
}

std::map<std::string, std::string> KvMemoryStore::Prefix(std::string_view prefix) const {
  std::map<std::string, std::string> out;
  for (auto it = entries_.lower_bound(std::string(prefix));
       it != entries_.end() && std::string_view(it->first).starts_with(prefix); ++it) {
    out.emplace(it->first, it->second.value);
  }
  return out;
}

std::vector<std::string> KvMemoryStore::Expire(double now) {
  std::vector<std::string> expired;
  while (!expiries_.empty() && expiries_.begin()->first <= now) {
    expired.push_back(expiries_.begin()->second);
    Delete(expired.back());  // Erases the expiries_ entry too.
  }
  return expired;
}

std::optional<double> KvMemoryStore::NextExpiry() const {
  if (expiries_.empty()) return std::nullopt;
  return expiries_.begin()->first;
}

KvHttpResponse KvMemoryStore::Encode(const std::string& prefix) const {
  auto it = entries_.lower_bound(prefix);
  const auto matches = [&] {
    return it != entries_.end() && std::string_view(it->first).starts_with(prefix);
  };
  if (!matches()) return Reply(404, "");
  const size_t max = limits_.max_answer_bytes;
  std::string out = "{";
  for (bool first = true; matches(); ++it, first = false) {
    if (!first) out += ", ";
    if (!AppendJsonString(out, it->first, max)) return Reply(413, "");
    out += ": ";
    if (!AppendJsonString(out, it->second.value, max)) return Reply(413, "");
  }
  out += '}';
  if (out.size() > max) return Reply(413, "");
  KvHttpResponse response;
  response.shared_body = std::make_shared<const std::string>(std::move(out));
  return response;
}

KvHttpResponse KvMemoryStore::Answer(const std::string& prefix) const {
  // A few answers, at most twice the largest in bytes, are kept until the next change.
  constexpr size_t kMaxAnswersKept = 16;
  if (answers_revision_ != revision_) {
    answers_.clear();
    answer_bytes_ = 0;
    answers_revision_ = revision_;
  }
  if (const auto kept = answers_.find(prefix); kept != answers_.end()) return kept->second;
  KvHttpResponse response = Encode(prefix);
  const size_t size = response.Body().size();
  if (answers_.size() < kMaxAnswersKept && answer_bytes_ + size <= 2 * limits_.max_answer_bytes) {
    answers_.emplace(prefix, response);
    answer_bytes_ += size;
  }
  return response;
}

void KvMemoryStore::Protect(std::string key, bool prefix, std::string except) {
  protected_.push_back(Protected{std::move(key), prefix, std::move(except)});
}

// A handful of rules per job: a linear scan costs less than a lookup structure would.
bool KvMemoryStore::IsProtected(const std::string& key) const {
  for (const Protected& rule : protected_) {
    if (key == rule.except) continue;
    if (rule.prefix ? key.starts_with(rule.key) : key == rule.key) return true;
  }
  return false;
}

KvHttpResponse KvMemoryStore::Handle(const KvHttpRequest& request, double now) {
  const KvTarget target = ParseKvTarget(request.target);
  if (request.method == "GET") {
    // Parked unless a key under the prefix changed after the revision the client last saw (a
    // change elsewhere, another node joining, does not send it round again).
    if (target.wait && !ChangedSince(target.path, *target.wait)) {
      KvHttpResponse parked;
      parked.wait_until = now + std::min(target.timeout, limits_.max_wait_seconds);
      parked.wait_revision = *target.wait;
      parked.wait_prefix = target.path;
      return parked;
    }
    return Answer(target.path);
  }
  const bool writes =
      request.method == "PUT" || request.method == "POST" || request.method == "DELETE";
  if (writes && IsProtected(target.path)) return Reply(403, "");
  if (request.method == "PUT" || request.method == "POST") {
    if (target.create_only && entries_.count(target.path) != 0) return Reply(412, "");
    std::optional<double> expires_at;
    if (target.ttl) expires_at = now + std::min(*target.ttl, limits_.max_ttl_seconds);
    if (!Put(target.path, request.body, expires_at)) return Reply(413, "");
    return Reply(200, "");
  }
  if (request.method == "DELETE") {
    return Reply(Delete(target.path) ? 200 : 404, "");
  }
  return Reply(501, "");
}

std::string EncodeJsonObject(const std::map<std::string, std::string>& values) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : values) {
    if (!first) out += ", ";
    first = false;
    out += EncodeJsonString(key) + ": " + EncodeJsonString(value);
  }
  return out + "}";
}

namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The fast path of DecodeJsonObject: an object of plain strings (ReadPlainJsonString), which is
// what a master answers for pdlaunch's and Paddle's keys. False for anything else; the full
// parser then decides. A key given twice keeps its last value, as the full parser does.
bool DecodePlainJsonObject(std::string_view body, std::map<std::string, std::string>& out) {
  size_t i = 0;
  const auto skip = [&] {
    while (i < body.size() && IsJsonSpace(body[i])) ++i;
  };
  const auto take = [&](char c) {
    skip();
    if (i >= body.size() || body[i] != c) return false;
    ++i;
    return true;
  };
  if (!take('{')) return false;
  skip();
  if (i < body.size() && body[i] == '}') {
    ++i;
  } else {
    std::string key;
    std::string value;
    while (true) {
      skip();
      if (!ReadPlainJsonString(body, i, key) || !take(':')) return false;
      skip();
      if (!ReadPlainJsonString(body, i, value)) return false;
      out.insert_or_assign(std::move(key), std::move(value));
      if (take('}')) break;
      if (i >= body.size() || body[i] != ',') return false;
      ++i;
    }
  }
  skip();
  return i == body.size();
}

}  // namespace

std::map<std::string, std::string> DecodeJsonObject(std::string_view body) {
  std::map<std::string, std::string> plain;
  if (DecodePlainJsonObject(body, plain)) return plain;
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    throw LaunchError(fmt::format("the master answered something that is not a JSON object: '{}'",
                                  body.substr(0, 80)));
  }
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : json.items()) {
    if (!value.is_string()) {
      throw LaunchError(fmt::format("the master's value of {} is not a string", key));
    }
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

}  // namespace pdlaunch
