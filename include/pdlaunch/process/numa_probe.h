#pragma once

// What --numa_binding reads from the machine (issue #27 item 5): the NUMA topology from sysfs
// and each GPU's NUMA node through its PCI address. `root` prefixes /sys (tests: a fake tree).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/plan/numa.h"

namespace pdlaunch {

/// /sys/devices/system/node/node<k>/cpulist and /sys/devices/system/cpu/cpu<n>/topology/
/// physical_package_id. Unreadable or malformed entries are left out.
NumaTopology ReadNumaTopology(const std::string& root);

/// /sys/bus/pci/devices/<address>/numa_node; nullopt when missing or -1.
std::optional<int> PciNumaNode(const std::string& root, const std::string& sysfs_address);

/// Physical GPU index → PCI address as sysfs names it, from `nvidia-smi --query-gpu=index,
/// pci.bus_id --format=csv,noheader` (10 s deadline); empty when it cannot tell.
std::map<std::string, std::string> NvidiaPciAddresses();

}  // namespace pdlaunch
