#include "pdlaunch/plan/device_family.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {

namespace {

// One row a family (docs/cli.md, "Devices"; Paddle's launch/context/device.py and
// utils/nvsmi.py). A custom type without a row gets <TYPE>_VISIBLE_DEVICES and no probe.
struct FamilyRow {
  std::string_view type;
  DeviceMode mode;
  std::string_view visible_variable;
  std::string_view backend;
  std::string_view mode_line;
  std::array<std::string_view, 2> probe_programs;
  std::string_view device_files;
};

constexpr auto kFamilies = std::to_array<FamilyRow>({
    // CUDA, and ROCm/DCU: Paddle's HIP build is "compiled with CUDA" and reads
    // CUDA_VISIBLE_DEVICES; rocm-smi counts its cards.
    {"gpu",
     DeviceMode::kGpu,
     "CUDA_VISIBLE_DEVICES",
     "nccl",
     "launch train in GPU mode!",
     {"nvidia-smi", "rocm-smi"},
     ""},
    {"xpu",
     DeviceMode::kXpu,
     "XPU_VISIBLE_DEVICES",
     "bkcl",
     "launch train in XPU mode!",
     {"", ""},
     "/dev/xpu"},
    {"npu",
     DeviceMode::kCustom,
     "NPU_VISIBLE_DEVICES",
     "xccl",
     "",
     {"npu-smi", ""},
     "/dev/davinci"},
    {"gcu", DeviceMode::kCustom, "TOPS_VISIBLE_DEVICES", "xccl", "", {"", ""}, ""},
});

DeviceFamily FromRow(const FamilyRow& row) {
  DeviceFamily family;
  family.mode = row.mode;
  family.type = std::string(row.type);
  family.visible_variable = std::string(row.visible_variable);
  family.selected_key = fmt::format("FLAGS_selected_{}s", row.type);
  family.backend = std::string(row.backend);
  family.mode_line = std::string(row.mode_line);
  for (std::string_view program : row.probe_programs) {
    if (!program.empty()) family.probe_programs.emplace_back(program);
  }
  family.device_files = std::string(row.device_files);
  return family;
}

const FamilyRow& Row(std::string_view type) {
  return *std::find_if(kFamilies.begin(), kFamilies.end(),
                       [type](const FamilyRow& row) { return row.type == type; });
}

std::string Upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

DeviceFamily CpuFamily() { return DeviceFamily{}; }

DeviceFamily GpuFamily() { return FromRow(Row("gpu")); }

DeviceFamily XpuFamily() { return FromRow(Row("xpu")); }

void CheckCustomDeviceType(const std::string& type) {
  const bool ok = !type.empty() && type.size() <= 32 &&
                  std::islower(static_cast<unsigned char>(type.front())) &&
                  std::all_of(type.begin(), type.end(), [](char c) {
                    return std::islower(static_cast<unsigned char>(c)) ||
                           std::isdigit(static_cast<unsigned char>(c)) || c == '_';
                  });
  if (!ok) {
    throw UsageError(fmt::format(
        "PADDLE_XCCL_BACKEND: '{}' is not a device type (npu, mlu, gcu, ...: lower-case "
        "letters, digits and '_', at most 32)",
        OneLine(type)));
  }
}

DeviceFamily CustomFamily(const std::string& type) {
  CheckCustomDeviceType(type);
  const auto row = std::find_if(kFamilies.begin(), kFamilies.end(), [&type](const FamilyRow& r) {
    return r.type == type && r.mode == DeviceMode::kCustom;
  });
  DeviceFamily family;
  if (row != kFamilies.end()) {
    family = FromRow(*row);
  } else {
    family.mode = DeviceMode::kCustom;
    family.type = type;
    family.visible_variable = Upper(type) + "_VISIBLE_DEVICES";
    family.selected_key = fmt::format("FLAGS_selected_{}s", type);
    family.backend = "xccl";
  }
  family.mode_line = fmt::format("launch train in {} mode!", Upper(type));
  family.env = {{"PADDLE_DISTRI_BACKEND", "xccl"}, {"PADDLE_XCCL_BACKEND", type}};
  return family;
}

std::string DeviceName(const DeviceFamily& family) { return Upper(family.type); }

bool Decides(const std::optional<std::string>& value) {
  return value && !value->empty() && *value != "all";
}

}  // namespace pdlaunch
