#include "pdlaunch/base/endpoint.h"

#include <fmt/format.h>

#include <charconv>
#include <climits>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {

namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string RangeText(int min, int max) {
  if (max == INT_MAX) return fmt::format("at least {}", min);
  if (min == INT_MIN) return fmt::format("at most {}", max);
  return fmt::format("between {} and {}", min, max);
}

}  // namespace

Endpoint ParseEndpoint(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    throw UsageError(fmt::format("'{}' is not an endpoint (expected host:port)", text));
  }
  Endpoint endpoint;
  endpoint.host = std::string(text.substr(0, colon));
  if (endpoint.host.size() > 2 && endpoint.host.front() == '[' && endpoint.host.back() == ']') {
    endpoint.host = endpoint.host.substr(1, endpoint.host.size() - 2);
  }
  endpoint.port =
      ParseInt(text.substr(colon + 1), fmt::format("port of endpoint '{}'", text), 1, 65535);
  return endpoint;
}

std::vector<std::string> EndpointStrings(const std::vector<Endpoint>& endpoints) {
  std::vector<std::string> strings;
  strings.reserve(endpoints.size());
  for (const Endpoint& endpoint : endpoints) strings.push_back(endpoint.ToString());
  return strings;
}

std::string JoinEndpoints(const std::vector<Endpoint>& endpoints, std::string_view separator) {
  std::string joined;
  for (const Endpoint& endpoint : endpoints) {
    if (!joined.empty()) joined += separator;
    joined += endpoint.ToString();
  }
  return joined;
}

std::vector<std::string> SplitAndStrip(std::string_view text, char separator) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(separator, begin);
    items.emplace_back(StripSpace(text.substr(begin, end - begin)));
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return items;
}

std::string_view StripSpace(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

std::string AsciiLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

std::string AsciiUpper(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return upper;
}

void CheckProcessCount(std::string_view flag, int value, int min, std::string_view note) {
  if (value < min) {
    throw UsageError(fmt::format("{}: '{}' must be at least {}{}", flag, value, min, note));
  }
  if (value > 65535) {
    throw UsageError(fmt::format(
        "{}: '{}' is more than 65535, the ports a host has for its processes", flag, value));
  }
}

int ParseInt(std::string_view text, std::string_view what, int min, int max) {
  int value = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [end, error] = std::from_chars(first, last, value);
  if (error == std::errc::result_out_of_range) {
    throw UsageError(fmt::format("{}: '{}' is out of range", what, text));
  }
  if (text.empty() || error != std::errc() || end != last) {
    throw UsageError(fmt::format("{}: '{}' is not an integer", what, text));
  }
  if (value < min || value > max) {
    throw UsageError(fmt::format("{}: '{}' must be {}", what, text, RangeText(min, max)));
  }
  return value;
}

int ParsePythonInt(std::string_view text, std::string_view what, int min, int max) {
  std::string_view stripped = StripSpace(text);
  if (stripped.size() > 1 && stripped.front() == '+' && stripped[1] != '-') {
    stripped.remove_prefix(1);
  }
  return ParseInt(stripped, what, min, max);
}

}  // namespace pdlaunch
