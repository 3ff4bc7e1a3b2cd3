#pragma once
// The rules of a nested launch (docs/cli.md, "Nested launches"): every process the launcher
// starts carries a marker, and a launcher that finds it runs inside another job's process, where
// the variables the outer launcher set for its ranks are not this launcher's configuration. The
// parser (cli/) reads these rules and the spawner (process/, run/) writes the marker: they sit
// below both.

#include <string>
#include <string_view>

namespace pdlaunch {

/// Every process the launcher starts has this variable (the launcher's pid); a launcher that finds
/// it in its own environment runs inside another job's process (a nested launch).
inline constexpr std::string_view kNestedMarker = "PDLAUNCH_PARENT";

/// The entry "PDLAUNCH_PARENT=<pid>" the launcher gives the processes it starts: `pid` is its own
/// (getpid()).
std::string NestedMarkerEntry(int pid);

/// Whether the launcher sets `name` for the processes it starts (PADDLE_MASTER, PADDLE_NNODES,
/// PADDLE_LOG_DIR, PADDLE_TRAINER_ID, ...): a nested launcher does not read those as its own
/// configuration.
bool IsSetForRanks(std::string_view name);

}  // namespace pdlaunch
