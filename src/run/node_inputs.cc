#include "run/node_inputs.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string_view>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/nested_launch.h"
#include "pdlaunch/base/random_seed.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/address_lookup.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/process/device_probe.h"

extern char** environ;

namespace pdlaunch::internal {

EnvMap EnvironmentMap() {
  EnvMap env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    const size_t equals = text.find('=');
    if (equals != std::string_view::npos) {
      env.emplace(text.substr(0, equals), text.substr(equals + 1));
    }
  }
  return env;
}

std::string NewPodName() {
  std::mt19937 random(static_cast<std::mt19937::result_type>(RandomSeed()));
  std::uniform_int_distribution<int> letter('a', 'z');
  std::string name;
  for (int i = 0; i < 6; ++i) name += static_cast<char>(letter(random));
  return name;
}

std::optional<JobToken> TakeJobToken() {
  const std::string name(kJobTokenVariable);
  const char* value = std::getenv(name.c_str());
  std::optional<JobToken> token = JobToken::FromEnvironment(value);
  ::unsetenv(name.c_str());  // Also when it was malformed: no child gets it either way.
  return token;
}

// Every child also gets kNestedMarker (docs/cli.md, "Nested launches").
std::vector<std::string> ParentEnvironment() {
  const std::string marker = std::string(kNestedMarker) + "=";
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!std::string_view(*entry).starts_with(marker)) env.emplace_back(*entry);
  }
  env = WithProxyBackups(std::move(env));
  env.push_back(NestedMarkerEntry(::getpid()));
  return env;
}

std::optional<int> GivenStartPort(const LaunchOptions& options) {
  return FixedStartPort(options.start_port, GetEnv("FLAGS_START_PORT"),
                        GetEnv("PADDLE_START_PORT"));
}

NodeEnv GatherNodeEnv(const std::string& ips, const std::optional<std::string>& host,
                      std::string_view source) {
  NodeEnv env{GetEnv("POD_IP"), {}, {}};
  if (ips.find(',') != std::string::npos) env.local_addresses = LocalInterfaceAddresses();
  for (const std::string& name : HostNamesToResolve(ips, host, env.pod_ip)) {
    env.resolved[name] = ResolveHostName(name, source);
  }
  return env;
}

LocalPorts PlanLocalPorts(std::optional<int> start, int num_local) {
  LocalPorts plan;
  if (start) {
    for (int i = 0; i < num_local; ++i) plan.ports.push_back(*start + i);
    plan.master_port = *start + num_local;
    return plan;
  }
  plan.reservation = MakeLockingPortAllocator()->Reserve(num_local + 1);
  plan.ports = plan.reservation->ports();
  plan.master_port = plan.ports.back();
  plan.ports.pop_back();
  return plan;
}

DeviceEnv DeviceEnvOf(const LaunchOptions& options, const VisibleDevices& visible) {
  if (options.gpus && options.xpus) {
    throw UsageError(fmt::format("{} and {} both list devices: give one of them",
                                 options.FlagName("gpus"), options.FlagName("xpus")));
  }
  return DeviceEnvFrom(visible, options.FlagName("nproc_per_node"),
                       options.FlagName(options.xpus ? "xpus" : "gpus"), options.xpus.has_value());
}

std::optional<std::string> DeviceList(const LaunchOptions& options) {
  return options.xpus ? options.xpus : options.gpus;
}

VisibleDevices VisibleDevicesOfEnvironment() {
  return ReadVisibleDevices([](const std::string& name) { return GetEnv(name.c_str()); });
}

DevicePlan ResolveCollectiveDevices(const LaunchOptions& options) {
  auto probe = MakeSystemDeviceProbe();
  return ResolveDevices(DeviceList(options), options.nproc_per_node, options.backend,
                        DeviceEnvOf(options, VisibleDevicesOfEnvironment()), *probe);
}

}  // namespace pdlaunch::internal
