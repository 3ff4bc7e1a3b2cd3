#pragma once

// A test double of the device probe: fixed counts per family, and how often it was asked.

#include "pdlaunch/plan/device_family.h"
#include "pdlaunch/plan/devices.h"

namespace pdlaunch {

/// A probe that reports fixed counts.
class FakeDeviceProbe : public DeviceProbe {
 public:
  explicit FakeDeviceProbe(int gpus, int xpus = 0, int custom = 0)
      : gpus_(gpus), xpus_(xpus), custom_(custom) {}
  int Count(const DeviceFamily& family) override {
    ++calls_;
    switch (family.mode) {
      case DeviceMode::kGpu:
        return gpus_;
      case DeviceMode::kXpu:
        return xpus_;
      case DeviceMode::kCustom:
        return custom_;
      case DeviceMode::kCpu:
        break;
    }
    return 0;
  }
  int calls() const { return calls_; }

 private:
  int gpus_;
  int xpus_;
  int custom_;
  int calls_ = 0;
};

}  // namespace pdlaunch
