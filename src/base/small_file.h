#pragma once
// Reading the small files of procfs, sysfs and cgroupfs; writing all of a text to a descriptor.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pdlaunch {

/// The whole file, or nullopt when it cannot be opened; a read error ends the text early.
/// Plain open(2) and read(2): this runs on every job's start, where an std::ifstream would
/// cost the launcher the one-time set-up of the C++ locale (0.07 ms, docs/performance.md).
std::optional<std::string> ReadSmallFile(const std::string& path);

/// The pids a kernel list file holds, separated by spaces or newlines (cgroup.procs,
/// /proc/<pid>/task/<tid>/children), in its order; nullopt when it cannot be opened.
std::optional<std::vector<pid_t>> ReadPidList(const std::string& path);

/// Writes all of `data` to `fd`, retrying on EINTR and short writes. Returns false on any other
/// error, errno saying which (e.g. EPIPE when the console went away). Never throws.
bool WriteAll(int fd, std::string_view data) noexcept;

}  // namespace pdlaunch
