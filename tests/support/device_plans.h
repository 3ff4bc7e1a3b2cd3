#pragma once

#include "pdlaunch/plan/devices.h"

namespace pdlaunch::testutil {

/// CPU mode (gloo) with `processes` local processes and no devices.
inline DevicePlan CpuPlan(int processes) {
  DevicePlan plan;
  plan.mode = DeviceMode::kCpu;
  plan.backend = "gloo";
  plan.devices_per_proc.assign(static_cast<size_t>(processes), {});
  return plan;
}

/// GPU mode (nccl) with one GPU per process: process i uses GPU i.
inline DevicePlan GpuPlan(int processes) {
  DevicePlan plan;
  plan.family = GpuFamily();
  plan.mode = DeviceMode::kGpu;
  plan.backend = "nccl";
  for (int i = 0; i < processes; ++i) plan.devices_per_proc.push_back({i});
  return plan;
}

}  // namespace pdlaunch::testutil
