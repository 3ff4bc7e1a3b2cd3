#include "pdlaunch/plan/messages.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace pdlaunch {

namespace {

constexpr size_t kMinKeyWidth = 40;
constexpr size_t kValueWidth = 45;

std::string Centred(const std::string& value) {
  if (value.size() >= kValueWidth) return "... " + value.substr(value.size() - (kValueWidth - 4));
  const size_t pad = kValueWidth - value.size();
  return std::string(pad / 2, ' ') + value + std::string(pad - pad / 2, ' ');
}

std::string Row(size_t key_width, const std::string& key, const std::string& value) {
  return fmt::format("    |{:>{}}  {}|\n", key, key_width, Centred(value));
}

}  // namespace

std::string FormatDistributedEnvs(const EnvList& rows, const std::string& header,
                                  const std::string& value_header) {
  size_t key_width = kMinKeyWidth;
  for (const auto& row : rows) key_width = std::max(key_width, row.first.size());
  const size_t width = key_width + kValueWidth + 2;
  const std::string heavy = fmt::format("    +{}+\n", std::string(width, '='));
  std::string table = "\n" + heavy + Row(key_width, header, value_header);
  table += fmt::format("    +{}+\n", std::string(width, '-'));
  for (const auto& [key, value] : rows) table += Row(key_width, key, value);
  return table + heavy;
}

std::string FormatEndpointsLog(const std::vector<Endpoint>& endpoints) {
  return "PADDLE_TRAINER_ENDPOINTS: \n" + JoinEndpoints(endpoints, "\n");
}

std::string FormatAbortLine(int world_size, const std::vector<int>& ranks,
                            const std::string& role) {
  return fmt::format(
      "ABORT!!! Out of all {} {}s, the {} process with rank=[{}] was aborted. Please "
      "check its log.",
      world_size, role, role, fmt::join(ranks, ", "));
}

}  // namespace pdlaunch
