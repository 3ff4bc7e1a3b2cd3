#pragma once

// The real DeviceProbe: the programs and device files of each family (issue #27).

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/plan/devices.h"

namespace pdlaunch {

/// The real probe (docs/cli.md, "Devices"): for GPUs `nvidia-smi -L`, then
/// /proc/driver/nvidia/gpus, then `rocm-smi --showid` where /dev/kfd exists; for XPUs the files
/// /dev/xpu0, /dev/xpu1, ... (a stat each); for NPUs `npu-smi info`, then /dev/davinci0, ....
/// Each program runs only when found on PATH, with a 10 s
/// deadline (its process group is killed past it). `root` prefixes /dev and /proc (tests).
std::unique_ptr<DeviceProbe> MakeSystemDeviceProbe(std::string root = "");

/// Starts `argv` (no shell, looked up in PATH) in a process group of its own, stdin and stderr on
/// /dev/null, stdout on `out_fd`, default signal dispositions and an empty mask; -1 on failure.
pid_t SpawnWithStdout(const std::vector<std::string>& argv, int out_fd);

/// At most this much of a probe's stdout is kept; more fails the probe.
inline constexpr size_t kMaxCapturedBytes = 1 << 20;

/// How CaptureOutput ended.
enum class CaptureEnd {
  kOk,          ///< Exited 0: its output is returned.
  kNotStarted,  ///< Not on PATH, not executable, or no process could be made.
  kFailed,      ///< Exited non-zero or was killed by a signal.
  kTimedOut,    ///< Still running at the deadline: its process group was killed.
  kTooLong,     ///< Wrote more than kMaxCapturedBytes: its process group was killed.
};

/// A probe's deadline: 10 s.
inline constexpr int kProbeTimeoutMs = 10000;

/// The stdout of `argv` (no shell; stdin and stderr on /dev/null, its own process group), or
/// nullopt unless it exits 0 within `timeout_ms` (one deadline to its exit, whenever its output
/// ends) having written at most kMaxCapturedBytes; otherwise the group is killed. Reaped. `end`,
/// if given, says how it ended.
std::optional<std::string> CaptureOutput(const std::vector<std::string>& argv,
                                         int timeout_ms = kProbeTimeoutMs,
                                         CaptureEnd* end = nullptr);

}  // namespace pdlaunch
