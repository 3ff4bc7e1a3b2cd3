// libFuzzer target over the pure core: command-line parsing, mode selection, devices, node
// identity, collective and PaddleCloud topology, trainer variables, PS planning and the messages
// built from them (docs/testing.md "Fuzzing"). No processes, sockets or real environment.
//
// Input: lines separated by '\n'. A line starting with '@' sets a fake input of the machine,
// every other line is one argv token (program name excluded):
//   @gpus=N                 the FakeDeviceProbe's count (0..16)
//   @local=ADDR             one local interface address (repeatable)
//   @resolve=NAME=A,B       the resolved addresses of host name NAME in --ips
//   @NAME=VALUE or @NAME    an environment variable (CUDA_VISIBLE_DEVICES, POD_IP,
//                           FLAGS_START_PORT, PADDLE_TRAINERS, ...), "" when without '='
// A LaunchError (UsageError included) is an expected outcome; any other exception, a crash, a
// sanitizer report, a hang or a violated invariant (__builtin_trap) is a bug.

#include <algorithm>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "coord/http_feed.h"
#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/coord/elastic.h"
#include "pdlaunch/coord/elastic_policy.h"
#include "pdlaunch/coord/etcd_protocol.h"
#include "pdlaunch/coord/job_ledger.h"
#include "pdlaunch/coord/job_token.h"
#include "pdlaunch/coord/kv_http.h"
#include "pdlaunch/coord/rendezvous.h"
#include "pdlaunch/coord/store_exchange.h"
#include "pdlaunch/options/echo_choice.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/cloud.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/master_config.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/slurm.h"
#include "pdlaunch/plan/topology.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/plan/yaml_edit.h"
#include "pdlaunch/process/cgroup_path.h"
#include "pdlaunch/process/console_echo.h"
#include "pdlaunch/process/pod_console.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "support/fake_device_probe.h"

// Prints the failed condition and stops the fuzzer at once (a crash with a reproducer).
#define PDLAUNCH_FUZZ_CHECK(condition)                                                          \
  do {                                                                                          \
    if (!(condition)) {                                                                         \
      std::fprintf(stderr, "invariant violated: %s (%s:%d)\n", #condition, __FILE__, __LINE__); \
      __builtin_trap();                                                                         \
    }                                                                                           \
  } while (false)

namespace pdlaunch {
namespace {

// Bounds that keep one input fast; inputs above them are skipped, not failed.
constexpr int kMaxProcesses = 512;         // nproc_per_node, device lists, PS role counts.
constexpr size_t kMaxWorld = 1024;         // Trainers of the whole job.
constexpr size_t kMaxChecked = 8;          // Local trainers whose variables are checked.
constexpr int kFirstFreePort = 20000;      // Where synthesized "free" ports start.
constexpr int kMultiNodeStartPort = 6070;  // launch.cc's default for several nodes.

// PDLAUNCH_FUZZ_VERBOSE=1 prints every expected refusal: to see how far a reproducer or a seed
// gets. Read once; the core under test never sees the real environment.
const bool kVerbose = std::getenv("PDLAUNCH_FUZZ_VERBOSE") != nullptr;

struct FuzzInput {
  std::vector<std::string> args;
  EnvMap env;
  NodeEnv node;
  int gpu_count = 0;
};

std::optional<std::string> Get(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

int ToInt(std::string_view text, int fallback) {
  int value = fallback;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

void AddDirective(std::string_view line, FuzzInput& input) {
  const size_t equals = line.find('=');
  const std::string name(line.substr(0, equals));
  const std::string value(equals == std::string_view::npos ? "" : line.substr(equals + 1));
  if (name == "gpus") {
    input.gpu_count = std::clamp(ToInt(value, 0), 0, 16);
  } else if (name == "local") {
    input.node.local_addresses.push_back(value);
  } else if (name == "resolve") {
    const size_t split = value.find('=');
    const std::string host = value.substr(0, split);
    const std::string addresses = split == std::string::npos ? "" : value.substr(split + 1);
    input.node.resolved[host] = SplitAndStrip(addresses, ',');
  } else {
    input.env[name] = value;
  }
}

FuzzInput Decode(std::string_view data) {
  FuzzInput input;
  size_t begin = 0;
  while (begin <= data.size()) {
    const size_t end = std::min(data.find('\n', begin), data.size());
    const std::string_view line = data.substr(begin, end - begin);
    if (!line.empty() && line.front() == '@') {
      AddDirective(line.substr(1), input);
    } else {
      input.args.emplace_back(line);
    }
    begin = end + 1;
  }
  if (!input.args.empty() && input.args.back().empty()) input.args.pop_back();
  input.node.pod_ip = Get(input.env, "POD_IP");
  return input;
}

// Runs `body`; a LaunchError is an expected refusal (nullopt) and must carry exit code 1 or 2.
template <typename Body>
auto Try(Body body) -> std::optional<decltype(body())> {
  try {
    return body();
  } catch (const LaunchError& error) {
    if (kVerbose) std::fprintf(stderr, "refused (exit %d): %s\n", error.exit_code(), error.what());
    PDLAUNCH_FUZZ_CHECK(error.exit_code() == kExitSetupError ||
                        error.exit_code() == kExitUsageError);
    PDLAUNCH_FUZZ_CHECK(error.what()[0] != '\0');
    return std::nullopt;
  }
}

size_t CountLines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

size_t ItemCount(const std::optional<std::string>& list, char separator) {
  return list ? SplitAndStrip(*list, separator).size() : 0;
}

// --- Messages -----------------------------------------------------------------------------------

void CheckConfiguration(const LaunchOptions& options) {
  const std::string text = FormatConfigurationArguments(options);
  // Tokens hold no '\n' (the input is split on it) and list items are escaped: one line each.
  // 32 options and the two rule lines; 16 more for a command of today's interface.
  const size_t lines = UsesNewInterface(options) ? 50u : 34u;
  PDLAUNCH_FUZZ_CHECK(CountLines(text) == lines);
  PDLAUNCH_FUZZ_CHECK(text.rfind("-----------  Configuration Arguments -----------\n", 0) == 0);
  PDLAUNCH_FUZZ_CHECK(text.ends_with(std::string(48, '-') + "\n"));
  // Today's console logs the same lines, one log line each, between its own rules.
  const std::vector<std::string> logged = ConfigurationLogLines(options);
  PDLAUNCH_FUZZ_CHECK(logged.size() == lines);
  PDLAUNCH_FUZZ_CHECK(logged.front() == kConfigurationHeader);
  PDLAUNCH_FUZZ_CHECK(logged.back() == kConfigurationFooter);
  for (const std::string& line : logged) PDLAUNCH_FUZZ_CHECK(line.find('\n') == std::string::npos);
}

// Every line of the table has the same width (the keys and values are one line each).
void CheckDistributedEnvs(const EnvList& rows) {
  const std::string table = FormatDistributedEnvs(rows);
  PDLAUNCH_FUZZ_CHECK(table.starts_with("\n") && table.ends_with("\n"));
  PDLAUNCH_FUZZ_CHECK(CountLines(table) == rows.size() + 5);
  size_t width = std::string::npos;
  size_t begin = 1;
  while (begin < table.size()) {
    const size_t end = table.find('\n', begin);
    if (width == std::string::npos) width = end - begin;
    PDLAUNCH_FUZZ_CHECK(end - begin == width);
    begin = end + 1;
  }
}

void CheckEndpointsLog(const std::vector<Endpoint>& world) {
  const std::string log = FormatEndpointsLog(world);
  PDLAUNCH_FUZZ_CHECK(log.rfind("PADDLE_TRAINER_ENDPOINTS: \n", 0) == 0);
  PDLAUNCH_FUZZ_CHECK(CountLines(log) == world.size());
  PDLAUNCH_FUZZ_CHECK(log.substr(27) == JoinEndpoints(world, "\n"));
}

// --- Collective ---------------------------------------------------------------------------------

void CheckDevices(const DevicePlan& plan, const std::optional<int>& nproc) {
  PDLAUNCH_FUZZ_CHECK(!plan.devices_per_proc.empty());
  if (nproc) PDLAUNCH_FUZZ_CHECK(plan.devices_per_proc.size() == static_cast<size_t>(*nproc));
  // Every family (issue #27): the plan's backend, mode and line are its family's.
  const bool accelerated = plan.mode != DeviceMode::kCpu;
  PDLAUNCH_FUZZ_CHECK(plan.mode == plan.family.mode);
  PDLAUNCH_FUZZ_CHECK(plan.backend == plan.family.backend);
  PDLAUNCH_FUZZ_CHECK(plan.mode_line == plan.family.mode_line);
  PDLAUNCH_FUZZ_CHECK(accelerated ? plan.backend != "gloo" : plan.backend == "gloo");
  PDLAUNCH_FUZZ_CHECK(plan.mode != DeviceMode::kGpu ||
                      (plan.backend == "nccl" && plan.mode_line == "launch train in GPU mode!"));
  PDLAUNCH_FUZZ_CHECK(accelerated || plan.mode_line == "launch train in CPU mode");
  for (const std::vector<int>& ids : plan.devices_per_proc) {
    PDLAUNCH_FUZZ_CHECK(ids.size() == plan.devices_per_proc.front().size());
    PDLAUNCH_FUZZ_CHECK(accelerated != ids.empty());
    for (int id : ids) PDLAUNCH_FUZZ_CHECK(id >= 0);
  }
}

const EnvList::value_type* Find(const EnvList& env, const std::string& name) {
  const auto it = std::find_if(env.begin(), env.end(),
                               [&](const EnvList::value_type& row) { return row.first == name; });
  return it == env.end() ? nullptr : &*it;
}

void CheckTrainerVariables(const Cluster& cluster, const Trainer& trainer) {
  const EnvList table = TrainerTable(cluster, trainer);
  const std::string world = JoinEndpoints(cluster.world_endpoints());
  PDLAUNCH_FUZZ_CHECK(table.size() >= 7);
  PDLAUNCH_FUZZ_CHECK(
      table[0] == EnvList::value_type("PADDLE_TRAINER_ID", std::to_string(trainer.global_rank)));
  PDLAUNCH_FUZZ_CHECK(table[1].second == trainer.endpoint.ToString());
  PDLAUNCH_FUZZ_CHECK(table[2].second == std::to_string(cluster.world_size()));
  PDLAUNCH_FUZZ_CHECK(table[3].second == world);
  PDLAUNCH_FUZZ_CHECK(table[4].second == std::to_string(trainer.local_rank));
  CheckDistributedEnvs(table);
  const EnvList all = TrainerVariables(cluster, trainer, JobEnv{"/tmp/gloo", "0", "/log"});
  PDLAUNCH_FUZZ_CHECK(std::equal(table.begin(), table.end(), all.begin()));
  std::set<std::string> names;
  for (const auto& row : all) PDLAUNCH_FUZZ_CHECK(names.insert(row.first).second);
  PDLAUNCH_FUZZ_CHECK(Find(all, "RANK") && Find(all, "RANK")->second == table[0].second);
  PDLAUNCH_FUZZ_CHECK(Find(all, "MASTER_PORT") &&
                      Find(all, "MASTER_PORT")->second == std::to_string(cluster.master.port));
}

// Ranks 0..world-1 exactly once in node-major order; the local trainers are in the world list.
void CheckCluster(const Cluster& cluster, size_t per_node) {
  const std::vector<Endpoint> world = cluster.world_endpoints();
  PDLAUNCH_FUZZ_CHECK(world.size() == cluster.pods.size() * per_node);
  PDLAUNCH_FUZZ_CHECK(static_cast<size_t>(cluster.world_size()) == world.size());
  PDLAUNCH_FUZZ_CHECK(cluster.local_index >= 0 &&
                      static_cast<size_t>(cluster.local_index) < cluster.pods.size());
  int rank = 0;
  for (size_t k = 0; k < cluster.pods.size(); ++k) {
    const Pod& pod = cluster.pods[k];
    PDLAUNCH_FUZZ_CHECK(pod.node_index == static_cast<int>(k) && pod.trainers.size() == per_node);
    for (size_t i = 0; i < pod.trainers.size(); ++i) {
      PDLAUNCH_FUZZ_CHECK(pod.trainers[i].global_rank == rank++);
      PDLAUNCH_FUZZ_CHECK(pod.trainers[i].local_rank == static_cast<int>(i));
    }
  }
  const std::vector<Trainer>& local = cluster.local_pod().trainers;
  for (size_t i = 0; i < local.size(); ++i) {
    PDLAUNCH_FUZZ_CHECK(std::find(world.begin(), world.end(), local[i].endpoint) != world.end());
    if (i < kMaxChecked || i + 1 == local.size()) CheckTrainerVariables(cluster, local[i]);
  }
  CheckEndpointsLog(world);
  (void)cluster.world_device_ids();
}

// The ports launch.cc would use: fixed from the start port, else synthesized free ones.
std::vector<int> CollectivePorts(std::optional<int> start, int count) {
  std::vector<int> ports;
  for (int i = 0; i <= count; ++i) ports.push_back(start.value_or(kFirstFreePort) + i);
  return ports;
}

std::optional<int> StartPort(const LaunchOptions& options, const EnvMap& env) {
  return Try([&] {
           return FixedStartPort(options.start_port, Get(env, "FLAGS_START_PORT"),
                                 Get(env, "PADDLE_START_PORT"));
         })
      .value_or(std::nullopt);
}

// The names to resolve are entries of --ips that are not IP literals.
void CheckNamesToResolve(const LaunchOptions& options, const FuzzInput& input) {
  const auto names =
      Try([&] { return HostNamesToResolve(options.ips, options.host, input.node.pod_ip); });
  if (!names) return;
  const std::vector<std::string> entries = SplitAndStrip(options.ips, ',');
  for (const std::string& name : *names) {
    PDLAUNCH_FUZZ_CHECK(!IsIpLiteral(name));
    PDLAUNCH_FUZZ_CHECK(std::find(entries.begin(), entries.end(), name) != entries.end());
  }
}

void CheckDistinct(const std::vector<Endpoint>& endpoints) {
  std::set<std::string> seen;
  for (const Endpoint& e : endpoints) PDLAUNCH_FUZZ_CHECK(seen.insert(e.ToString()).second);
}

void FuzzArgumentCluster(const LaunchOptions& options, const FuzzInput& input,
                         const DevicePlan& devices, bool cloud) {
  CheckNamesToResolve(options, input);
  const std::optional<NodeIdentity> node =
      Try([&] { return ResolveNode(options.ips, options.host, input.node); });
  if (!node) return;
  PDLAUNCH_FUZZ_CHECK(node->node_ips == SplitAndStrip(options.ips, ','));
  PDLAUNCH_FUZZ_CHECK(node->node_index >= 0 &&
                      static_cast<size_t>(node->node_index) < node->node_ips.size());
  const size_t per_node = devices.devices_per_proc.size();
  if (node->node_ips.size() * per_node > kMaxWorld) return;
  std::optional<int> start = StartPort(options, input.env);
  if (!start && (node->node_ips.size() > 1 || cloud)) start = kMultiNodeStartPort;
  std::vector<int> ports = CollectivePorts(start, static_cast<int>(per_node));
  const int master_port = ports.back();
  ports.pop_back();
  const std::optional<Cluster> cluster =
      Try([&] { return BuildCollectiveCluster(*node, devices, ports, master_port); });
  PDLAUNCH_FUZZ_CHECK(cluster.has_value());  // Enough ports and a valid node index: cannot fail.
  PDLAUNCH_FUZZ_CHECK(cluster->local_index == node->node_index);
  PDLAUNCH_FUZZ_CHECK(cluster->master == (Endpoint{node->node_ips.front(), master_port}));
  for (const Pod& pod : cluster->pods) {
    PDLAUNCH_FUZZ_CHECK(pod.ip == node->node_ips[static_cast<size_t>(pod.node_index)]);
    for (const Trainer& t : pod.trainers)
      PDLAUNCH_FUZZ_CHECK(t.endpoint ==
                          (Endpoint{pod.ip, ports[static_cast<size_t>(t.local_rank)]}));
  }
  CheckCluster(*cluster, per_node);
  CheckDistinct(cluster->world_endpoints());  // Distinct node entries, distinct ports.
}

void FuzzCloudCluster(const LaunchOptions& options, const CloudEnv& cloud,
                      const DevicePlan& devices, const EnvMap& env) {
  const size_t per_node = devices.devices_per_proc.size();
  if (SplitAndStrip(cloud.trainers, ',').size() * per_node > kMaxWorld) return;
  const int start = StartPort(options, env).value_or(kDefaultCloudStartPort);
  const std::optional<CloudCluster> result =
      Try([&] { return BuildCloudCluster(cloud, options.ips, devices, start); });
  if (!result) return;
  const Cluster& cluster = result->cluster;
  PDLAUNCH_FUZZ_CHECK(cluster.pods.size() == SplitAndStrip(cloud.trainers, ',').size());
  for (const Pod& pod : cluster.pods) {
    for (const Trainer& t : pod.trainers) {
      PDLAUNCH_FUZZ_CHECK(t.endpoint.port >= 1 && t.endpoint.port <= 65535);
    }
  }
  PDLAUNCH_FUZZ_CHECK(cluster.master.port >= 1 && cluster.master.port <= 65535);
  CheckCluster(cluster, per_node);
}

void FuzzCollective(const LaunchOptions& options, const FuzzInput& input) {
  if (options.nproc_per_node && *options.nproc_per_node > kMaxProcesses) return;
  const VisibleDevices visible =
      ReadVisibleDevices([&](const std::string& name) { return Get(input.env, name); });
  for (const auto* list :
       {&options.gpus, &options.xpus, &visible.cuda, &visible.xpu, &visible.custom}) {
    if (ItemCount(*list, ',') > kMaxProcesses) return;
  }
  FakeDeviceProbe probe(input.gpu_count, input.gpu_count / 2, input.gpu_count % 3);
  const std::optional<DevicePlan> devices = Try([&] {
    if (options.gpus && options.xpus) throw UsageError("both");
    return ResolveDevices(
        options.xpus ? options.xpus : options.gpus, options.nproc_per_node, options.backend,
        DeviceEnvFrom(visible, "--nproc_per_node", "--gpus", options.xpus.has_value()), probe);
  });
  PDLAUNCH_FUZZ_CHECK(probe.calls() <= 2);  // GPU, then XPU.
  if (!devices) return;
  CheckDevices(*devices, options.nproc_per_node);
  const std::optional<CloudEnv> cloud = DetectCloud(input.env);
  const std::optional<bool> uses_cloud = Try([&] { return cloud && UsesCloudCluster(*cloud); });
  if (!uses_cloud) return;
  if (*uses_cloud) {
    FuzzCloudCluster(options, *cloud, *devices, input.env);
  } else {
    FuzzArgumentCluster(options, input, *devices, cloud.has_value());
  }
}

// --- Parameter server ---------------------------------------------------------------------------

bool PsSizesBounded(const LaunchOptions& options) {
  if (options.server_num.value_or(0) > kMaxProcesses) return false;
  if (options.worker_num.value_or(0) > kMaxProcesses) return false;
  long total = 0;
  for (const std::string& item : SplitAndStrip(options.heter_worker_num.value_or(""), ';')) {
    total += std::clamp(ToInt(item, 0), 0, 65536);
  }
  return total <= kMaxProcesses;
}

// The role's full list, where PsProcess::global_id points: heter workers of all stages.
std::vector<Endpoint> RoleList(const PsPlan& plan, PsRole role) {
  if (role == PsRole::kServer) return plan.servers;
  if (role == PsRole::kWorker) return plan.workers;
  std::vector<Endpoint> all;
  for (const auto& stage : plan.heter_stages) all.insert(all.end(), stage.begin(), stage.end());
  return all;
}

void CheckPsPlan(const PsPlan& plan, JobMode mode) {
  PDLAUNCH_FUZZ_CHECK(plan.mode == mode);
  PDLAUNCH_FUZZ_CHECK(plan.node.node_index >= 0 &&
                      static_cast<size_t>(plan.node.node_index) < plan.node.node_ips.size());
  std::vector<Endpoint> all = plan.servers;
  all.insert(all.end(), plan.workers.begin(), plan.workers.end());
  for (const auto& stage : plan.heter_stages) all.insert(all.end(), stage.begin(), stage.end());
  CheckDistinct(all);
  int counts[3] = {0, 0, 0};
  for (const PsProcess& p : plan.processes) {
    const int role = static_cast<int>(p.role);
    PDLAUNCH_FUZZ_CHECK(p.local_index == counts[role]++);
    PDLAUNCH_FUZZ_CHECK(p.stage == 0   ? p.role == PsRole::kServer
                        : p.stage == 1 ? p.role == PsRole::kWorker
                                       : p.role == PsRole::kHeterWorker);
    const std::vector<Endpoint> list = RoleList(plan, p.role);
    PDLAUNCH_FUZZ_CHECK(p.global_id >= 0 && static_cast<size_t>(p.global_id) < list.size());
    PDLAUNCH_FUZZ_CHECK(list[static_cast<size_t>(p.global_id)] == p.endpoint);
    PDLAUNCH_FUZZ_CHECK(p.endpoint.host ==
                        plan.node.node_ips[static_cast<size_t>(plan.node.node_index)]);
    PDLAUNCH_FUZZ_CHECK(p.log_name.ends_with("log." + std::to_string(p.local_index)));
    PDLAUNCH_FUZZ_CHECK(!p.env.empty());
    CheckDistributedEnvs(p.env);
  }
}

void FuzzPs(const LaunchOptions& options, JobMode mode, const FuzzInput& input) {
  if (!PsSizesBounded(options)) return;
  const std::optional<int> needed = Try([&] { return PsPortsNeeded(options, mode); });
  const auto hosts = Try([&] { return PsNodeIps(options, mode); });
  PDLAUNCH_FUZZ_CHECK(needed.has_value() == hosts.has_value());  // Both throw as PlanPs does.
  if (!needed) return;
  PDLAUNCH_FUZZ_CHECK(*needed >= (options.http_port ? 0 : 1));  // The gloo HTTP port unless given.
  PsInputs inputs;
  inputs.options = options;
  inputs.mode = mode;
  inputs.node = input.node;
  inputs.cuda_visible_devices = Get(input.env, "CUDA_VISIBLE_DEVICES");
  if (ItemCount(options.gpus, ',') > kMaxProcesses) return;
  FakeDeviceProbe probe(input.gpu_count);
  const auto devices = Try([&] {
    DeviceEnv env;
    env.cuda_visible_devices = inputs.cuda_visible_devices;
    return ResolveDevices(options.gpus, std::nullopt, "auto", env, probe);
  });
  if (!devices) return;
  inputs.devices = *devices;
  inputs.start_port = StartPort(options, input.env);
  if (!inputs.start_port && hosts->size() > 1) inputs.start_port = kPsDefaultStartPort;
  if (!inputs.start_port) inputs.free_ports = CollectivePorts(kFirstFreePort, *needed - 1);
  inputs.job = JobEnv{"/tmp/gloo", Get(input.env, "PADDLE_WITH_GLOO").value_or("0"), ""};
  const std::optional<PsPlan> plan = Try([&] { return PlanPs(inputs); });
  if (!plan) return;
  PDLAUNCH_FUZZ_CHECK(plan->node.node_ips == *hosts);
  CheckPsPlan(*plan, mode);
}

// --- Command line -------------------------------------------------------------------------------

// ParseCommandLine is ParseArguments plus the refusal of unsupported modes: it accepts a subset,
// and refuses with ParseArguments' own message whenever ParseArguments refuses.
std::optional<CommandLine> FuzzParse(const std::vector<std::string>& args) {
  std::optional<std::string> strict_error;
  std::optional<CommandLine> strict;
  try {
    strict = ParseCommandLine(args);
  } catch (const LaunchError& error) {
    PDLAUNCH_FUZZ_CHECK(error.exit_code() == kExitUsageError);
    strict_error = error.what();
  }
  try {
    CommandLine all = ParseArguments(args);
    if (strict) {
      PDLAUNCH_FUZZ_CHECK(FormatConfigurationArguments(strict->options) ==
                          FormatConfigurationArguments(all.options));
      PDLAUNCH_FUZZ_CHECK(strict->exit_text == all.exit_text);
    }
    return all;
  } catch (const LaunchError& error) {
    PDLAUNCH_FUZZ_CHECK(error.exit_code() == kExitUsageError);
    PDLAUNCH_FUZZ_CHECK(strict_error == std::string(error.what()));
    return std::nullopt;
  }
}

// The elastic settings of the command line and environment, and the decoders of what other
// nodes and etcd send: every token is also a JSON record, an etcd response and watch stream
// bytes. Decoded records must survive a round trip; the policy must decide on any job state.
void FuzzElastic(const LaunchOptions& options, const FuzzInput& input) {
  const std::optional<ElasticDecision> decision =
      Try([&] { return ResolveElasticConfig(options, input.env); });
  if (decision && decision->config) {
    const ElasticConfig& config = *decision->config;
    PDLAUNCH_FUZZ_CHECK(1 <= config.np_min && config.np_min <= config.np_max);
    PDLAUNCH_FUZZ_CHECK(config.ttl_seconds >= 1 && config.timeout_seconds >= 1);
    PDLAUNCH_FUZZ_CHECK(config.max_restart >= 0 && !config.job_id.empty());
  }
  const ElasticKeys keys("job");
  std::vector<KeyValue> kvs;
  etcd::WatchStreamDecoder stream;
  int64_t revision = 1;
  for (const std::string& token : input.args) {
    if (auto node = DecodeNodeRecord(token)) {
      PDLAUNCH_FUZZ_CHECK(DecodeNodeRecord(EncodeNodeRecord(*node)) == node);
      kvs.push_back({keys.node(std::to_string(revision)), token, revision, revision, 0});
    }
    if (auto world = DecodeWorldRecord(token)) {
      PDLAUNCH_FUZZ_CHECK(DecodeWorldRecord(EncodeWorldRecord(*world)) == world);
      kvs.push_back({keys.world(), token, revision, revision, 0});
    }
    if (auto failure = DecodeFailureRecord(token)) {
      PDLAUNCH_FUZZ_CHECK(DecodeFailureRecord(EncodeFailureRecord(*failure)) == failure);
      (void)DescribeFailure(*failure, 7);
      kvs.push_back({keys.failure(failure->generation), token, revision, revision, 0});
    }
    // A peer's view of an auto tuner trial (the exchange between nodes).
    if (auto outcome = DecodeNodeOutcome(token)) {
      PDLAUNCH_FUZZ_CHECK(DecodeNodeOutcome(EncodeNodeOutcome(*outcome)) == outcome);
      PDLAUNCH_FUZZ_CHECK(outcome->exit_code >= 0 && outcome->exit_code <= 255);
    }
    // The tuner's history CSV as a resume reads it (every column kind: custom and refined
    // dimensions, dp_estimation's, the conversion's, the overlap's): rows it cannot read are
    // skipped, and what it read is written and read back as the same layouts.
    {
      static const TunerConfig kTuner = ParseTunerConfig(
          R"({"search_algo": {"name": "dp_estimation", "estimated_num_gpus": 16,
                "conversion": {"step_time": "t", "comm_bw": [100, 12.5]},
                "sharding_overlap": {"sharding_mp": ["c.yaml", "o", true, false]}},
              "model_cfg": {"global_batch_size": 8, "num_layers": 4},
              "custom_search_dim": {"flash": {"value": [true, false], "prune": false}},
              "refined_recompute": ["mlp"], "metric_cfg": {"name": "m"},
              "run_cmd": {"refined_recompute": ["p.json", "rr"], "flash": ["--flash", ""]}})",
          "t.json", 1, 8);
      std::string csv = token;  // '|' ends a line: one token holds a whole file.
      std::replace(csv.begin(), csv.end(), '|', '\n');
      const std::vector<TrialOutcome> rows = ParseHistoryCsv(csv, kTuner);
      const std::vector<TrialOutcome> again = ParseHistoryCsv(HistoryCsv(rows, kTuner), kTuner);
      PDLAUNCH_FUZZ_CHECK(again.size() == rows.size());
      for (size_t k = 0; k < rows.size(); ++k) PDLAUNCH_FUZZ_CHECK(again[k].cfg == rows[k].cfg);
    }
    // A YAML config of run_cmd (the auto tuner's edit): refused with one line, or edited so
    // that setting the same key again changes nothing.
    if (auto edited = Try([&] { return SetYamlValue(token, "a.b", "2"); })) {
      PDLAUNCH_FUZZ_CHECK(SetYamlValue(*edited, "a.b", "2") == *edited);
    }
    // A trial's log line (the auto tuner's metric reader): a finite number or none.
    for (const char* metric : {"step/s", "interval_samples_per_second"}) {
      const std::optional<double> value = ReadMetric(token, metric);
      PDLAUNCH_FUZZ_CHECK(!value || std::isfinite(*value));
    }
    ++revision;
    (void)Try([&] { return etcd::ParseRangeResponse(token); });
    (void)Try([&] { return etcd::ParseTxnResponse(token); });
    (void)Try([&] { return etcd::ParseKeepAliveResponse(token); });
    (void)stream.Feed(token + "\r\n");
  }
  // The same records as an auto tuner exchange's through etcd (store_exchange.h): whatever they
  // hold, a decision or one error; done only with every node's value.
  std::vector<KeyValue> exchange;
  for (size_t i = 0; i < input.args.size(); ++i) {
    exchange.push_back({fmt::format("/x/{:04}", i), input.args[i], 1, 1, 0});
  }
  // With and without a token: keys that are not records are ignored, never fatal; done only
  // with `nodes` records; a MAC'd record of this node's own is believed with the token only.
  static const JobToken kToken = JobToken::Parse("fuzzer-token-0123456789");
  const std::string own_record = exchange.empty() ? std::string() : exchange.front().value;
  for (const JobToken* token : {static_cast<const JobToken*>(nullptr), &kToken}) {
    for (size_t nodes = 1; nodes <= 3; ++nodes) {
      const ExchangeStep step = DecideExchange(exchange, nodes, "/x/0000", own_record, token);
      PDLAUNCH_FUZZ_CHECK(step.ignored.size() <= exchange.size());
      if (step.kind == ExchangeStep::Kind::kDone) {
        PDLAUNCH_FUZZ_CHECK(step.values.size() == nodes &&
                            exchange.size() - step.ignored.size() == nodes);
      }
      if (step.kind == ExchangeStep::Kind::kRepair) PDLAUNCH_FUZZ_CHECK(exchange.empty());
      PDLAUNCH_FUZZ_CHECK(!ExchangeShortfall(exchange, nodes, "/x/0000", token).empty());
    }
  }
  if (!input.args.empty()) {
    // A record made by EncodeExchangeRecord is always one, under its own key only.
    const std::string record = EncodeExchangeRecord("/x/0000", "", input.args[0], &kToken);
    const std::vector<KeyValue> mine = {{"/x/0000", record, 1, 1, 0}};
    const ExchangeStep step = DecideExchange(mine, 1, "/x/0000", record, &kToken);
    PDLAUNCH_FUZZ_CHECK(input.args[0].size() > kMaxExchangeValue ||
                        step.kind == ExchangeStep::Kind::kConfirm);
    const std::vector<KeyValue> moved = {{"/x/0001", record, 1, 1, 0}};
    PDLAUNCH_FUZZ_CHECK(DecideExchange(moved, 1, "/x/0001", record, &kToken).ignored.size() == 1);
  }
  const JobState state = ParseJobState(keys, kvs);
  ElasticConfig config;
  config.np_min = 1;
  config.np_max = 3;
  for (const ElasticNode& node : state.nodes) {
    const ElasticStep step = DecideElasticStep(state, node.id, 0, config, true);
    if (step.kind == ElasticStep::Kind::kPropose) {
      PDLAUNCH_FUZZ_CHECK(!step.world.members.empty() &&
                          step.world.members.size() <= static_cast<size_t>(config.np_max));
    }
    if (state.world) (void)ReasonToStop(state, *state.world, config);
  }
}

// The master: every token is also a raw HTTP request, read the way the server reads one
// (coord/http_feed.h: a bounded buffer fed in pieces, the parser under try/catch, a chunked
// request refused once its header is read) and handled by the store; the same bytes are also
// read as a master's answer, the way a participant reads one. The job keys the tokens make are
// decoded, ordered and decided on as a node would.
template <class Parser>
http_feed::Fed FeedInPieces(Parser& parser, std::string_view raw, size_t piece,
                            bool stop_at_chunked) {
  boost::beast::flat_buffer buffer(http_feed::kMaxBufferedBytes);
  std::string error;
  http_feed::Fed fed = http_feed::Fed::kNeedMore;
  bool header_checked = false;
  while (fed == http_feed::Fed::kNeedMore) {
    if (raw.empty()) return http_feed::FeedEof(parser, error);
    const size_t n = std::min({raw.size(), piece, http_feed::ReadSize(buffer)});
    if (n == 0) return http_feed::Fed::kFailed;
    auto space = buffer.prepare(n);
    std::memcpy(space.data(), raw.data(), n);
    buffer.commit(n);
    raw.remove_prefix(n);
    fed = http_feed::Feed(parser, buffer, error, stop_at_chunked && !header_checked);
    if (fed == http_feed::Fed::kFailed) {
      PDLAUNCH_FUZZ_CHECK(!error.empty());
      return fed;
    }
    if (stop_at_chunked && !header_checked && parser.is_header_done()) {
      header_checked = true;
      if (parser.chunked()) return http_feed::Fed::kFailed;  // 411, as the server answers.
      fed = http_feed::Feed(parser, buffer, error);
    }
  }
  return fed;
}

void FuzzMaster(const FuzzInput& input, const LaunchOptions& options, const EnvMap& env) {
  namespace http = boost::beast::http;
  KvLimits limits;
  limits.max_keys = 64;
  limits.max_bytes = 1 << 16;
  KvMemoryStore store(limits);
  double now = 0;
  size_t piece = 1;
  for (const std::string& token : input.args) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 << 10);
    parser.body_limit(4 << 20);
    std::string raw;  // '|' ends a line: one token holds a whole request.
    for (char c : token) raw += c == '|' ? std::string("\r\n") : std::string(1, c);
    piece = piece * 7 % 4093 + 1;  // Pieces of 1 to 4093 bytes, varying per token.
    const bool done = FeedInPieces(parser, raw, piece, true) == http_feed::Fed::kDone;
    http::response_parser<http::string_body> answer;
    answer.body_limit(8 << 20);
    (void)FeedInPieces(answer, raw, piece, false);
    const int64_t before = store.revision();
    if (done) {
      const auto& request = parser.get();
      const KvHttpResponse r = store.Handle(
          {std::string(request.method_string()), std::string(request.target()), request.body()},
          now);
      PDLAUNCH_FUZZ_CHECK(r.status >= 200 && r.status < 600);
      if (r.status == 200 && !r.Body().empty()) (void)DecodeJsonObject(r.Body());
    }
    // The same token as a direct request, the way the tests drive it.
    const size_t space = token.find(' ');
    const KvHttpResponse direct = store.Handle(
        {token.substr(0, space), space == std::string::npos ? "/" : token.substr(space + 1), token},
        now);
    PDLAUNCH_FUZZ_CHECK(direct.status >= 200 && direct.status < 600);
    PDLAUNCH_FUZZ_CHECK(store.revision() >= before);
    now += 1;
    (void)store.Expire(now);
  }
  const MasterKeys keys(options.job_id.value_or("default"));
  const std::map<std::string, std::string> all = store.Prefix(keys.job_prefix());
  std::map<std::string, std::string> info;
  for (const auto& [key, value] : all) {
    if (key.starts_with(keys.info_prefix())) info.emplace(key, value);
  }
  if (!info.empty()) {
    const std::string own = info.begin()->first;
    if (const auto order = Try([&] { return OrderPeers(info, own, options.sort_ip); })) {
      PDLAUNCH_FUZZ_CHECK(order->peers.size() == info.size());
      PDLAUNCH_FUZZ_CHECK(order->own_index >= 0 &&
                          static_cast<size_t>(order->own_index) < order->peers.size());
      DevicePlan devices;
      devices.devices_per_proc.assign(static_cast<size_t>(order->peers[order->own_index].replicas),
                                      {});
      const Cluster cluster = BuildMasterCluster(*order, devices);
      int total = 0;
      for (const PeerInfo& peer : order->peers) total += peer.replicas;
      PDLAUNCH_FUZZ_CHECK(cluster.world_size() == total);
    }
  }
  // The host's ledger, fed every key (then told they all went), and a participant's news.
  JobLedger ledger(keys, JobTerms{2, "collective", ""}, "host");
  for (const auto& [key, value] : all) ledger.Update(key, &value);
  (void)ledger.TakeRefusals();
  (void)ledger.TakeStaleInfo();
  std::vector<std::string> members;
  for (const auto& [key, value] : info) members.push_back(InfoKeyPod(keys, key));
  ledger.Form(members);
  (void)ledger.Step();
  ledger.Resync({});
  PDLAUNCH_FUZZ_CHECK(ledger.counted().empty());
  const JobNews news = ParseNews(keys, "host", all);
  (void)DecideNodeStep(news, JobTerms{2, "collective", ""}, false);
  if (const auto it = all.find(keys.world()); it != all.end()) {
    if (const auto world = Try([&] { return DecodeWorld(it->second, 4096); })) {
      PDLAUNCH_FUZZ_CHECK(DecodeWorld(EncodeWorld(*world), 4096) == *world);
    }
  }
  // Hostlists: a UsageError or names without brackets; the step from the input's environment.
  for (const std::string& token : input.args) {
    if (const auto hosts = Try([&] { return ExpandHostlist(token); })) {
      for (const std::string& host : *hosts) {
        PDLAUNCH_FUZZ_CHECK(!host.empty() && host.find_first_of("[]") == std::string::npos);
      }
    }
  }
  (void)Try([&] { return DetectSlurmStep(env); });
  // --echo values: a choice or a UsageError; a choice is never empty and sorted.
  for (const std::string& token : input.args) {
    if (const auto choice = Try([&] { return ParseEchoChoice(token); })) {
      PDLAUNCH_FUZZ_CHECK(choice->all || !choice->locals.empty());
      PDLAUNCH_FUZZ_CHECK(std::is_sorted(choice->locals.begin(), choice->locals.end()));
    }
    // The echo of two prefixed processes writing the token in steps: every byte of each shows,
    // in order, and the prefixes never splice into one another's lines.
    EchoMux mux({"[a]: ", "[b]: "});
    std::string shown;
    for (size_t i = 0; i < token.size(); i += 3) {
      shown += mux.Feed(i % 2, std::string_view(token).substr(i, 3), static_cast<double>(i));
      if (i % 7 == 0) shown += mux.FlushQuiet(static_cast<double>(i) + 1, 0.5);
    }
    shown += mux.Finish();
    PDLAUNCH_FUZZ_CHECK(shown.size() >= token.size());
    PDLAUNCH_FUZZ_CHECK(mux.Finish().empty() && mux.EndLine().empty());
  }
  // The cgroup of /proc/self/mountinfo and /proc/self/cgroup: pairs of tokens as the two files.
  for (size_t i = 0; i + 1 < input.args.size(); i += 2) {
    if (const auto dir = OwnCgroupDir(input.args[i], input.args[i + 1])) {
      PDLAUNCH_FUZZ_CHECK(!dir->empty());
    }
    (void)CgroupEventsValue(input.args[i], input.args[i + 1]);
  }
  // Path selection and the environment twins never fail but with a UsageError.
  LaunchOptions twins = options;
  (void)Try([&] { return ApplyEnvironmentTwins(twins, env); });
  (void)Try([&] { return SelectLaunchPath(twins, env); });
  // The JSON the master writes reads back.
  std::map<std::string, std::string> ascii;
  for (const std::string& token : input.args) {
    if (std::all_of(token.begin(), token.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) {
      ascii[token] = token;
    }
  }
  PDLAUNCH_FUZZ_CHECK(DecodeJsonObject(EncodeJsonObject(ascii)) == ascii);
}

void FuzzOne(const FuzzInput& input) {
  const std::optional<CommandLine> command_line = FuzzParse(input.args);
  if (!command_line) return;
  if (command_line->exit_text) {
    PDLAUNCH_FUZZ_CHECK(command_line->exit_text->ends_with("\n"));
    return;
  }
  const LaunchOptions& options = command_line->options;
  CheckConfiguration(options);
  FuzzMaster(input, options, input.env);
  const std::optional<JobMode> mode = Try([&] { return SelectMode(options); });
  if (!mode) return;
  if (*mode == JobMode::kCollective) {
    FuzzElastic(options, input);
    FuzzCollective(options, input);
  } else {
    (void)FormatPsModeLine(options, input.gpu_count);
    FuzzPs(options, *mode, input);
  }
}

}  // namespace
}  // namespace pdlaunch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const pdlaunch::FuzzInput input =
      pdlaunch::Decode(std::string_view(reinterpret_cast<const char*>(data), size));
  pdlaunch::FuzzOne(input);
  return 0;
}
