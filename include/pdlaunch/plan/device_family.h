#pragma once

// The device families Paddle trains on, in one table (docs/cli.md, "Devices"; issue #27):
// what each family's visible-devices variable, selected-device key, collective backend and probe
// are. Adding a family is one entry of kFamilies in device_family.cc. Pure: no I/O.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pdlaunch {

/// What kind of device the local trainers use.
enum class DeviceMode {
  kCpu,
  kGpu,     ///< CUDA, and ROCm/DCU (Paddle's HIP build reads CUDA_VISIBLE_DEVICES too).
  kXpu,     ///< Kunlun XPU.
  kCustom,  ///< A PaddleCustomDevice card named by PADDLE_XCCL_BACKEND (npu, mlu, gcu, ...).
};

/// One family: everything that differs between device kinds.
struct DeviceFamily {
  DeviceMode mode = DeviceMode::kCpu;
  std::string type = "cpu";      ///< gpu, xpu, or the custom type (npu, mlu, gcu, ...).
  std::string visible_variable;  ///< CUDA_VISIBLE_DEVICES, XPU_VISIBLE_DEVICES, NPU_..., TOPS_...
  std::string selected_key;      ///< FLAGS_selected_gpus, _xpus, _npus, ...; empty on CPU.
  std::string backend = "gloo";  ///< nccl, bkcl, xccl, gloo.
  std::string mode_line = "launch train in CPU mode";
  /// The programs and device files the probe reads to count devices when no visible-devices
  /// variable says it (docs/cli.md, "Devices"); empty when the family has no probe.
  std::vector<std::string> probe_programs;
  std::string device_files;  ///< "/dev/davinci": counts /dev/davinci<N>; may be empty.
  /// Variables every process of the family gets besides its selected key: custom devices'
  /// PADDLE_DISTRI_BACKEND=xccl and PADDLE_XCCL_BACKEND=<type> (docs/cli.md, "Devices").
  std::vector<std::pair<std::string, std::string>> env;

  bool accelerated() const { return mode != DeviceMode::kCpu; }
  bool operator==(const DeviceFamily&) const = default;
};

DeviceFamily CpuFamily();
DeviceFamily GpuFamily();
DeviceFamily XpuFamily();
/// The family of PADDLE_XCCL_BACKEND=`type`: the table's entry when it has one (npu with its
/// npu-smi probe, gcu with TOPS_VISIBLE_DEVICES), else <TYPE>_VISIBLE_DEVICES and no probe.
/// `type` must pass CheckCustomDeviceType.
DeviceFamily CustomFamily(const std::string& type);

/// UsageError unless `type` (PADDLE_XCCL_BACKEND's value) is a device type name: 1 to 32
/// lower-case letters, digits or '_', starting with a letter (it becomes part of variable names).
void CheckCustomDeviceType(const std::string& type);

/// The visible-devices variables of the environment, as detection reads them.
struct VisibleDevices {
  std::optional<std::string> xccl_backend;  ///< PADDLE_XCCL_BACKEND.
  std::optional<std::string> custom;        ///< That type's <TYPE>_VISIBLE_DEVICES (or TOPS_...).
  std::optional<std::string> cuda;          ///< CUDA_VISIBLE_DEVICES.
  std::optional<std::string> xpu;           ///< XPU_VISIBLE_DEVICES, else XPULINK_VISIBLE_DEVICES.
};

/// Reads VisibleDevices through `get` (name → value if set).
template <typename Get>
VisibleDevices ReadVisibleDevices(Get get) {
  VisibleDevices visible;
  visible.xccl_backend = get("PADDLE_XCCL_BACKEND");
  if (visible.xccl_backend && !visible.xccl_backend->empty()) {
    try {
      visible.custom = get(CustomFamily(*visible.xccl_backend).visible_variable);
    } catch (...) {
      // A bad type name: ResolveDevices reports it, naming the variable.
    }
  }
  visible.cuda = get("CUDA_VISIBLE_DEVICES");
  visible.xpu = get("XPU_VISIBLE_DEVICES");
  if (!visible.xpu) visible.xpu = get("XPULINK_VISIBLE_DEVICES");
  return visible;
}

/// Whether a visible-devices value decides the devices: set, not empty, not "all". Paddle's
/// newest launcher takes an empty value as one device named "" and crashes later; an empty
/// value is taken as unset here, as Paddle's older launchers did (docs/cli.md, "Devices").
bool Decides(const std::optional<std::string>& value);

/// The family's name in messages: "GPU", "XPU", "NPU", ...
std::string DeviceName(const DeviceFamily& family);

}  // namespace pdlaunch
