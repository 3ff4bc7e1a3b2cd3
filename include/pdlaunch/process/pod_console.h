#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/base/exit_status.h"

namespace pdlaunch {

// The lines of today's launcher's console (`python -m paddle.distributed.launch` since Paddle
// 2.3), shown for a command that uses its interface (UsesNewInterface): its Job, Pod and
// Container strings, verbatim. docs/cli.md, "Console".

/// `Job: <id>, mode <mode>, replicas <r>[<min>:<max>], elastic <True|False>` for --nnodes
/// `nnodes` ("N", "MIN:MAX", or empty for 1): a range has replicas MAX and is elastic, even 5:5.
std::string FormatJobLine(std::string_view job_id, std::string_view mode, std::string_view nnodes);

/// `Pod: <name>, replicas <n>, status <status>` (logged after "Run " and "Watching ").
std::string FormatPodLine(std::string_view name, int replicas, std::string_view status);

/// Python's returncode of a process that ended so: its exit code, or minus the signal.
int PythonReturnCode(const ExitStatus& status);

/// `Container rank <local index> status <status> cmd <argv as a Python list> code <code> log
/// <log path>`.
std::string FormatContainerLine(int local_index, std::string_view status,
                                const std::vector<std::string>& argv, int code,
                                std::string_view log_path);

/// An environment ("NAME=value" entries, `shared` first when given) as a Python dict repr, the
/// way Paddle 3 prints a container's env with FLAGS_print_launcher_env: a name set twice keeps
/// its first place and its last value. `{'A': '1', 'B': 'x=y'}`.
std::string FormatEnvDict(const std::vector<std::string>* shared,
                          const std::vector<std::string>& own);

/// The same environment as Paddle 3's envlog.N: one `NAME=value` line per name, sorted by name,
/// each name's last value.
std::string FormatEnvLog(const std::vector<std::string>* shared,
                         const std::vector<std::string>& own);

/// The header Paddle logs before a failed container's tail.
inline constexpr std::string_view kErrorLogDetail =
    "------------------------- ERROR LOG DETAIL -------------------------";

/// Bytes of a failed container's log shown after kErrorLogDetail (Paddle's Container.tail).
inline constexpr int kErrorTailBytes = 3000;

}  // namespace pdlaunch
