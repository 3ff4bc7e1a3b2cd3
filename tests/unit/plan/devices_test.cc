#include "pdlaunch/plan/devices.h"

#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "support/fake_device_probe.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using Ids = std::vector<std::vector<int>>;

using testutil::ErrorOf;

DeviceEnv WithCuda(const std::string& visible) {
  DeviceEnv env;
  env.cuda_visible_devices = visible;
  return env;
}

TEST(DevicesTest, WithoutGpusFlagOneProcessPerProbedGpu) {
  FakeDeviceProbe probe(4);
  const DevicePlan plan = ResolveDevices(std::nullopt, std::nullopt, "auto", {}, probe);
  EXPECT_EQ(plan.mode, DeviceMode::kGpu);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(plan.backend, "nccl");
  EXPECT_EQ(plan.mode_line, "launch train in GPU mode!");
  EXPECT_TRUE(plan.info.empty());
  EXPECT_TRUE(plan.warnings.empty());
  EXPECT_EQ(probe.calls(), 1);
}

TEST(DevicesTest, CudaVisibleDevicesIsTrustedWithoutProbing) {
  FakeDeviceProbe probe(8);
  const DevicePlan plan =
      ResolveDevices(std::nullopt, std::nullopt, "auto", WithCuda("4,5"), probe);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{0}, {1}}));
  EXPECT_EQ(probe.calls(), 0);
}

TEST(DevicesTest, CudaVisibleDevicesMinusOneHidesEveryGpu) {
  FakeDeviceProbe probe(8);
  const DevicePlan plan = ResolveDevices(std::nullopt, std::nullopt, "auto", WithCuda("-1"), probe);
  EXPECT_EQ(plan.mode, DeviceMode::kCpu);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{}}));
  EXPECT_EQ(probe.calls(), 0);
}

TEST(DevicesTest, CudaVisibleDevicesCountStopsAtFirstInvalidEntry) {
  FakeDeviceProbe probe(8);
  const DevicePlan plan =
      ResolveDevices(std::nullopt, std::nullopt, "auto", WithCuda("3,1,-1,2"), probe);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{0}, {1}}));
}

TEST(DevicesTest, EmptyCudaVisibleDevicesFallsBackToProbe) {
  FakeDeviceProbe probe(2);
  const DevicePlan plan = ResolveDevices(std::nullopt, std::nullopt, "auto", WithCuda(""), probe);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{0}, {1}}));
  EXPECT_EQ(probe.calls(), 1);
}

TEST(DevicesTest, GpusBecomeRelativeToCudaVisibleDevices) {
  FakeDeviceProbe probe(8);
  const DevicePlan plan = ResolveDevices("5,7", std::nullopt, "auto", WithCuda("4,5,6,7"), probe);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{1}, {3}}));
  ASSERT_EQ(plan.info.size(), 1u);
  EXPECT_EQ(plan.info[0],
            "Change selected_gpus into reletive values. --gpus:5,7 will change into "
            "relative_ids:[1, 3] according to your CUDA_VISIBLE_DEVICES:['4', '5', '6', '7']");
  EXPECT_EQ(probe.calls(), 0);
}

TEST(DevicesTest, GpuMissingFromCudaVisibleDevicesIsUsageError) {
  FakeDeviceProbe probe(8);
  EXPECT_EQ(ErrorOf<UsageError>(
                [&] { ResolveDevices("5,2", std::nullopt, "auto", WithCuda("4,5,6,7"), probe); }),
            "Can't find your gpus 2 in CUDA_VISIBLE_DEVICES[4,5,6,7].");
}

TEST(DevicesTest, GpusWithoutCudaVisibleDevicesAreUsedVerbatim) {
  FakeDeviceProbe probe(8);
  const DevicePlan plan = ResolveDevices(" 2 , 3", std::nullopt, "auto", {}, probe);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{2}, {3}}));
  EXPECT_TRUE(plan.info.empty());
  EXPECT_TRUE(plan.warnings.empty());
  EXPECT_EQ(probe.calls(), 1);
}

TEST(DevicesTest, GpusWithoutAnyGpuRunAsAskedWithWarning) {
  FakeDeviceProbe probe(0);
  const DevicePlan plan = ResolveDevices("0,1", std::nullopt, "auto", {}, probe);
  EXPECT_EQ(plan.mode, DeviceMode::kGpu);
  EXPECT_EQ(plan.backend, "nccl");
  EXPECT_EQ(plan.devices_per_proc, (Ids{{0}, {1}}));
  EXPECT_EQ(plan.warnings, (std::vector<std::string>{
                               "--gpus=0,1 given but no GPU was found on this machine; running "
                               "as asked"}));
}

TEST(DevicesTest, GpuTokenThatIsNotAnIdIsUsageError) {
  FakeDeviceProbe probe(8);
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices("0,x", std::nullopt, "auto", {}, probe); }),
            "--gpus: 'x' is not a device id");
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices("-1", std::nullopt, "auto", {}, probe); }),
            "--gpus: '-1' is not a device id");
  EXPECT_EQ(ErrorOf<UsageError>(
                [&] { ResolveDevices("x", std::nullopt, "auto", WithCuda("x,1"), probe); }),
            "--gpus: 'x' is not a device id");
}

TEST(DevicesTest, MessagesNameTheListAsItWasGiven) {
  FakeDeviceProbe probe(0);
  DeviceEnv env;
  env.gpus_name = "--devices";
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices("0,x", std::nullopt, "auto", env, probe); }),
            "--devices: 'x' is not a device id");
  EXPECT_EQ(ResolveDevices("0,1", std::nullopt, "auto", env, probe).warnings,
            (std::vector<std::string>{
                "--devices=0,1 given but no GPU was found on this machine; running as asked"}));
  EXPECT_EQ(ResolveDevices("0,1", std::nullopt, "gloo", env, probe).warnings,
            (std::vector<std::string>{"--devices=0,1 ignored: --backend=gloo runs on CPU"}));
  env.gpus_name = "PADDLE_DEVICES";
  env.cuda_visible_devices = "3,4";
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices("y", std::nullopt, "auto", env, probe); }),
            "PADDLE_DEVICES: 'y' is not a device id");
}

TEST(DevicesTest, EmptyGpuTokenIsUsageError) {
  FakeDeviceProbe probe(8);
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices("0,,1", std::nullopt, "auto", {}, probe); }),
            "--gpus: '' is not a device id");
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices("", std::nullopt, "auto", {}, probe); }),
            "--gpus: '' is not a device id");
}

TEST(DevicesTest, NprocPerNodeChunksTheGpuList) {
  FakeDeviceProbe probe(4);
  const DevicePlan plan = ResolveDevices("0,1,2,3", 2, "auto", {}, probe);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{0, 1}, {2, 3}}));
}

TEST(DevicesTest, NprocPerNodeChunksProbedGpus) {
  FakeDeviceProbe probe(8);
  const DevicePlan plan = ResolveDevices(std::nullopt, 2, "auto", {}, probe);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(DevicesTest, NprocPerNodeMustDivideGpuCount) {
  FakeDeviceProbe probe(4);
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices("0,1,2", 2, "auto", {}, probe); }),
            "gpus' number:3 mod args.nproc_per_node:2 must == 0");
}

TEST(DevicesTest, NprocPerNodeBelowOneIsUsageError) {
  FakeDeviceProbe gpus(4);
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices(std::nullopt, 0, "auto", {}, gpus); }),
            "--nproc_per_node: '0' must be at least 1");
  FakeDeviceProbe none(0);
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices(std::nullopt, -2, "auto", {}, none); }),
            "--nproc_per_node: '-2' must be at least 1");
}

TEST(DevicesTest, NprocPerNodeAboveThePortsOfAHostIsUsageError) {
  FakeDeviceProbe none(0);
  EXPECT_EQ(ResolveDevices(std::nullopt, 65535, "auto", {}, none).devices_per_proc.size(), 65535u);
  EXPECT_EQ(ErrorOf<UsageError>([&] { ResolveDevices(std::nullopt, 65536, "auto", {}, none); }),
            "--nproc_per_node: '65536' is more than 65535, the ports a host has for its "
            "processes");
  EXPECT_EQ(
      ErrorOf<UsageError>([&] { ResolveDevices(std::nullopt, 2147483647, "gloo", {}, none); }),
      "--nproc_per_node: '2147483647' is more than 65535, the ports a host has for its "
      "processes");
}

TEST(DevicesTest, NoGpuMeansOneCpuProcess) {
  FakeDeviceProbe probe(0);
  const DevicePlan plan = ResolveDevices(std::nullopt, std::nullopt, "auto", {}, probe);
  EXPECT_EQ(plan.mode, DeviceMode::kCpu);
  EXPECT_EQ(plan.backend, "gloo");
  EXPECT_EQ(plan.mode_line, "launch train in CPU mode");
  EXPECT_EQ(plan.devices_per_proc, (Ids{{}}));
}

TEST(DevicesTest, CpuModeRunsNprocPerNodeProcesses) {
  FakeDeviceProbe probe(0);
  const DevicePlan plan = ResolveDevices(std::nullopt, 3, "auto", {}, probe);
  EXPECT_EQ(plan.mode, DeviceMode::kCpu);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{}, {}, {}}));
}

TEST(DevicesTest, GlooBackendForcesCpuModeEvenWithGpus) {
  FakeDeviceProbe probe(4);
  const DevicePlan plan = ResolveDevices(std::nullopt, 2, "gloo", {}, probe);
  EXPECT_EQ(plan.mode, DeviceMode::kCpu);
  EXPECT_EQ(plan.backend, "gloo");
  EXPECT_EQ(plan.devices_per_proc, (Ids{{}, {}}));
  EXPECT_EQ(probe.calls(), 0);
}

TEST(DevicesTest, GlooBackendIgnoresGpusWithWarning) {
  FakeDeviceProbe probe(4);
  const DevicePlan plan = ResolveDevices("0,1", std::nullopt, "gloo", {}, probe);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{}}));
  EXPECT_EQ(plan.warnings,
            (std::vector<std::string>{"--gpus=0,1 ignored: --backend=gloo runs on CPU"}));
}

TEST(DevicesTest, NcclBackendWithoutGpuIsLaunchError) {
  FakeDeviceProbe probe(0);
  try {
    ResolveDevices(std::nullopt, std::nullopt, "nccl", {}, probe);
    FAIL() << "nothing thrown";
  } catch (const LaunchError& error) {
    EXPECT_EQ(error.exit_code(), kExitSetupError);
    EXPECT_STREQ(
        error.what(),
        "--backend=nccl needs a GPU, but none was found on this machine; pass --gpus (or set "
        "CUDA_VISIBLE_DEVICES) or "
        "use --backend=gloo");
  }
}

TEST(DevicesTest, NcclBackendWithGpusFlagRunsAsAsked) {
  FakeDeviceProbe probe(0);
  const DevicePlan plan = ResolveDevices("0", std::nullopt, "nccl", {}, probe);
  EXPECT_EQ(plan.mode, DeviceMode::kGpu);
  EXPECT_EQ(plan.devices_per_proc, (Ids{{0}}));
  EXPECT_EQ(plan.warnings.size(), 1u);
}

TEST(DevicesTest, UnknownBackendIsUsageError) {
  FakeDeviceProbe probe(1);
  EXPECT_EQ(
      ErrorOf<UsageError>([&] { ResolveDevices(std::nullopt, std::nullopt, "hccl", {}, probe); }),
      "--backend: 'hccl' is not supported (use auto, nccl, bkcl, xccl, heter or gloo)");
}

}  // namespace
}  // namespace pdlaunch
