#include "pdlaunch/coord/job_token.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {

JobToken JobToken::Parse(std::string_view value) {
  if (value.size() < kMinLength || value.size() > kMaxLength) {
    throw UsageError(fmt::format("{}: the token is {} characters long; it takes {} to {}",
                                 kJobTokenVariable, value.size(), kMinLength, kMaxLength));
  }
  if (!std::all_of(value.begin(), value.end(), [](char c) { return c > ' ' && c < 0x7f; })) {
    throw UsageError(fmt::format(
        "{}: the token holds a space, a control character or a byte outside ASCII; it takes "
        "printable ASCII only (it travels in an HTTP header field)",
        kJobTokenVariable));
  }
  return JobToken(std::string(value));
}

std::optional<JobToken> JobToken::FromEnvironment(const char* value) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  return Parse(value);
}

bool JobToken::Matches(std::string_view presented) const {
  // The length is no secret worth the trouble; the bytes are compared in constant time.
  return presented.size() == secret_.size() &&
         CRYPTO_memcmp(presented.data(), secret_.data(), secret_.size()) == 0;
}

std::string JobToken::Mac(std::string_view text) const {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
           reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data(),
           &length) == nullptr) {
    throw LaunchError("HMAC-SHA256 failed in OpenSSL's libcrypto");
  }
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i)
    fmt::format_to(std::back_inserter(hex), "{:02x}", digest[i]);
  return hex;
}

bool JobToken::Verify(std::string_view text, std::string_view mac) const {
  const std::string expected = Mac(text);
  return mac.size() == expected.size() &&
         CRYPTO_memcmp(mac.data(), expected.data(), expected.size()) == 0;
}

}  // namespace pdlaunch
