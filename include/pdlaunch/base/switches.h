#pragma once
// The launcher's own switches: environment variables that change how the launcher does
// something (a diagnostic, a fallback, a test's fake tree), never what the job is. They are named
// in one table here, documented in docs/env.md ("What the launcher reads"; a unit test holds the
// two together), and read only through ReadSwitch (src/base/switches.cc): no other file of src/
// reads a PDLAUNCH_ switch (scripts/lint.sh fails one that does). Each is read where it acts, at
// that moment, so that a test may set it for one run.

#include <optional>
#include <string>

namespace pdlaunch {

enum class Switch {
  kNoCgroup,      ///< PDLAUNCH_NO_CGROUP: no cgroup for the job; the subreaper fallback.
  kEchoPoll,      ///< PDLAUNCH_ECHO_POLL=1: the console echo polls, as without dnotify.
  kSpawn,         ///< PDLAUNCH_SPAWN=fork: children forked where they could be cloned.
  kPortLockFile,  ///< PDLAUNCH_PORT_LOCK_FILE: the free-port lock file.
  kGpuLogPeriod,  ///< PDLAUNCH_GPU_LOG_PERIOD: seconds between two samples of the GPU log.
  kSysfsRoot,     ///< PDLAUNCH_SYSFS_ROOT: a directory standing for / when /sys is read.
};

struct SwitchInfo {
  Switch which;
  const char* name;
};

inline constexpr SwitchInfo kSwitches[] = {
    {Switch::kNoCgroup, "PDLAUNCH_NO_CGROUP"},
    {Switch::kEchoPoll, "PDLAUNCH_ECHO_POLL"},
    {Switch::kSpawn, "PDLAUNCH_SPAWN"},
    {Switch::kPortLockFile, "PDLAUNCH_PORT_LOCK_FILE"},
    {Switch::kGpuLogPeriod, "PDLAUNCH_GPU_LOG_PERIOD"},
    {Switch::kSysfsRoot, "PDLAUNCH_SYSFS_ROOT"},
};

/// The variable's name, "PDLAUNCH_...".
constexpr const char* SwitchName(Switch which) {
  for (const SwitchInfo& info : kSwitches) {
    if (info.which == which) return info.name;
  }
  return "";
}

/// The switch's value in the launcher's environment now; nullopt when it is unset or empty.
std::optional<std::string> ReadSwitch(Switch which);

/// Whether the switch is set to something other than "" and "0" (PDLAUNCH_NO_CGROUP).
bool SwitchOn(Switch which);

}  // namespace pdlaunch
