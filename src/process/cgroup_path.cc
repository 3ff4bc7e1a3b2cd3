#include "pdlaunch/process/cgroup_path.h"

#include <charconv>
#include <vector>

namespace pdlaunch {
namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

/// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      int value = 0;
      bool octal = true;
      for (size_t j = 1; j <= 3; ++j) {
        const char c = field[i + j];
        if (c < '0' || c > '7') octal = false;
        value = value * 8 + (c - '0');
      }
      if (octal) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

/// The path of the "0::" line of /proc/self/cgroup, if there is one and it is absolute.
std::optional<std::string> UnifiedPath(std::string_view self_cgroup) {
  std::optional<std::string> path;
  for (std::string_view line : Lines(self_cgroup)) {
    if (line.starts_with("0::")) path = std::string(line.substr(3));
  }
  if (!path || path->empty() || (*path)[0] != '/') return std::nullopt;
  return path;
}

}  // namespace

std::optional<std::string> OwnCgroupDirUnder(std::string_view mount_point,
                                             std::string_view self_cgroup) {
  const std::optional<std::string> path = UnifiedPath(self_cgroup);
  if (!path) return std::nullopt;
  return std::string(mount_point) + (*path == "/" ? std::string() : *path);
}

std::optional<std::string> OwnCgroupDir(std::string_view mountinfo, std::string_view self_cgroup) {
  const std::optional<std::string> path = UnifiedPath(self_cgroup);
  if (!path) return std::nullopt;
  for (std::string_view line : Lines(mountinfo)) {
    const std::vector<std::string_view> fields = Fields(line);
    // id parent major:minor root mount-point options [optional...] - type source super-options
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 5 || dash + 1 >= fields.size() || fields[dash + 1] != "cgroup2") continue;
    std::string root = Unescape(fields[3]);
    const std::string mount_point = Unescape(fields[4]);
    if (root == "/") root.clear();
    std::string_view relative = *path;
    if (!root.empty()) {
      if (!relative.starts_with(root) ||
          (relative.size() > root.size() && relative[root.size()] != '/')) {
        continue;
      }
      relative.remove_prefix(root.size());
    }
    if (relative == "/") relative = "";
    return mount_point + std::string(relative);
  }
  return std::nullopt;
}

std::optional<int> CgroupEventsValue(std::string_view events, std::string_view key) {
  for (std::string_view line : Lines(events)) {
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.size() != 2 || fields[0] != key) continue;
    int value = 0;
    const auto [end, ec] =
        std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), value);
    if (ec == std::errc() && end == fields[1].data() + fields[1].size()) return value;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace pdlaunch
