#pragma once

// The job token (docs/master.md, "Exposure"): a secret every node of a job is given in
// PDLAUNCH_JOB_TOKEN. With it, the HTTP master answers only requests that present it, and the
// auto tuner's records in etcd carry an HMAC-SHA256 under it, so that a stranger who can reach
// the master or etcd can neither read the job's keys, nor forge a record a node believes.

#include <optional>
#include <string>
#include <string_view>

namespace pdlaunch {

/// The environment variable that holds the token.
inline constexpr std::string_view kJobTokenVariable = "PDLAUNCH_JOB_TOKEN";

class JobToken {
 public:
  /// The token in `value` (the variable's text). Throws UsageError, naming the variable but never
  /// the value, when it is shorter than kMinLength or longer than kMaxLength, or holds a byte
  /// outside printable ASCII (it travels in an HTTP header field).
  static JobToken Parse(std::string_view value);
  /// The token of this environment: std::nullopt when the variable is unset or empty.
  static std::optional<JobToken> FromEnvironment(const char* value);

  /// Whether `presented` is the token: compared in time that depends on its length only.
  bool Matches(std::string_view presented) const;
  /// HMAC-SHA256 of `text` under the token: 64 lower-case hex digits.
  std::string Mac(std::string_view text) const;
  /// Whether `mac` is Mac(text), compared in constant time.
  bool Verify(std::string_view text, std::string_view mac) const;
  /// The value of the Authorization header field that presents it: "Bearer <token>".
  std::string Authorization() const { return "Bearer " + secret_; }

  static constexpr size_t kMinLength = 16;
  static constexpr size_t kMaxLength = 1024;

 private:
  explicit JobToken(std::string secret) : secret_(std::move(secret)) {}
  std::string secret_;
};

}  // namespace pdlaunch
