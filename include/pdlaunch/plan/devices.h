#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/plan/device_family.h"

namespace pdlaunch {

/// Tells how many devices of a family the machine has, when no visible-devices variable says it.
/// The real one (process/device_probe.h) runs the family's programs with a deadline and counts its
/// device files; tests use FakeDeviceProbe (tests/support/fake_device_probe.h).
class DeviceProbe {
 public:
  virtual ~DeviceProbe() = default;
  /// Number of devices of `family`; 0 when there is no driver, no device, or no way to tell.
  /// Never throws.
  virtual int Count(const DeviceFamily& family) = 0;
};

/// Counts what `nvidia-smi -L` prints: one "GPU <n>: ..." line a GPU.
int CountNvidiaSmiGpus(const std::string& output);
/// Counts what `npu-smi info` prints: one table row "| <id> <name> | <health> | ..." a chip.
int CountNpuSmiChips(const std::string& output);
/// Counts what `rocm-smi --showid` prints: the distinct "GPU[<n>]" line prefixes.
int CountRocmSmiGpus(const std::string& output);

/// The probe of the usage checks that run before anything is probed: it finds no device, so
/// that only what the command line or the environment lists is checked (a check never fails on
/// what this machine happens to have or lack).
class NoDeviceProbe : public DeviceProbe {
 public:
  int Count(const DeviceFamily&) override { return 0; }
};

/// Decided device layout of the local trainers.
struct DevicePlan {
  DeviceFamily family;                 ///< CpuFamily() in CPU mode.
  DeviceMode mode = DeviceMode::kCpu;  ///< family.mode.
  /// One entry per local trainer: the device ids (logical, relative to the family's visible list)
  /// it is bound to. Empty inner lists in CPU mode.
  std::vector<std::vector<int>> devices_per_proc;
  std::string backend;                ///< family.backend: nccl, bkcl, xccl, or gloo on CPU.
  std::vector<std::string> info;      ///< Lines to log at INFO (e.g. the relative-ids message).
  std::vector<std::string> warnings;  ///< Lines to log at WARNING.
  std::string mode_line;              ///< "launch train in GPU mode!" / "... CPU mode" / ...
};

/// Inputs of ResolveDevices that come from the environment.
struct DeviceEnv {
  std::optional<std::string> cuda_visible_devices;  ///< Value of CUDA_VISIBLE_DEVICES, if set.
  /// Where the process count came from, for its range error (PADDLE_NPROC_PER_NODE for the
  /// environment twin: LaunchOptions::FlagName).
  std::string nproc_per_node_name = "--nproc_per_node";
  /// The name the device list was given under, for its messages (--gpus, --devices, --npus,
  /// --selected_gpus, PADDLE_DEVICES: LaunchOptions::FlagName).
  std::string gpus_name = "--gpus";
  /// The other visible-devices variables (ReadVisibleDevices): xpu and custom devices.
  std::optional<std::string> xpu_visible_devices;
  std::optional<std::string> xccl_backend;
  std::optional<std::string> custom_visible_devices;
  /// The list came as --xpus or --selected_xpus: the XPU family, whatever else is set.
  bool xpus = false;
};

/// The labels the driver knows devices `ids` by (what nvidia-smi --id= or CUDA_VISIBLE_DEVICES
/// take): each id's entry in the family's `visible` list when that decides (Decides), else the id
/// itself.
std::vector<std::string> PhysicalLabels(const std::vector<int>& ids,
                                        const std::optional<std::string>& visible);

/// DeviceEnv from the environment's variables, names for messages from the caller.
DeviceEnv DeviceEnvFrom(const VisibleDevices& visible, std::string nproc_per_node_name,
                        std::string gpus_name, bool xpus);

/// Decides the device family and per-process device lists (docs/cli.md, "Devices"; docs/env.md,
/// "Device mode"; issue #27):
/// * The family: `backend` nccl → GPU, bkcl (or the list given as --xpus) → XPU, xccl → the
///   custom device of PADDLE_XCCL_BACKEND (a UsageError without it). With auto, Paddle's order:
///   PADDLE_XCCL_BACKEND set → that custom device; CUDA_VISIBLE_DEVICES decides → GPU;
///   XPU_VISIBLE_DEVICES (or XPULINK_VISIBLE_DEVICES) decides → XPU; else the probe, GPU then XPU
///   (Decides: set, non-empty, not "all").
/// * `gpus` (the device list, under any of its names) given: tokens comma-split and
///   whitespace-stripped, each a non-negative integer (else UsageError naming the token); with
///   the family's visible list each token must be in it and becomes its position there (info
///   line "Change selected_<type>s into reletive values. ..."), else a UsageError naming the
///   token and the list; without one, if the probe finds no device a warning is added and the
///   job runs as asked.
/// * `gpus` absent: the visible list decides the count (ids 0..n-1, no probe; CUDA's list stops
///   at its first invalid entry, "-1" hides every GPU); else the probe's count; 0 → CPU mode
///   (a LaunchError for a custom device or a backend that needs devices).
/// * `nproc_per_node` chunks the list into that many equal consecutive chunks (UsageError when
///   it does not divide the list, or is < 1). In CPU mode it is the process count (default 1).
/// * `backend` "gloo" forces CPU mode. `probe` is called only when no variable decides.
DevicePlan ResolveDevices(const std::optional<std::string>& gpus,
                          const std::optional<int>& nproc_per_node, const std::string& backend,
                          const DeviceEnv& env, DeviceProbe& probe);

}  // namespace pdlaunch
