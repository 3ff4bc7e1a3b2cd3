#include "pdlaunch/plan/numa.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "pdlaunch/base/endpoint.h"  // SplitAndStrip

namespace pdlaunch {

namespace {

constexpr int kMaxCpu = 4095;

std::optional<int> ToCpu(std::string_view text) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0 ||
      value > kMaxCpu) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<NumaBinding> ParseNumaBinding(std::string_view text) {
  if (text == "none") return NumaBinding::kNone;
  if (text == "node") return NumaBinding::kNode;
  if (text == "socket") return NumaBinding::kSocket;
  if (text == "exclusive") return NumaBinding::kExclusive;
  return std::nullopt;
}

std::optional<std::vector<int>> ParseCpuList(std::string_view text) {
  std::set<int> cpus;
  const std::string_view trimmed = StripSpace(text);
  if (trimmed.empty()) return std::vector<int>{};
  for (const std::string& item : SplitAndStrip(trimmed, ',')) {
    const size_t dash = item.find('-');
    const std::optional<int> first = ToCpu(std::string_view(item).substr(0, dash));
    const std::optional<int> last =
        dash == std::string::npos ? first : ToCpu(std::string_view(item).substr(dash + 1));
    if (!first || !last || *last < *first) return std::nullopt;
    for (int cpu = *first; cpu <= *last; ++cpu) cpus.insert(cpu);
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

std::optional<std::string> PciSysfsName(std::string_view bus_id) {
  // [domain:]bus:device.function, domain of 4 or 8 hex digits.
  std::string id(StripSpace(bus_id));
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t first = id.find(':');
  if (first == std::string::npos) return std::nullopt;
  if (id.find(':', first + 1) == std::string::npos)
    id = "0000:" + id;
  else if (first == 8 && id.starts_with("0000"))
    id = id.substr(4);
  // Now dddd:bb:dd.f
  if (id.size() != 12 || id[4] != ':' || id[7] != ':' || id[10] != '.') return std::nullopt;
  for (size_t i = 0; i < id.size(); ++i) {
    if (i == 4 || i == 7 || i == 10) continue;
    if (!std::isxdigit(static_cast<unsigned char>(id[i]))) return std::nullopt;
  }
  return id;
}

std::vector<NumaPlacement> PlaceOnNuma(NumaBinding binding, const NumaTopology& topology,
                                       const std::vector<std::optional<int>>& device_nodes,
                                       std::vector<std::string>& info) {
  std::vector<NumaPlacement> placements(device_nodes.size());
  if (binding == NumaBinding::kNone) return placements;
  // For exclusive: the processes of each node, in order.
  std::map<int, std::vector<size_t>> sharing;
  for (size_t i = 0; i < device_nodes.size(); ++i) {
    if (device_nodes[i] && topology.node_cpus.count(*device_nodes[i])) {
      sharing[*device_nodes[i]].push_back(i);
    }
  }
  for (size_t i = 0; i < device_nodes.size(); ++i) {
    const std::optional<int>& node = device_nodes[i];
    const auto cpus_of = node ? topology.node_cpus.find(*node) : topology.node_cpus.end();
    if (!node || cpus_of == topology.node_cpus.end() || cpus_of->second.empty()) {
      info.push_back(fmt::format("numa binding: local process {} left alone ({})", i,
                                 !node ? "no device, or its NUMA node is unknown"
                                       : fmt::format("NUMA node {} has no CPUs listed", *node)));
      continue;
    }
    NumaPlacement& placement = placements[i];
    const std::vector<int>& node_cpus = cpus_of->second;
    switch (binding) {
      case NumaBinding::kNode:
        placement.cpus = node_cpus;
        placement.preferred_node = *node;
        break;
      case NumaBinding::kSocket: {
        const auto package = topology.cpu_package.find(node_cpus.front());
        if (package == topology.cpu_package.end()) {
          placement.cpus = node_cpus;
          break;
        }
        for (const auto& [cpu, pkg] : topology.cpu_package) {
          if (pkg == package->second) placement.cpus.push_back(cpu);
        }
        break;
      }
      case NumaBinding::kExclusive: {
        const std::vector<size_t>& group = sharing[*node];
        const size_t k = group.size();
        const size_t at =
            static_cast<size_t>(std::find(group.begin(), group.end(), i) - group.begin());
        if (node_cpus.size() < k) {  // Fewer CPUs than ranks: share round-robin.
          placement.cpus = {node_cpus[at % node_cpus.size()]};
        } else {
          const size_t base = node_cpus.size() / k;
          const size_t extra = node_cpus.size() % k;
          const size_t begin = at * base + std::min(at, extra);
          const size_t count = base + (at < extra ? 1 : 0);
          placement.cpus.assign(node_cpus.begin() + static_cast<std::ptrdiff_t>(begin),
                                node_cpus.begin() + static_cast<std::ptrdiff_t>(begin + count));
        }
        placement.preferred_node = *node;
        break;
      }
      case NumaBinding::kNone:
        break;
    }
    info.push_back(fmt::format("numa binding: local process {} on NUMA node {}: CPUs {}{}", i,
                               *node, FormatCpuList(placement.cpus),
                               placement.preferred_node >= 0
                                   ? fmt::format(", memory preferred from node {}", *node)
                                   : std::string()));
  }
  return placements;
}

}  // namespace pdlaunch
