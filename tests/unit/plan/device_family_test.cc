// Device families (issue #27): Paddle's detection order, per-family keys and backends, relative
// labels, the probes' parsers. Paddle's code cited: python/paddle/distributed/launch/context/
// device.py (parse_device L99-127, get_selected_device_key L69-80, get_custom_device_envs
// L92-96) and launch/controllers/collective.py (_build_pod_with_master).
#include "pdlaunch/plan/device_family.h"

#include <gtest/gtest.h>

#include <map>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/plan/devices.h"
#include "support/fake_device_probe.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using Ids = std::vector<std::vector<int>>;
using Vars = std::map<std::string, std::string>;
using testutil::ErrorOf;

struct Machine {
  int gpus = 0;
  int xpus = 0;
  int custom = 0;
};

DevicePlan Resolve(const Vars& vars, const std::optional<std::string>& list = std::nullopt,
                   const std::string& backend = "auto", Machine machine = {},
                   std::optional<int> nproc = std::nullopt, bool xpus_flag = false) {
  const VisibleDevices visible = ReadVisibleDevices([&vars](const std::string& name) {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  FakeDeviceProbe probe(machine.gpus, machine.xpus, machine.custom);
  return ResolveDevices(list, nproc, backend,
                        DeviceEnvFrom(visible, "--nproc_per_node", "--devices", xpus_flag), probe);
}

TEST(DeviceFamilyTest, EachFamilyHasItsVariableKeyAndBackend) {
  EXPECT_EQ(GpuFamily().visible_variable, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(GpuFamily().selected_key, "FLAGS_selected_gpus");
  EXPECT_EQ(GpuFamily().backend, "nccl");
  EXPECT_EQ(XpuFamily().visible_variable, "XPU_VISIBLE_DEVICES");
  EXPECT_EQ(XpuFamily().selected_key, "FLAGS_selected_xpus");
  EXPECT_EQ(XpuFamily().backend, "bkcl");
  const DeviceFamily npu = CustomFamily("npu");
  EXPECT_EQ(npu.visible_variable, "NPU_VISIBLE_DEVICES");
  EXPECT_EQ(npu.selected_key, "FLAGS_selected_npus");
  EXPECT_EQ(npu.backend, "xccl");
  EXPECT_EQ(npu.probe_programs, std::vector<std::string>{"npu-smi"});
  EXPECT_EQ(npu.env, (std::vector<std::pair<std::string, std::string>>{
                         {"PADDLE_DISTRI_BACKEND", "xccl"}, {"PADDLE_XCCL_BACKEND", "npu"}}));
  EXPECT_EQ(CustomFamily("gcu").visible_variable, "TOPS_VISIBLE_DEVICES");  // device.py L22-24.
  EXPECT_EQ(CustomFamily("mlu").visible_variable, "MLU_VISIBLE_DEVICES");
  EXPECT_EQ(CustomFamily("mlu").selected_key, "FLAGS_selected_mlus");
  EXPECT_EQ(CustomFamily("intel_gpu").selected_key, "FLAGS_selected_intel_gpus");
  EXPECT_EQ(CpuFamily().backend, "gloo");
  EXPECT_FALSE(CpuFamily().accelerated());
}

TEST(DeviceFamilyTest, ACustomTypeMustBeAName) {
  for (const std::string& bad :
       std::vector<std::string>{"", "NPU", "n pu", "npu;rm", "1npu", std::string(33, 'a')}) {
    EXPECT_THROW(CheckCustomDeviceType(bad), UsageError) << bad;
  }
  EXPECT_EQ(ErrorOf<UsageError>([] {
              Resolve({{"PADDLE_XCCL_BACKEND", "Np\x1bU"}});
            }),
            "PADDLE_XCCL_BACKEND: 'Np\\x1bU' is not a device type (npu, mlu, gcu, ...: lower-case "
            "letters, digits and '_', at most 32)");
}

// Every combination of PADDLE_XCCL_BACKEND, CUDA_VISIBLE_DEVICES and XPU_VISIBLE_DEVICES, each
// unset, empty, "all" or a list: the family found, in Paddle's order (device.py L99-127); the
// probe (8 GPUs, 4 XPUs, 2 NPUs) only when no variable decides.
TEST(DeviceFamilyTest, DetectionOrderForEveryCombination) {
  const std::vector<std::optional<std::string>> values = {std::nullopt, "", "all", "LIST"};
  for (const bool xccl : {false, true}) {
    for (const auto& cuda : values) {
      for (const auto& xpu : values) {
        Vars vars;
        if (xccl) vars["PADDLE_XCCL_BACKEND"] = "npu";
        if (xccl) vars["NPU_VISIBLE_DEVICES"] = "6,7,8";
        if (cuda) vars["CUDA_VISIBLE_DEVICES"] = *cuda == "LIST" ? "3,4" : *cuda;
        if (xpu) vars["XPU_VISIBLE_DEVICES"] = *xpu == "LIST" ? "5" : *xpu;
        const DevicePlan plan = Resolve(vars, std::nullopt, "auto", {8, 4, 2});
        const std::string where = testing::PrintToString(vars);
        if (xccl) {
          EXPECT_EQ(plan.family.type, "npu") << where;
          EXPECT_EQ(plan.devices_per_proc.size(), 3u) << where;
        } else if (cuda == "LIST") {
          EXPECT_EQ(plan.family.type, "gpu") << where;
          EXPECT_EQ(plan.devices_per_proc, (Ids{{0}, {1}})) << where;
        } else if (xpu == "LIST") {
          EXPECT_EQ(plan.family.type, "xpu") << where;
          EXPECT_EQ(plan.devices_per_proc, (Ids{{0}})) << where;
        } else {  // Unset, empty or "all": the probe, GPUs first.
          EXPECT_EQ(plan.family.type, "gpu") << where;
          EXPECT_EQ(plan.devices_per_proc.size(), 8u) << where;
        }
      }
    }
  }
  // No GPU: the XPUs the probe finds; none at all: CPU.
  EXPECT_EQ(Resolve({}, std::nullopt, "auto", {0, 4, 0}).family.type, "xpu");
  EXPECT_EQ(Resolve({}, std::nullopt, "auto", {0, 4, 0}).mode_line, "launch train in XPU mode!");
  EXPECT_EQ(Resolve({}, std::nullopt, "auto", {0, 0, 0}).mode, DeviceMode::kCpu);
  EXPECT_EQ(Resolve({{"XPULINK_VISIBLE_DEVICES", "0,1"}}).family.type, "xpu");
}

TEST(DeviceFamilyTest, LabelsAreRelativeToTheFamilysVisibleList) {
  const DevicePlan xpu = Resolve({{"XPU_VISIBLE_DEVICES", "4,5,6,7"}}, "5,6");
  EXPECT_EQ(xpu.devices_per_proc, (Ids{{1}, {2}}));
  EXPECT_EQ(xpu.backend, "bkcl");
  EXPECT_EQ(xpu.info,
            std::vector<std::string>{
                "Change selected_xpus into reletive values. --devices:5,6 will change into "
                "relative_ids:[1, 2] according to your XPU_VISIBLE_DEVICES:['4', '5', "
                "'6', '7']"});
  const Vars npus = {{"PADDLE_XCCL_BACKEND", "npu"}, {"NPU_VISIBLE_DEVICES", "0,1,2,3"}};
  const DevicePlan npu = Resolve(npus, "2,3");
  EXPECT_EQ(npu.devices_per_proc, (Ids{{2}, {3}}));
  EXPECT_EQ(npu.mode_line, "launch train in NPU mode!");
  EXPECT_EQ(ErrorOf<UsageError>([&] { Resolve(npus, "4"); }),
            "Can't find your npus 4 in NPU_VISIBLE_DEVICES[0,1,2,3].");
  const Vars gcus = {{"TOPS_VISIBLE_DEVICES", "0"}, {"PADDLE_XCCL_BACKEND", "gcu"}};
  EXPECT_EQ(ErrorOf<UsageError>([&] { Resolve(gcus, "1"); }),
            "Can't find your gcus 1 in TOPS_VISIBLE_DEVICES[0].");
}

TEST(DeviceFamilyTest, NprocPerNodeSplitsEveryFamily) {
  const DevicePlan one = Resolve({{"XPU_VISIBLE_DEVICES", "0,1,2,3"}}, std::nullopt, "auto", {}, 1);
  EXPECT_EQ(one.devices_per_proc, (Ids{{0, 1, 2, 3}}));
  const DevicePlan two =
      Resolve({{"PADDLE_XCCL_BACKEND", "mlu"}, {"MLU_VISIBLE_DEVICES", "0,1,2,3"}}, std::nullopt,
              "auto", {}, 2);
  EXPECT_EQ(two.devices_per_proc, (Ids{{0, 1}, {2, 3}}));
  EXPECT_EQ(ErrorOf<UsageError>([] {
              Resolve({{"XPU_VISIBLE_DEVICES", "0,1,2"}}, std::nullopt, "auto", {}, 2);
            }),
            "gpus' number:3 mod args.nproc_per_node:2 must == 0");
}

TEST(DeviceFamilyTest, BackendsPickTheirFamily) {
  // --backend bkcl on a machine whose CUDA_VISIBLE_DEVICES is set: the XPUs all the same.
  const DevicePlan bkcl = Resolve({{"CUDA_VISIBLE_DEVICES", "0"}, {"XPU_VISIBLE_DEVICES", "2,3"}},
                                  std::nullopt, "bkcl");
  EXPECT_EQ(bkcl.family.type, "xpu");
  EXPECT_EQ(bkcl.devices_per_proc.size(), 2u);
  EXPECT_EQ(Resolve({}, std::nullopt, "bkcl", {0, 3, 0}).devices_per_proc.size(), 3u);
  EXPECT_EQ(ErrorOf<LaunchError>([] {
              Resolve({}, std::nullopt, "bkcl", {8, 0, 0});
            }),
            "--backend=bkcl needs an XPU, but none was found on this machine; pass --xpus (or set "
            "XPU_VISIBLE_DEVICES) or use "
            "--backend=gloo");
  EXPECT_EQ(ErrorOf<UsageError>([] { Resolve({}, std::nullopt, "xccl"); }),
            "--backend=xccl needs PADDLE_XCCL_BACKEND=<device type> (npu, mlu, gcu, ...) in the "
            "environment");
  EXPECT_EQ(Resolve({{"PADDLE_XCCL_BACKEND", "npu"}}, std::nullopt, "xccl", {0, 0, 8})
                .devices_per_proc.size(),
            8u);
  // The list given as --xpus: the XPU family whatever CUDA_VISIBLE_DEVICES says.
  const DevicePlan flag =
      Resolve({{"CUDA_VISIBLE_DEVICES", "0"}}, "0,1", "auto", {1, 2, 0}, std::nullopt, true);
  EXPECT_EQ(flag.family.type, "xpu");
  EXPECT_EQ(flag.devices_per_proc, (Ids{{0}, {1}}));
  EXPECT_TRUE(flag.warnings.empty());
}

TEST(DeviceFamilyTest, ACustomDeviceWithNoDeviceFoundIsAnError) {
  EXPECT_EQ(ErrorOf<LaunchError>([] {
              Resolve({{"PADDLE_XCCL_BACKEND", "mlu"}});
            }),
            "PADDLE_XCCL_BACKEND=mlu: no mlu device found (MLU_VISIBLE_DEVICES is not set, and "
            "pdlaunch has no probe for this device type); set MLU_VISIBLE_DEVICES or pass "
            "--devices");
  EXPECT_EQ(ErrorOf<LaunchError>([] {
              Resolve({{"PADDLE_XCCL_BACKEND", "npu"}});
            }),
            "PADDLE_XCCL_BACKEND=npu: no npu device found (NPU_VISIBLE_DEVICES is not set and the "
            "probe found none); set NPU_VISIBLE_DEVICES or pass --devices");
  EXPECT_EQ(Resolve({{"PADDLE_XCCL_BACKEND", "npu"}}, std::nullopt, "auto", {0, 0, 8}).mode,
            DeviceMode::kCustom);
  // A list given with no visible list and no device found runs as asked, with a warning.
  const DevicePlan asked = Resolve({{"PADDLE_XCCL_BACKEND", "mlu"}}, "0,1");
  EXPECT_EQ(asked.devices_per_proc, (Ids{{0}, {1}}));
  EXPECT_EQ(asked.warnings,
            std::vector<std::string>{"--devices=0,1 given but no MLU was found on this machine; "
                                     "running as asked"});
}

// Paddle's unit tests of its Device module (docs/design.md, "Paddle's own launcher tests";
// device.py), each bullet re-expressed on the launcher's device plan: labels are the visible
// list's entries and a process's selected ids are positions in it (get_selected_devices).
TEST(PaddleDeviceModuleTest, LabelsComeFromTheFamilysVariable) {
  // CUDA_VISIBLE_DEVICES=0,1,2 -> gpu, labels 0,1,2 (one process: all three; count 3).
  const DevicePlan gpu = Resolve({{"CUDA_VISIBLE_DEVICES", "0,1,2"}}, std::nullopt, "auto", {}, 1);
  EXPECT_EQ(gpu.family.type, "gpu");
  EXPECT_EQ(gpu.devices_per_proc, (Ids{{0, 1, 2}}));
  EXPECT_EQ(PhysicalLabels({0, 1, 2}, "0,1,2"), (std::vector<std::string>{"0", "1", "2"}));
  // XPU_VISIBLE_DEVICES=0,1 -> xpu; XPULINK_VISIBLE_DEVICES=0,1,2,3 -> xpu with 4.
  EXPECT_EQ(Resolve({{"XPU_VISIBLE_DEVICES", "0,1"}}).family.type, "xpu");
  const DevicePlan xpulink = Resolve({{"XPULINK_VISIBLE_DEVICES", "0,1,2,3"}});
  EXPECT_EQ(xpulink.family.type, "xpu");
  EXPECT_EQ(xpulink.devices_per_proc.size(), 4u);
  // A custom type custom_dev reads CUSTOM_DEV_VISIBLE_DEVICES; key FLAGS_selected_custom_devs;
  // PADDLE_DISTRI_BACKEND=xccl, PADDLE_XCCL_BACKEND=custom_dev.
  const DevicePlan custom =
      Resolve({{"PADDLE_XCCL_BACKEND", "custom_dev"}, {"CUSTOM_DEV_VISIBLE_DEVICES", "0,1"}});
  EXPECT_EQ(custom.family.visible_variable, "CUSTOM_DEV_VISIBLE_DEVICES");
  EXPECT_EQ(custom.family.selected_key, "FLAGS_selected_custom_devs");
  EXPECT_EQ(custom.family.env,
            (std::vector<std::pair<std::string, std::string>>{
                {"PADDLE_DISTRI_BACKEND", "xccl"}, {"PADDLE_XCCL_BACKEND", "custom_dev"}}));
  EXPECT_EQ(custom.devices_per_proc, (Ids{{0}, {1}}));
}

TEST(PaddleDeviceModuleTest, AllOrNothingSetAsksTheProbe) {
  // CUDA_VISIBLE_DEVICES=all -> the probe; 4 CUDA devices -> 0..3.
  EXPECT_EQ(
      Resolve({{"CUDA_VISIBLE_DEVICES", "all"}}, std::nullopt, "auto", {4, 0, 0}).devices_per_proc,
      (Ids{{0}, {1}, {2}, {3}}));
  // No CUDA, XPU or custom device, or 0 of them -> cpu, one process, no selected key.
  const DevicePlan cpu = Resolve({}, std::nullopt, "auto", {0, 0, 0});
  EXPECT_EQ(cpu.family.type, "cpu");
  EXPECT_EQ(cpu.family.selected_key, "");
  EXPECT_EQ(cpu.devices_per_proc, (Ids{{}}));
}

TEST(PaddleDeviceModuleTest, ASubsetOfTheMachinesDevicesKeepsItsLabels) {
  // CUDA_VISIBLE_DEVICES=0,2,4,6 on a machine of 8 -> labels 0,2,4,6 (the variable decides; the
  // probe is not asked), processes get positions 0..3, the driver sees the labels.
  const DevicePlan plan =
      Resolve({{"CUDA_VISIBLE_DEVICES", "0,2,4,6"}}, std::nullopt, "auto", {8, 0, 0});
  EXPECT_EQ(plan.devices_per_proc, (Ids{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(PhysicalLabels({0, 1, 2, 3}, "0,2,4,6"),
            (std::vector<std::string>{"0", "2", "4", "6"}));
}

TEST(PaddleDeviceModuleTest, SelectedDevicesArePositionsInTheLabels) {
  // get_selected_devices on labels 0,1,2: "" -> 0,1,2; "0,2" -> 0,2; "1" -> 1.
  const Vars three = {{"CUDA_VISIBLE_DEVICES", "0,1,2"}};
  EXPECT_EQ(Resolve(three, std::nullopt, "auto", {}, 1).devices_per_proc, (Ids{{0, 1, 2}}));
  EXPECT_EQ(Resolve(three, "0,2", "auto", {}, 1).devices_per_proc, (Ids{{0, 2}}));
  EXPECT_EQ(Resolve(three, "1").devices_per_proc, (Ids{{1}}));
  // On labels 4,5,6,7 the label 6 is position 2 (Paddle: self._labels.index(d)).
  EXPECT_EQ(Resolve({{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}}, "6").devices_per_proc, (Ids{{2}}));
}

TEST(PaddleDeviceModuleTest, EachTypeHasItsSelectedKey) {
  // FLAGS_selected_gpus / _xpus / FLAGS_selected_<type>s. Paddle's `cpus` and `ipus` keys and
  // its FLAGS_selected_devices for an unknown type have no counterpart: a CPU trainer gets no
  // key (docs/env.md), IPU is refused (docs/cli.md, "Devices"), and every type is known.
  EXPECT_EQ(Resolve({{"CUDA_VISIBLE_DEVICES", "0"}}).family.selected_key, "FLAGS_selected_gpus");
  EXPECT_EQ(Resolve({{"XPU_VISIBLE_DEVICES", "0"}}).family.selected_key, "FLAGS_selected_xpus");
  EXPECT_EQ(
      Resolve({{"PADDLE_XCCL_BACKEND", "npu"}, {"NPU_VISIBLE_DEVICES", "0"}}).family.selected_key,
      "FLAGS_selected_npus");
}

TEST(DeviceProbeParsersTest, CountTheRecordedOutputs) {
  EXPECT_EQ(CountNvidiaSmiGpus("GPU 0: NVIDIA H200 (UUID: GPU-1b2c)\n"), 1);
  EXPECT_EQ(CountNvidiaSmiGpus("GPU 0: A (UUID: x)\nGPU 1: A (UUID: y)\n"), 2);
  // npu-smi info (Ascend 910B, two chips): a chip's first row names it, its second has the bus id.
  const std::string npu =
      "+---------------------------+---------------+-----------------------------------+\n"
      "| npu-smi 23.0.rc2                 Version: 23.0.rc2                              |\n"
      "+---------------------------+---------------+-----------------------------------+\n"
      "| NPU   Name                | Health        | Power(W)    Temp(C)               |\n"
      "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)      |\n"
      "+===========================+===============+===================================+\n"
      "| 0     910B3               | OK            | 93.6        36                    |\n"
      "| 0                         | 0000:C1:00.0  | 0           0    / 0              |\n"
      "+===========================+===============+===================================+\n"
      "| 1     910B3               | OK            | 89.2        35                    |\n"
      "| 0                         | 0000:C2:00.0  | 0           0    / 0              |\n"
      "+===========================+===============+===================================+\n";
  EXPECT_EQ(CountNpuSmiChips(npu), 2);
  EXPECT_EQ(CountNpuSmiChips(""), 0);
  EXPECT_EQ(CountRocmSmiGpus("============ ID ============\nGPU[0]\t\t: GPU ID: 0x66a1\n"
                             "GPU[1]\t\t: GPU ID: 0x66a1\nGPU[1]\t\t: Device Name: x\n"),
            2);
}

}  // namespace
}  // namespace pdlaunch
