#include "pdlaunch/process/numa_probe.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "pdlaunch/base/endpoint.h"          // SplitAndStrip, StripSpace
#include "pdlaunch/plan/training_command.h"  // FindProgram
#include "pdlaunch/process/device_probe.h"

namespace pdlaunch {

namespace fs = std::filesystem;

namespace {

// A sysfs attribute: one short line.
std::optional<std::string> ReadAttribute(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  if (line.size() > 64 * 1024) return std::nullopt;
  return std::string(StripSpace(line));
}

std::optional<int> ToInt(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// <prefix><N> entries of `dir`.
std::map<int, fs::path> Numbered(const fs::path& dir, std::string_view prefix) {
  std::map<int, fs::path> found;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    if (const auto n = ToInt(std::string_view(name).substr(prefix.size())); n && *n >= 0) {
      found[*n] = entry.path();
    }
  }
  return found;
}

}  // namespace

NumaTopology ReadNumaTopology(const std::string& root) {
  NumaTopology topology;
  for (const auto& [node, path] : Numbered(fs::path(root + "/sys/devices/system/node"), "node")) {
    if (const auto text = ReadAttribute(path / "cpulist")) {
      if (auto cpus = ParseCpuList(*text)) topology.node_cpus[node] = std::move(*cpus);
    }
  }
  for (const auto& [cpu, path] : Numbered(fs::path(root + "/sys/devices/system/cpu"), "cpu")) {
    if (const auto text = ReadAttribute(path / "topology" / "physical_package_id")) {
      if (const auto package = ToInt(*text)) topology.cpu_package[cpu] = *package;
    }
  }
  return topology;
}

std::optional<int> PciNumaNode(const std::string& root, const std::string& sysfs_address) {
  const auto text =
      ReadAttribute(fs::path(root + "/sys/bus/pci/devices") / sysfs_address / "numa_node");
  if (!text) return std::nullopt;
  const auto node = ToInt(*text);
  return node && *node >= 0 ? node : std::nullopt;
}

std::map<std::string, std::string> NvidiaPciAddresses() {
  std::map<std::string, std::string> addresses;
  const char* path = std::getenv("PATH");
  if (!FindProgram("nvidia-smi", path != nullptr ? path : "/bin:/usr/bin")) return addresses;
  const auto output =
      CaptureOutput({"nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"});
  if (!output) return addresses;
  for (const std::string& line : SplitAndStrip(*output, '\n')) {
    const std::vector<std::string> fields = SplitAndStrip(line, ',');
    if (fields.size() != 2 || !ToInt(fields[0])) continue;
    if (const auto address = PciSysfsName(fields[1])) addresses[fields[0]] = *address;
  }
  return addresses;
}

}  // namespace pdlaunch
