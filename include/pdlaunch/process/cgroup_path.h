#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pdlaunch {

/// Where this process's cgroup v2 directory is, from the text of /proc/self/mountinfo and of
/// /proc/self/cgroup (pure: the caller reads the files). The unified hierarchy is the mount of
/// type cgroup2: /sys/fs/cgroup on pure v2 hosts, /sys/fs/cgroup/unified on hybrid ones. Its
/// mount root (field 4, "/" unless a container mounted a subtree) is taken off the "0::<path>"
/// line of /proc/self/cgroup. nullopt: no cgroup2 mount, no "0::" line (a v1-only host), or a
/// cgroup outside the mounted subtree.
std::optional<std::string> OwnCgroupDir(std::string_view mountinfo, std::string_view self_cgroup);

/// The same for a cgroup2 mount at `mount_point` that shows the whole hierarchy (mount root "/",
/// as at /sys/fs/cgroup or /sys/fs/cgroup/unified, and in a container with its own cgroup
/// namespace): `mount_point` plus the "0::<path>" of /proc/self/cgroup, without reading
/// mountinfo. nullopt: no "0::" line. Whether the mount really shows the whole hierarchy is the
/// caller's to find out (JobCgroup: a mkdir under it fails with ENOENT when it does not).
std::optional<std::string> OwnCgroupDirUnder(std::string_view mount_point,
                                             std::string_view self_cgroup);

/// The value of `key` ("populated", "frozen") in the text of a cgroup.events file; nullopt when
/// absent or not a number.
std::optional<int> CgroupEventsValue(std::string_view events, std::string_view key);

}  // namespace pdlaunch
