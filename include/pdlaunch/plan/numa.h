#pragma once

// Ranks next to their device (--numa_binding; issue #27 item 5): which CPUs, and which memory
// node, each rank gets from the NUMA node of its device. Pure: the topology comes from
// process/numa_probe.h.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pdlaunch {

/// torchrun's --numa-binding modes (pytorch PR #149334), plus none.
enum class NumaBinding {
  kNone,
  kNode,       ///< The CPUs of the device's NUMA node, and memory preferred from that node.
  kSocket,     ///< The CPUs of the device's socket (every node of its package).
  kExclusive,  ///< The device's node's CPUs, split among the ranks bound to that node.
};

/// "none", "node", "socket", "exclusive"; nullopt for anything else.
std::optional<NumaBinding> ParseNumaBinding(std::string_view text);

/// "0-3,8,10-11" → {0,1,2,3,8,10,11} (the kernel's cpulist format); nullopt when malformed or a
/// CPU number is past 4095.
std::optional<std::vector<int>> ParseCpuList(std::string_view text);
/// The inverse: ascending ranges.
std::string FormatCpuList(const std::vector<int>& cpus);

/// The machine as sysfs shows it.
struct NumaTopology {
  std::map<int, std::vector<int>> node_cpus;  ///< Node → its CPUs (ascending).
  std::map<int, int> cpu_package;             ///< CPU → physical_package_id.
};

/// "00000000:18:00.0" (nvidia-smi's pci.bus_id) → "0000:18:00.0" (the name under
/// /sys/bus/pci/devices); nullopt when it is not such an address.
std::optional<std::string> PciSysfsName(std::string_view bus_id);

/// Where one process runs.
struct NumaPlacement {
  std::vector<int> cpus;    ///< Empty: left alone.
  int preferred_node = -1;  ///< set_mempolicy(MPOL_PREFERRED) target; -1: left alone.
};

/// The placement of each process: `device_nodes[i]` is the NUMA node of process i's (first)
/// device, nullopt when it has none or the node is unknown (left alone). `info` gets one line
/// per process saying where it goes, or why it is left alone.
std::vector<NumaPlacement> PlaceOnNuma(NumaBinding binding, const NumaTopology& topology,
                                       const std::vector<std::optional<int>>& device_nodes,
                                       std::vector<std::string>& info);

}  // namespace pdlaunch
