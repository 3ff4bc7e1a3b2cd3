#include "pdlaunch/plan/devices.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <sstream>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/options/options.h"  // PythonListRepr

namespace pdlaunch {

namespace {

// `flag`: the name the list was given under (--gpus, --devices, PADDLE_DEVICES).
int ParseDeviceId(const std::string& token, const std::string& flag) {
  const bool digits = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || token.size() > 9) {
    throw UsageError(fmt::format("{}: '{}' is not a device id", flag, token));
  }
  return std::stoi(token);
}

// CUDA enumerates CUDA_VISIBLE_DEVICES up to the first invalid entry, so "-1" hides every GPU.
int CountVisibleDevices(const std::string& cuda_visible_devices) {
  int count = 0;
  for (const std::string& entry : SplitAndStrip(cuda_visible_devices, ',')) {
    if (entry.empty() || entry.front() == '-') break;
    ++count;
  }
  return count;
}

std::vector<std::string> SplitWords(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// The family's visible list, when it decides.
std::optional<std::string> VisibleList(const DeviceFamily& family, const DeviceEnv& env) {
  std::optional<std::string> value;
  switch (family.mode) {
    case DeviceMode::kGpu:
      value = env.cuda_visible_devices;
      break;
    case DeviceMode::kXpu:
      value = env.xpu_visible_devices;
      break;
    case DeviceMode::kCustom:
      value = env.custom_visible_devices;
      break;
    case DeviceMode::kCpu:
      break;
  }
  return Decides(value) ? value : std::nullopt;
}

int CountVisible(const DeviceFamily& family, const std::string& visible) {
  if (family.mode == DeviceMode::kGpu) return CountVisibleDevices(visible);
  return static_cast<int>(SplitAndStrip(visible, ',').size());
}

// The list with the family's visible list: labels become positions in it.
std::vector<int> RelativeIds(const std::string& list, const std::vector<std::string>& tokens,
                             const DeviceFamily& family, const std::string& visible_value,
                             const std::string& flag, DevicePlan& plan) {
  const std::vector<std::string> visible = SplitAndStrip(visible_value, ',');
  std::vector<int> ids;
  for (const std::string& token : tokens) {
    ParseDeviceId(token, flag);
    auto it = std::find(visible.begin(), visible.end(), token);
    if (it == visible.end()) {
      throw UsageError(fmt::format("Can't find your {}s {} in {}[{}].", family.type, token,
                                   family.visible_variable, OneLine(visible_value)));
    }
    ids.push_back(static_cast<int>(it - visible.begin()));
  }
  // Paddle's line, whose start users grep for; Paddle names the list "--ips" and
  // "relative_ips", which are the device flag and its relative ids (docs/cli.md, "Differences").
  plan.info.push_back(fmt::format(
      "Change selected_{}s into reletive values. {}:{} will change into relative_ids:[{}] "
      "according to your {}:{}",
      family.type, flag, list, fmt::join(ids, ", "), family.visible_variable,
      PythonListRepr(visible)));
  return ids;
}

std::vector<int> IdsFromList(const std::string& list, const DeviceFamily& family,
                             const DeviceEnv& env, int probed, DevicePlan& plan) {
  std::vector<std::string> tokens = SplitAndStrip(list, ',');
  if (tokens.empty()) tokens.emplace_back();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (std::find(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens[i]) !=
        tokens.begin() + static_cast<std::ptrdiff_t>(i)) {
      plan.warnings.push_back(
          fmt::format("{}={} lists device {} more than once: its processes share that device",
                      env.gpus_name, list, tokens[i]));
      break;
    }
  }
  if (const auto visible = VisibleList(family, env)) {
    return RelativeIds(list, tokens, family, *visible, env.gpus_name, plan);
  }
  std::vector<int> ids;
  for (const std::string& token : tokens) ids.push_back(ParseDeviceId(token, env.gpus_name));
  if (probed == 0) {
    plan.warnings.push_back(
        fmt::format("{}={} given but no {} was found on this machine; running "
                    "as asked",
                    env.gpus_name, list, DeviceName(family)));
  }
  return ids;
}

std::vector<std::vector<int>> SplitAmongProcesses(const std::vector<int>& ids,
                                                  const std::optional<int>& nproc_per_node) {
  const int count = static_cast<int>(ids.size());
  const int nproc = nproc_per_node.value_or(count);
  if (count % nproc != 0) {
    throw UsageError(
        fmt::format("gpus' number:{} mod args.nproc_per_node:{} must == 0", count, nproc));
  }
  const int chunk = count / nproc;
  std::vector<std::vector<int>> per_proc;
  for (int first = 0; first < count; first += chunk) {
    per_proc.emplace_back(ids.begin() + first, ids.begin() + first + chunk);
  }
  return per_proc;
}

DevicePlan CpuPlan(const std::optional<int>& nproc_per_node, DevicePlan plan) {
  plan.family = CpuFamily();
  plan.mode = DeviceMode::kCpu;
  plan.backend = "gloo";
  plan.mode_line = plan.family.mode_line;
  plan.devices_per_proc.assign(static_cast<size_t>(nproc_per_node.value_or(1)), {});
  return plan;
}

void CheckBackend(const std::string& backend) {
  constexpr std::array<std::string_view, 6> kKnown = {"auto", "gloo", "nccl",
                                                      "bkcl", "xccl", "heter"};
  if (std::find(kKnown.begin(), kKnown.end(), backend) == kKnown.end()) {
    throw UsageError(
        fmt::format("--backend: '{}' is not supported (use auto, nccl, bkcl, xccl, heter or gloo)",
                    OneLine(backend)));
  }
}

// The family a backend other than auto asks for; nullopt for auto and heter.
std::optional<DeviceFamily> FamilyOfBackend(const std::string& backend, const DeviceEnv& env) {
  if (backend == "nccl") return GpuFamily();
  if (backend == "bkcl") return XpuFamily();
  if (backend == "xccl") {
    if (!env.xccl_backend || env.xccl_backend->empty()) {
      throw UsageError(
          "--backend=xccl needs PADDLE_XCCL_BACKEND=<device type> (npu, mlu, gcu, ...) in the "
          "environment");
    }
    return CustomFamily(*env.xccl_backend);
  }
  return std::nullopt;
}

// Paddle's detection order (docs/cli.md, "Devices"). Sets `probed` when the probe was asked.
DeviceFamily DetectFamily(const std::string& backend, const DeviceEnv& env, DeviceProbe& probe,
                          std::optional<int>& probed) {
  if (auto forced = FamilyOfBackend(backend, env)) return *forced;
  if (env.xpus) return XpuFamily();
  if (env.xccl_backend && !env.xccl_backend->empty()) return CustomFamily(*env.xccl_backend);
  if (Decides(env.cuda_visible_devices)) return GpuFamily();
  if (Decides(env.xpu_visible_devices)) return XpuFamily();
  DeviceFamily gpu = GpuFamily();
  probed = probe.Count(gpu);
  if (*probed > 0) return gpu;
  DeviceFamily xpu = XpuFamily();
  const int xpus = probe.Count(xpu);
  if (xpus > 0) {
    probed = xpus;
    return xpu;
  }
  return gpu;  // None found: a device list given runs as GPUs, as asked (with a warning).
}

}  // namespace

int CountNvidiaSmiGpus(const std::string& output) {
  int count = 0;
  for (size_t begin = 0; begin < output.size();) {
    if (output.compare(begin, 4, "GPU ") == 0) ++count;
    const size_t end = output.find('\n', begin);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return count;
}

int CountNpuSmiChips(const std::string& output) {
  // "| 0     910B3               | OK            | 93.6 ..." opens a chip's two rows; its second
  // row "| 0                         | 0000:C1:00.0  | ..." has one token in the first cell.
  int count = 0;
  for (const std::string& line : SplitAndStrip(output, '\n')) {
    if (!line.starts_with("|")) continue;
    const size_t bar = line.find('|', 1);
    if (bar == std::string::npos) continue;
    const std::vector<std::string> cell = SplitWords(line.substr(1, bar - 1));
    if (cell.size() == 2 && !cell[0].empty() &&
        cell[0].find_first_not_of("0123456789") == std::string::npos && cell[1] != "Name") {
      ++count;
    }
  }
  return count;
}

int CountRocmSmiGpus(const std::string& output) {
  std::vector<std::string> seen;
  for (const std::string& line : SplitAndStrip(output, '\n')) {
    if (!line.starts_with("GPU[")) continue;
    const std::string id = line.substr(0, line.find(']') + 1);
    if (std::find(seen.begin(), seen.end(), id) == seen.end()) seen.push_back(id);
  }
  return static_cast<int>(seen.size());
}

std::vector<std::string> PhysicalLabels(const std::vector<int>& ids,
                                        const std::optional<std::string>& visible) {
  const std::vector<std::string> listed =
      Decides(visible) ? SplitAndStrip(*visible, ',') : std::vector<std::string>();
  std::vector<std::string> labels;
  for (int id : ids) {
    const size_t index = static_cast<size_t>(id);
    labels.push_back(index < listed.size() ? listed[index] : std::to_string(id));
  }
  return labels;
}

DeviceEnv DeviceEnvFrom(const VisibleDevices& visible, std::string nproc_per_node_name,
                        std::string gpus_name, bool xpus) {
  DeviceEnv env;
  env.cuda_visible_devices = visible.cuda;
  env.nproc_per_node_name = std::move(nproc_per_node_name);
  env.gpus_name = std::move(gpus_name);
  env.xpu_visible_devices = visible.xpu;
  env.xccl_backend = visible.xccl_backend;
  env.custom_visible_devices = visible.custom;
  env.xpus = xpus;
  return env;
}

DevicePlan ResolveDevices(const std::optional<std::string>& gpus,
                          const std::optional<int>& nproc_per_node, const std::string& backend,
                          const DeviceEnv& env, DeviceProbe& probe) {
  CheckBackend(backend);
  if (nproc_per_node) CheckProcessCount(env.nproc_per_node_name, *nproc_per_node, 1);
  DevicePlan plan;
  if (backend == "gloo") {
    if (gpus) {
      plan.warnings.push_back(
          fmt::format("{}={} ignored: --backend=gloo runs on CPU", env.gpus_name, *gpus));
    }
    return CpuPlan(nproc_per_node, std::move(plan));
  }
  std::optional<int> probed;
  const DeviceFamily family = DetectFamily(backend, env, probe, probed);
  const std::optional<std::string> visible = VisibleList(family, env);
  std::vector<int> ids;
  if (gpus) {
    if (!visible && !probed) probed = probe.Count(family);
    ids = IdsFromList(*gpus, family, env, probed.value_or(1), plan);
  } else {
    if (!visible && !probed) probed = probe.Count(family);
    const int count = visible ? CountVisible(family, *visible) : *probed;
    for (int id = 0; id < count; ++id) ids.push_back(id);
  }
  if (ids.empty()) {
    if (family.mode == DeviceMode::kCustom) {
      throw LaunchError(fmt::format(
          "PADDLE_XCCL_BACKEND={}: no {} device found ({} is not set{}); set {} or pass --devices",
          family.type, family.type, family.visible_variable,
          family.probe_programs.empty() && family.device_files.empty()
              ? ", and pdlaunch has no probe for this device type"
              : " and the probe found none",
          family.visible_variable));
    }
    if (backend != "auto" && backend != "heter") {
      // The flag and the variable of this family (an XPU's are --xpus and XPU_VISIBLE_DEVICES).
      throw LaunchError(fmt::format(
          "--backend={} needs {} {}, but none was found on this machine; pass {} (or set {}) "
          "or use --backend=gloo",
          backend, family.mode == DeviceMode::kXpu ? "an" : "a", DeviceName(family),
          family.mode == DeviceMode::kXpu ? "--xpus" : "--gpus", family.visible_variable));
    }
    return CpuPlan(nproc_per_node, std::move(plan));
  }
  plan.family = family;
  plan.mode = family.mode;
  plan.backend = family.backend;
  plan.mode_line = family.mode_line;
  plan.devices_per_proc = SplitAmongProcesses(ids, nproc_per_node);
  return plan;
}

}  // namespace pdlaunch
