// The port rules of a job, pure: the candidate range beside the kernel's ephemeral ports, the
// kernel's port settings and socket tables read from text, the fixed start port. Their effects
// (locks, bind tests, procfs) are in plan/port_allocator.cc.
#include "pdlaunch/plan/ports.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

constexpr int kMinPort = 1;
constexpr int kMaxPort = 65535;
constexpr int kCandidateFloor = 20000;
constexpr int kLastResortFloor = 1024;
constexpr int kMinComfortableRun = 1024;
constexpr const char* kTcpListenState = "0A";

using Run = std::pair<int, int>;

int RunSize(const Run& run) { return std::max(0, run.second - run.first + 1); }

// The larger of the two runs of [floor, ceil] left of and right of [lo, hi]; on a tie the lower.
Run LargestRunOutside(int floor, int ceil, int lo, int hi) {
  Run below{floor, std::min(lo - 1, ceil)};
  Run above{std::max(hi + 1, floor), ceil};
  return RunSize(below) >= RunSize(above) ? below : above;
}

std::string_view Trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

// Decimal digits only (no sign, no base prefix), any value; nullopt otherwise.
std::optional<long> ParseDecimal(std::string_view text) {
  if (text.empty()) return std::nullopt;
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.front() == '-') {
    return std::nullopt;
  }
  return value;
}

std::optional<int> ParsePortNumber(std::string_view text) {
  std::optional<long> value = ParseDecimal(Trim(text));
  if (!value || *value < kMinPort || *value > kMaxPort) return std::nullopt;
  return static_cast<int>(*value);
}

// Splits one /proc/net/tcp line into whitespace-separated fields.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while ((pos = line.find_first_not_of(" \t", pos)) != std::string_view::npos) {
    size_t end = line.find_first_of(" \t", pos);
    if (end == std::string_view::npos) end = line.size();
    fields.push_back(line.substr(pos, end - pos));
    pos = end;
  }
  return fields;
}

// Appends the inode of `line` to `listen` or `other` when its local port is `port`.
void CollectInode(std::string_view line, int port, std::vector<unsigned long>& listen,
                  std::vector<unsigned long>& other) {
  std::vector<std::string_view> fields = Fields(line);
  if (fields.size() < 10) return;
  std::string_view local = fields[1];
  size_t colon = local.rfind(':');
  if (colon == std::string_view::npos) return;
  std::string_view hex_port = local.substr(colon + 1);
  int local_port = 0;
  auto [end, ec] =
      std::from_chars(hex_port.data(), hex_port.data() + hex_port.size(), local_port, 16);
  if (ec != std::errc() || end != hex_port.data() + hex_port.size() || local_port != port) return;
  unsigned long inode = 0;
  std::string_view text = fields[9];
  auto [inode_end, inode_ec] = std::from_chars(text.data(), text.data() + text.size(), inode);
  if (inode_ec != std::errc() || inode_end != text.data() + text.size() || inode == 0) return;
  (fields[3] == kTcpListenState ? listen : other).push_back(inode);
}

void CollectInodes(std::string_view text, int port, std::vector<unsigned long>& listen,
                   std::vector<unsigned long>& other) {
  size_t pos = text.find('\n');  // The first line is the header.
  while (pos != std::string_view::npos && pos + 1 < text.size()) {
    size_t end = text.find('\n', pos + 1);
    CollectInode(text.substr(pos + 1, end == std::string_view::npos ? end : end - pos - 1), port,
                 listen, other);
    pos = end;
  }
}

}  // namespace

std::pair<int, int> CandidatePortRange(int eph_lo, int eph_hi) {
  const Run whole{kCandidateFloor, kMaxPort};
  if (eph_lo > eph_hi) return whole;
  Run best = LargestRunOutside(kCandidateFloor, kMaxPort, eph_lo, eph_hi);
  if (RunSize(best) >= kMinComfortableRun) return best;
  Run wide = LargestRunOutside(kLastResortFloor, kMaxPort, eph_lo, eph_hi);
  if (RunSize(wide) > RunSize(best)) return wide;
  return RunSize(best) > 0 ? best : whole;
}

std::optional<std::pair<int, int>> ParseLocalPortRange(std::string_view text) {
  std::vector<std::string_view> fields = Fields(Trim(text));
  if (fields.size() != 2) return std::nullopt;
  std::optional<int> lo = ParsePortNumber(fields[0]);
  std::optional<int> hi = ParsePortNumber(fields[1]);
  if (!lo || !hi) return std::nullopt;
  return Run{*lo, *hi};
}

std::vector<std::pair<int, int>> ParseReservedPorts(std::string_view text) {
  std::vector<Run> ranges;
  text = Trim(text);
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    size_t dash = item.find('-');
    std::optional<int> lo = ParsePortNumber(item.substr(0, dash));
    std::optional<int> hi =
        dash == std::string_view::npos ? lo : ParsePortNumber(item.substr(dash + 1));
    if (lo && hi && *lo <= *hi) ranges.emplace_back(*lo, *hi);
  }
  return ranges;
}

std::optional<int> FixedStartPort(const std::optional<int>& start_port,
                                  const std::optional<std::string>& flags_start_port,
                                  const std::optional<std::string>& paddle_start_port) {
  if (start_port) {
    if (*start_port < kMinPort || *start_port > kMaxPort) {
      throw UsageError(fmt::format("--start_port: {} is not a port number", *start_port));
    }
    return start_port;
  }
  const std::pair<const char*, const std::optional<std::string>*> sources[] = {
      {"FLAGS_START_PORT", &flags_start_port}, {"PADDLE_START_PORT", &paddle_start_port}};
  for (const auto& [name, value] : sources) {
    if (!*value || (*value)->empty()) continue;
    std::optional<int> port = ParsePortNumber(**value);
    if (!port) throw UsageError(fmt::format("{}: '{}' is not a port number", name, **value));
    return port;
  }
  return std::nullopt;
}

bool IsPortNumber(long value) { return value >= kMinPort && value <= kMaxPort; }

std::vector<unsigned long> SocketInodesForPort(std::string_view proc_net_tcp, int port) {
  std::vector<unsigned long> listen;
  std::vector<unsigned long> other;
  CollectInodes(proc_net_tcp, port, listen, other);
  listen.insert(listen.end(), other.begin(), other.end());
  return listen;
}

}  // namespace pdlaunch
