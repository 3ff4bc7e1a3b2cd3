#pragma once

// Numbers read from JSON that came from the network (peer records, failure records, etcd's
// answers): only integers in range are numbers. nlohmann's get<int>() casts a float such as
// 1e300, which is undefined behaviour, and wraps an integer past the target's range.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

namespace pdlaunch {

/// `value` when it is a JSON integer in [min, max]; nullopt for floats, booleans, strings and
/// integers out of range.
inline std::optional<int64_t> JsonIntIn(const nlohmann::json& value, int64_t min, int64_t max) {
  if (!value.is_number_integer()) return std::nullopt;
  if (value.is_number_unsigned()) {
    const auto number = value.get<uint64_t>();
    if (number > static_cast<uint64_t>(max) || static_cast<int64_t>(number) < min) {
      return std::nullopt;
    }
    return static_cast<int64_t>(number);
  }
  const auto number = value.get<int64_t>();
  if (number < min || number > max) return std::nullopt;
  return number;
}

}  // namespace pdlaunch
