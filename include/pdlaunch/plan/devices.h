#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pdlaunch {

/// What kind of device the local trainers use (contract §2.2).
enum class DeviceMode { kCpu, kGpu };

/// Tells how many CUDA devices the hardware has. The real one asks `nvidia-smi -L`, then
/// /proc/driver/nvidia/gpus; tests use FakeDeviceProbe.
class DeviceProbe {
 public:
  virtual ~DeviceProbe() = default;
  /// Number of physical GPUs; 0 when there is no driver or no device. Never throws.
  virtual int CountGpus() = 0;
};

/// The real probe. `nvidia_smi` is the program to run (looked up in PATH).
std::unique_ptr<DeviceProbe> MakeSystemDeviceProbe(std::string nvidia_smi = "nvidia-smi");

/// A probe that reports a fixed count.
class FakeDeviceProbe : public DeviceProbe {
 public:
  explicit FakeDeviceProbe(int count) : count_(count) {}
  int CountGpus() override {
    ++calls_;
    return count_;
  }
  int calls() const { return calls_; }

 private:
  int count_;
  int calls_ = 0;
};

/// Decided device layout of the local trainers.
struct DevicePlan {
  DeviceMode mode = DeviceMode::kCpu;
  /// One entry per local trainer: the device ids (logical, relative to CUDA_VISIBLE_DEVICES)
  /// it is bound to. Empty inner lists in CPU mode.
  std::vector<std::vector<int>> devices_per_proc;
  std::string backend;                ///< "nccl" for GPU, "gloo" for CPU.
  std::vector<std::string> info;      ///< Lines to log at INFO (e.g. the relative-ids message).
  std::vector<std::string> warnings;  ///< Lines to log at WARNING.
  std::string mode_line;              ///< "launch train in GPU mode!" / "launch train in CPU mode".
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
};

/// Decides device mode and per-process device lists (contract §2.2, §3.2; issue #2 item 4):
/// * `gpus` given: tokens comma-split and whitespace-stripped, each a non-negative integer (else
///   UsageError naming the token); with a non-empty CUDA_VISIBLE_DEVICES each token must be listed
///   there and becomes its position in it (info line "Change selected_gpus into reletive values.
///   ..."); if the probe finds no GPU a warning is added and the job runs as asked.
/// * `gpus` absent: a non-empty CUDA_VISIBLE_DEVICES is trusted as the device list (ids 0..n-1,
///   the probe is not called); else the probe's count; 0 → CPU mode.
/// * `nproc_per_node` chunks the GPU list into that many equal consecutive chunks (UsageError
///   when it does not divide the list, or is < 1). In CPU mode it is the process count (default 1).
/// * `backend` "auto" picks nccl/gloo; "gloo" forces CPU mode; "nccl" without GPUs is an error.
/// `probe` is called at most once.
DevicePlan ResolveDevices(const std::optional<std::string>& gpus,
                          const std::optional<int>& nproc_per_node, const std::string& backend,
                          const DeviceEnv& env, DeviceProbe& probe);

}  // namespace pdlaunch
