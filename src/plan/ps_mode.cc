// The job's mode, collective or parameter server (SelectMode, declared in ps.h; docs/ps.md,
// "Mode"), and Paddle's PS mode line.
#include <fmt/format.h>

#include <array>
#include <optional>
#include <string_view>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/ps.h"

namespace pdlaunch {
namespace {

// Paddle's PS option names, in the order of its "pserver arguments" list (docs/cli.md).
constexpr std::array<std::string_view, 8> kPsFlags = {
    "worker_num", "server_num",    "heter_worker_num", "servers",
    "workers",    "heter_workers", "heter_devices",    "http_port"};
constexpr std::array<std::string_view, 3> kHeterFlags = {"heter_worker_num", "heter_workers",
                                                         "heter_devices"};
std::vector<std::string> GivenCollectiveFlags(const LaunchOptions& options) {
  std::vector<std::string> flags;
  if (options.WasGiven("ips")) flags.emplace_back("--ips");
  if (options.WasGiven("nproc_per_node")) flags.emplace_back("--nproc_per_node");
  if (options.backend != "auto") flags.push_back("--backend=" + options.backend);
  return flags;
}

std::optional<std::string> FirstHeterFlag(const LaunchOptions& options) {
  for (std::string_view dest : kHeterFlags) {
    if (options.WasGiven(std::string(dest))) return "--" + std::string(dest);
  }
  return std::nullopt;
}

[[noreturn]] void ThrowMixed(const std::string& collective, const std::string& ps) {
  throw UsageError(fmt::format(
      "Only one mode(Collective or Parameter-Server) can be selected at the same time, but more "
      "than one configuration was received: {} and {}",
      collective, ps));
}

JobMode ExplicitMode(const LaunchOptions& options, const std::vector<std::string>& ps,
                     const std::vector<std::string>& collective) {
  const std::string& mode = *options.run_mode;
  const std::string flag = "--run_mode=" + mode;
  if (mode == "collective") {
    if (!ps.empty()) ThrowMixed(flag, ps.front());
    return JobMode::kCollective;
  }
  if (mode != "ps" && mode != "ps-heter") {
    throw UsageError(fmt::format(
        "argument --run_mode: invalid choice: '{}' (choose from 'collective', 'ps', 'ps-heter', "
        "'rpc')",
        mode));
  }
  if (!collective.empty()) ThrowMixed(collective.front(), flag);
  if (mode == "ps-heter") return JobMode::kPsHeter;
  if (const auto heter = FirstHeterFlag(options)) {
    throw UsageError(fmt::format("{} needs --run_mode=ps-heter, not --run_mode=ps", *heter));
  }
  return JobMode::kPs;
}

}  // namespace

JobMode SelectMode(const LaunchOptions& options) {
  const std::vector<std::string> ps = GivenPsFlags(options);
  const std::vector<std::string> collective = GivenCollectiveFlags(options);
  if (options.run_mode) return ExplicitMode(options, ps, collective);
  if (ps.empty()) return JobMode::kCollective;
  if (!collective.empty()) ThrowMixed(collective.front(), ps.front());
  return FirstHeterFlag(options) ? JobMode::kPsHeter : JobMode::kPs;
}

std::vector<std::string> GivenPsFlags(const LaunchOptions& options) {
  std::vector<std::string> flags;
  for (std::string_view dest : kPsFlags) {
    if (options.WasGiven(std::string(dest))) flags.push_back("--" + std::string(dest));
  }
  return flags;
}

std::string FormatPsModeLine(const LaunchOptions& options, int accelerators) {
  return fmt::format("Run parameter-sever mode. pserver arguments:{}, accelerators count:{}",
                     PythonListRepr(GivenPsFlags(options)), accelerators);
}

}  // namespace pdlaunch
