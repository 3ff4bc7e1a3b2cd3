#include "pdlaunch/plan/ps.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/json_number.h"
#include "pdlaunch/base/json_string.h"
#include "pdlaunch/plan/messages.h"

namespace pdlaunch {

namespace {

constexpr std::string_view kLocalHost = "127.0.0.1";

// --- Endpoint lists without ports (docs/ps.md) ----------------------------------------------

// One entry of a role's list: a fixed endpoint, or a host whose port is generated at Paddle's
// get_ports offset.
struct Slot {
  std::string host;
  int port = 0;
  int offset = -1;  // >= 0: generated.
};
using Slots = std::vector<Slot>;

struct Layout {
  Slots servers;
  Slots workers;
  std::vector<Slots> heter;
  std::vector<std::string> stage_devices;
  std::optional<int> http_port;
  int http_offset = 0;
  std::vector<std::string> warnings;
};

int CheckCount(int value, std::string_view flag) {
  CheckProcessCount(flag, value, 1);
  return value;
}

Slots Generated(int count, int offset) {
  Slots slots;
  for (int i = 0; i < count; ++i) slots.push_back({std::string(kLocalHost), 0, offset + i});
  return slots;
}

std::vector<std::string> Items(const std::string& text, std::string_view flag) {
  std::vector<std::string> items = SplitAndStrip(text, ',');
  if (items.empty()) items.emplace_back();
  for (const std::string& item : items) {
    if (item.empty()) throw UsageError(fmt::format("{}: empty endpoint in '{}'", flag, text));
  }
  return items;
}

Slots FixedSlots(const std::vector<std::string>& items, std::string_view flag) {
  Slots slots;
  for (const std::string& item : items) {
    try {
      Endpoint endpoint = ParseEndpoint(item);
      slots.push_back({std::move(endpoint.host), endpoint.port, -1});
    } catch (const UsageError& error) {
      throw UsageError(fmt::format("{}: {}", flag, error.what()));
    }
  }
  return slots;
}

bool HasPort(const std::string& item) { return item.find(':') != std::string::npos; }

// Paddle rewrites every port of a list that has a port-less item; a mixed list is refused.
bool AllHavePorts(const std::vector<std::string>& items, std::string_view flag) {
  const auto without = std::find_if_not(items.begin(), items.end(), HasPort);
  if (without == items.end()) return true;
  const auto with = std::find_if(items.begin(), items.end(), HasPort);
  if (with != items.end()) {
    throw UsageError(
        fmt::format("{}: '{}' has no port but '{}' has one; give every endpoint a port, or none",
                    flag, *without, *with));
  }
  return false;
}

Slots ServerSlots(const LaunchOptions& options) {
  if (options.server_num) {
    const int count = CheckCount(*options.server_num, options.FlagName("server_num"));
    if (options.servers.empty()) return Generated(count, 0);
    const std::vector<std::string> items = Items(options.servers, "--servers");
    if (static_cast<int>(items.size()) != count) {
      throw UsageError(fmt::format(
          "The server_num and servers doesn't match. Expect servers endpoints num epual to "
          "server_num, but received servers enpoint num: {} and server_num {}",
          items.size(), count));
    }
    return FixedSlots(items, "--servers");
  }
  if (options.servers.empty()) {
    throw UsageError("The setting of Parameter-Server must has server_num or servers.");
  }
  return FixedSlots(Items(options.servers, "--servers"), "--servers");
}

// Port-less workers get 6170 + server count + i whatever the start port (Paddle's rule).
Slots WorkerListSlots(const std::vector<std::string>& items, int server_count) {
  if (AllHavePorts(items, "--workers")) return FixedSlots(items, "--workers");
  Slots slots;
  for (size_t i = 0; i < items.size(); ++i) {
    slots.push_back({items[i], kPsDefaultStartPort + server_count + static_cast<int>(i), -1});
  }
  return slots;
}

Slots WorkerSlots(const LaunchOptions& options, int server_count) {
  if (options.worker_num) {
    const int count = CheckCount(*options.worker_num, options.FlagName("worker_num"));
    if (options.workers.empty()) return Generated(count, server_count);
    const std::vector<std::string> items = Items(options.workers, "--workers");
    if (static_cast<int>(items.size()) != count) {
      throw UsageError(fmt::format(
          "The worker_num and workers doesn't match. Expect workers endpoints num epual to "
          "worker_num, but received workers enpoint num: {} and worker_num {}",
          items.size(), count));
    }
    return WorkerListSlots(items, server_count);
  }
  if (options.workers.empty()) {
    throw UsageError("The setting of Parameter-Server must has worker_num or workers.");
  }
  return WorkerListSlots(Items(options.workers, "--workers"), server_count);
}

std::vector<int> StageCounts(const std::string& text) {
  std::vector<std::string> items = SplitAndStrip(text, ';');
  if (items.empty()) items.emplace_back();
  std::vector<int> counts;
  for (const std::string& item : items)
    counts.push_back(ParseInt(item, "--heter_worker_num", 1, 65535));
  return counts;
}

// A port-less stage gets generated ports for all its items, at `offset` onwards.
Slots HeterStageSlots(const std::vector<std::string>& items, int offset) {
  if (AllHavePorts(items, "--heter_workers")) return FixedSlots(items, "--heter_workers");
  Slots slots;
  for (size_t i = 0; i < items.size(); ++i) {
    slots.push_back({items[i], 0, offset + static_cast<int>(i)});
  }
  return slots;
}

std::vector<Slots> ListedStages(const LaunchOptions& options, const std::vector<int>& counts,
                                int offset) {
  const std::vector<std::string> stages = SplitAndStrip(options.heter_workers, ';');
  if (!counts.empty() && stages.size() != counts.size()) {
    throw UsageError(fmt::format(
        "The stage_num and heter_workers doesn't match. Expect heter_workers endpoints stage num "
        "epual to heter_worker_num stage, but received heter_workers enpoint stage num: {} and "
        "heter_worker_num stage {}",
        stages.size(), counts.size()));
  }
  std::vector<Slots> result;
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::vector<std::string> items = Items(stages[i], "--heter_workers");
    if (!counts.empty() && static_cast<int>(items.size()) != counts[i]) {
      throw UsageError(
          fmt::format("The heter trainer num in stage {} is not equal in args.heter_worker_num and "
                      "args.heter_workers",
                      i));
    }
    result.push_back(HeterStageSlots(items, offset));
    offset += static_cast<int>(items.size());
  }
  return result;
}

std::vector<Slots> HeterSlots(const LaunchOptions& options, int offset) {
  if (!options.heter_worker_num) {
    if (options.heter_workers.empty()) {
      throw UsageError(
          "The setting of Parameter-Server heter mode must has heter_worker_num or "
          "heter_workers.");
    }
    return ListedStages(options, {}, offset);
  }
  const std::vector<int> counts = StageCounts(*options.heter_worker_num);
  if (!options.heter_workers.empty()) return ListedStages(options, counts, offset);
  std::vector<Slots> result;
  for (int count : counts) {
    result.push_back(Generated(count, offset));
    offset += count;
  }
  return result;
}

// Stage 1 (the workers) runs on "cpu"; stage i+2 on the i-th item of --heter_devices.
std::vector<std::string> StageDevices(const std::string& text, size_t stages,
                                      std::vector<std::string>& warnings) {
  std::vector<std::string> devices = SplitAndStrip(text, ';');
  for (const std::string& device : devices) {
    if (device.empty())
      throw UsageError(fmt::format("--heter_devices: empty device in '{}'", text));
    // What Paddle's heter worker accepts (the_one_ps.py: "Heter Worker Not Support Device"),
    // checked here rather than by the job at its first step.
    const std::string upper = AsciiUpper(device);
    if (upper != "CPU" && upper != "GPU" && upper != "XPU") {
      throw UsageError(fmt::format(
          "--heter_devices: '{}' is not a heter device (cpu, gpu or xpu, any case)", device));
    }
  }
  if (devices.size() < stages) {
    throw UsageError(fmt::format("--heter_devices={} names {} stage device(s) for {} heter stages",
                                 text, devices.size(), stages));
  }
  if (devices.size() > stages) {
    warnings.push_back(fmt::format(
        "--heter_devices={} names {} stage devices for {} heter stage(s); the last {} are ignored",
        text, devices.size(), stages, devices.size() - stages));
  }
  devices.resize(stages);
  devices.insert(devices.begin(), "cpu");
  return devices;
}

int Size(const Slots& slots) { return static_cast<int>(slots.size()); }

Layout BuildLayout(const LaunchOptions& options, JobMode mode) {
  Layout layout;
  layout.servers = ServerSlots(options);
  layout.workers = WorkerSlots(options, Size(layout.servers));
  layout.http_offset = Size(layout.servers) + Size(layout.workers);
  if (mode == JobMode::kPsHeter) {
    if (options.heter_devices.empty()) {
      throw UsageError("The setting of Parameter-Server heter mode must has heter_devices.");
    }
    layout.heter = HeterSlots(options, layout.http_offset);
    layout.stage_devices =
        StageDevices(options.heter_devices, layout.heter.size(), layout.warnings);
    for (const Slots& stage : layout.heter) layout.http_offset += Size(stage);
  }
  if (options.http_port) {
    layout.http_port = ParseInt(std::to_string(*options.http_port), "--http_port", 1, 65535);
  }
  return layout;
}

std::vector<const Slots*> AllLists(const Layout& layout) {
  std::vector<const Slots*> lists = {&layout.servers, &layout.workers};
  for (const Slots& stage : layout.heter) lists.push_back(&stage);
  return lists;
}

std::vector<std::string> NodeIpsOf(const Layout& layout) {
  std::vector<std::string> nodes;
  for (const Slots* list : AllLists(layout)) {
    for (const Slot& slot : *list) {
      if (std::find(nodes.begin(), nodes.end(), slot.host) == nodes.end())
        nodes.push_back(slot.host);
    }
  }
  return nodes;
}

// --- Ports --------------------------------------------------------------------------------------

class PortSource {
 public:
  PortSource(const std::optional<int>& start, const std::vector<int>& free)
      : start_(start), free_(free) {}

  int Next(int offset) {
    if (start_) {
      const int port = *start_ + offset;
      if (port > 65535) {
        throw UsageError(fmt::format("generated port {} (start port {} + {}) is not a port number",
                                     port, *start_, offset));
      }
      return port;
    }
    if (next_ >= free_.size()) {
      throw LaunchError(fmt::format(
          "parameter-server planning needs more than the {} free ports reserved", free_.size()));
    }
    return free_[next_++];
  }

 private:
  std::optional<int> start_;
  const std::vector<int>& free_;
  size_t next_ = 0;
};

std::vector<Endpoint> Assign(const Slots& slots, PortSource& ports) {
  std::vector<Endpoint> endpoints;
  for (const Slot& slot : slots) {
    endpoints.push_back({slot.host, slot.offset < 0 ? slot.port : ports.Next(slot.offset)});
  }
  return endpoints;
}

void AssignEndpoints(const Layout& layout, PortSource& ports, PsPlan& plan) {
  plan.servers = Assign(layout.servers, ports);
  plan.workers = Assign(layout.workers, ports);
  for (const Slots& stage : layout.heter) plan.heter_stages.push_back(Assign(stage, ports));
  plan.stage_devices = layout.stage_devices;
  const int http_port = layout.http_port ? *layout.http_port : ports.Next(layout.http_offset);
  plan.http = Endpoint{plan.servers.front().host, http_port};
}

void CheckDistinct(const PsPlan& plan) {
  std::map<std::string, std::string> seen;
  auto add = [&seen](const Endpoint& endpoint, const std::string& who) {
    const auto [it, inserted] = seen.emplace(endpoint.ToString(), who);
    if (!inserted) {
      throw UsageError(fmt::format("endpoint {} is used twice: by {} and by {}",
                                   endpoint.ToString(), it->second, who));
    }
  };
  for (size_t i = 0; i < plan.servers.size(); ++i)
    add(plan.servers[i], fmt::format("server {}", i));
  for (size_t i = 0; i < plan.workers.size(); ++i)
    add(plan.workers[i], fmt::format("worker {}", i));
  size_t heter = 0;
  for (const std::vector<Endpoint>& stage : plan.heter_stages) {
    for (const Endpoint& endpoint : stage) add(endpoint, fmt::format("heter worker {}", heter++));
  }
  add(plan.http, "the gloo HTTP endpoint");
}

// --- This node (docs/ps.md, issue #4 item 2) -------------------------------------------------

NodeIdentity FindNamed(std::vector<std::string> nodes, const std::string& address,
                       const std::string& how, const NodeEnv& env) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (NodeEntryNames(nodes[i], address, env)) return {std::move(nodes), static_cast<int>(i), how};
  }
  throw LaunchError(fmt::format(
      "Can't find your local ip {{{}}} in args.servers and args.workers ips: {{{}}} (from {})",
      address, PythonListRepr(nodes), how));
}

NodeIdentity FindLocal(std::vector<std::string> nodes, const NodeEnv& env) {
  std::vector<int> found;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& address : env.local_addresses) {
      if (NodeEntryNames(nodes[i], address, env)) {
        found.push_back(static_cast<int>(i));
        break;
      }
    }
  }
  if (found.size() == 1) return {std::move(nodes), found.front(), "local interface"};
  const std::string local = fmt::format("local addresses are [{}]; pass --host or set POD_IP",
                                        fmt::join(env.local_addresses, ", "));
  if (found.empty()) {
    throw LaunchError(
        fmt::format("none of the parameter-server hosts {} is an address of this node: {}",
                    PythonListRepr(nodes), local));
  }
  std::vector<std::string> matches;
  for (int index : found) matches.push_back(nodes[static_cast<size_t>(index)]);
  throw LaunchError(
      fmt::format("several parameter-server hosts of {} are addresses of this "
                  "node: [{}]; {}",
                  PythonListRepr(nodes), fmt::join(matches, ", "), local));
}

NodeIdentity FindThisNode(std::vector<std::string> nodes, const std::optional<std::string>& host,
                          const NodeEnv& env) {
  if (nodes.size() == 1) return {std::move(nodes), 0, "single host"};
  if (host) return FindNamed(std::move(nodes), *host, "--host", env);
  if (env.pod_ip && !env.pod_ip->empty()) {
    return FindNamed(std::move(nodes), *env.pod_ip, "POD_IP", env);
  }
  return FindLocal(std::move(nodes), env);
}

// --- Environment per role (docs/ps.md) -------------------------------------------------------

// Values every role's table shares.
struct Shared {
  bool heter = false;
  std::string servers;
  std::string workers;
  std::string worker_count;
  std::string heter_all;
  std::vector<std::string> stage_lists;  // Stage 1 (workers), 2, ...
  std::vector<std::string> stage_devices;
  std::string stage_trainers;  // Python list repr: "[2, 2]".
  std::string http;
  JobEnv job;
};

Shared MakeShared(const PsPlan& plan, const JobEnv& job) {
  Shared s;
  s.heter = plan.mode == JobMode::kPsHeter;
  s.servers = JoinEndpoints(plan.servers);
  s.workers = JoinEndpoints(plan.workers);
  s.worker_count = std::to_string(plan.workers.size());
  s.stage_lists.push_back(s.workers);
  std::vector<size_t> counts = {plan.workers.size()};
  std::vector<Endpoint> all;
  for (const std::vector<Endpoint>& stage : plan.heter_stages) {
    s.stage_lists.push_back(JoinEndpoints(stage));
    counts.push_back(stage.size());
    all.insert(all.end(), stage.begin(), stage.end());
  }
  s.heter_all = JoinEndpoints(all);
  s.stage_devices = plan.stage_devices;
  s.stage_trainers = fmt::format("[{}]", fmt::join(counts, ", "));
  s.http = plan.http.ToString();
  s.job = job;
  return s;
}

void AppendGloo(EnvList& env, const JobEnv& job) {
  env.insert(env.end(), {{"PADDLE_WITH_GLOO", job.with_gloo},
                         {"PADDLE_GLOO_RENDEZVOUS", "3"},
                         {"PADDLE_GLOO_FS_PATH", job.gloo_fs_path}});
}

void AppendDevices(EnvList& env, const std::string& device) {
  env.insert(env.end(), {{"FLAGS_selected_gpus", "0"},
                         {"FLAGS_selected_xpus", "0"},
                         {"CUDA_VISIBLE_DEVICES", device},
                         {"XPU_VISIBLE_DEVICES", device}});
}

EnvList ServerEnv(const Shared& s, const PsProcess& p) {
  EnvList env = {{"PADDLE_PSERVERS_IP_PORT_LIST", s.servers},
                 {"PADDLE_TRAINER_ENDPOINTS", s.workers}};
  if (s.heter) env.emplace_back("PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", s.heter_all);
  env.insert(env.end(), {{"PADDLE_PORT", std::to_string(p.endpoint.port)},
                         {"TRAINING_ROLE", "PSERVER"},
                         {"PADDLE_TRAINERS_NUM", s.worker_count},
                         {"POD_IP", p.endpoint.host}});
  AppendGloo(env, s.job);
  env.emplace_back("PADDLE_GLOO_HTTP_ENDPOINT", s.http);
  return env;
}

std::string StageList(const Shared& s, int stage) {
  const size_t index = static_cast<size_t>(stage - 1);
  return index < s.stage_lists.size() ? s.stage_lists[index] : "";
}

EnvList WorkerEnv(const Shared& s, const PsProcess& p) {
  EnvList env = {{"PADDLE_PSERVERS_IP_PORT_LIST", s.servers},
                 {"PADDLE_TRAINER_ENDPOINTS", s.workers},
                 {"PADDLE_TRAINERS_NUM", s.worker_count}};
  if (s.heter) {
    env.insert(env.end(), {{"PADDLE_STAGE_TRAINERS_NUM", s.stage_trainers},
                           {"STAGE_ID", "1"},
                           {"STAGE_NUM", std::to_string(s.stage_lists.size())},
                           {"PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST", ""},
                           {"PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST", StageList(s, 2)},
                           {"PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", s.heter_all},
                           {"HETER_DEVICE_TYPE", s.stage_devices.at(0)}});
  }
  env.insert(env.end(), {{"TRAINING_ROLE", "TRAINER"},
                         {"POD_IP", p.endpoint.host},
                         {"PADDLE_PORT", std::to_string(p.endpoint.port)},
                         {"PADDLE_TRAINER_ID", std::to_string(p.global_id)}});
  AppendGloo(env, s.job);
  AppendDevices(env, p.device);
  env.emplace_back("PADDLE_GLOO_HTTP_ENDPOINT", s.http);
  return env;
}

EnvList HeterEnv(const Shared& s, const PsProcess& p) {
  EnvList env = {{"PADDLE_PSERVERS_IP_PORT_LIST", s.servers},
                 {"PADDLE_TRAINER_ENDPOINTS", s.workers},
                 {"PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST", StageList(s, p.stage + 1)},
                 {"PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST", StageList(s, p.stage - 1)},
                 {"PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", s.heter_all},
                 {"HETER_DEVICE_TYPE", s.stage_devices.at(static_cast<size_t>(p.stage - 1))},
                 {"STAGE_ID", std::to_string(p.stage)},
                 {"STAGE_NUM", std::to_string(s.stage_lists.size())},
                 {"PADDLE_PORT", std::to_string(p.endpoint.port)},
                 {"TRAINING_ROLE", "HETER_TRAINER"},
                 {"PADDLE_TRAINERS_NUM", s.worker_count},
                 {"PADDLE_STAGE_TRAINERS_NUM", s.stage_trainers},
                 {"POD_IP", p.endpoint.host}};
  AppendGloo(env, s.job);
  AppendDevices(env, p.device);
  env.emplace_back("PADDLE_GLOO_HTTP_ENDPOINT", s.http);
  return env;
}

EnvList RoleEnv(const Shared& s, const PsProcess& p) {
  switch (p.role) {
    case PsRole::kServer:
      return ServerEnv(s, p);
    case PsRole::kWorker:
      return WorkerEnv(s, p);
    case PsRole::kHeterWorker:
      return HeterEnv(s, p);
  }
  return {};
}

// --- Local processes (docs/ps.md) ------------------------------------------------------

// Physical ids (what CUDA_VISIBLE_DEVICES or XPU_VISIBLE_DEVICES takes) of the node's device list
// (docs/ps.md, "Environment per role"), in order.
std::vector<std::string> PhysicalGpus(const DevicePlan& devices,
                                      const std::optional<std::string>& cuda_visible_devices) {
  if (devices.mode == DeviceMode::kCpu) return {};
  std::vector<int> ids;
  for (const std::vector<int>& own : devices.devices_per_proc) {
    ids.insert(ids.end(), own.begin(), own.end());
  }
  return PhysicalLabels(ids, cuda_visible_devices);
}

std::string LogPrefix(PsRole role) {
  switch (role) {
    case PsRole::kServer:
      return "serverlog";
    case PsRole::kWorker:
      return "workerlog";
    case PsRole::kHeterWorker:
      return "heterlog";
  }
  return "";
}

struct Member {
  Endpoint endpoint;
  int stage = 0;
};

std::vector<Member> Members(const std::vector<Endpoint>& endpoints, int stage) {
  std::vector<Member> members;
  for (const Endpoint& endpoint : endpoints) members.push_back({endpoint, stage});
  return members;
}

std::vector<Member> HeterMembers(const PsPlan& plan) {
  std::vector<Member> members;
  int stage = 2;
  for (const std::vector<Endpoint>& list : plan.heter_stages) {
    const std::vector<Member> more = Members(list, stage++);
    members.insert(members.end(), more.begin(), more.end());
  }
  return members;
}

// Appends this node's processes of `role`; global id = index in the role's full list (bug 23).
void AddLocal(PsRole role, const std::vector<Member>& all, const Shared& shared,
              const std::vector<std::string>& gpus, PsPlan& plan) {
  const std::string& me = plan.node.node_ips.at(static_cast<size_t>(plan.node.node_index));
  int local = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].endpoint.host != me) continue;
    PsProcess p;
    p.role = role;
    p.local_index = local;
    p.global_id = static_cast<int>(i);
    p.stage = all[i].stage;
    p.endpoint = all[i].endpoint;
    if (role != PsRole::kServer) {
      p.device = gpus.empty() ? "0" : gpus[static_cast<size_t>(local) % gpus.size()];
    }
    p.log_name = fmt::format("{}.{}", LogPrefix(role), local);
    p.env = RoleEnv(shared, p);
    plan.processes.push_back(std::move(p));
    ++local;
  }
}

std::vector<const PsProcess*> OfRole(const PsPlan& plan, PsRole role) {
  std::vector<const PsProcess*> found;
  for (const PsProcess& p : plan.processes) {
    if (p.role == role) found.push_back(&p);
  }
  return found;
}

void AddRoleLines(PsRole role, const std::vector<std::string>& gpus, PsPlan& plan) {
  const std::vector<const PsProcess*> local = OfRole(plan, role);
  if (local.empty()) return;
  plan.info.push_back(fmt::format(
      "Local {} start {} processes. First process distributed environment info (Only For Debug): "
      "{}",
      PsRoleName(role), local.size(), FormatDistributedEnvs(local.front()->env)));
  if (role != PsRole::kServer && !gpus.empty() && local.size() > gpus.size()) {
    std::vector<std::string> devices;
    for (const PsProcess* p : local) devices.push_back(p->device);
    plan.warnings.push_back(fmt::format("{} local {}s share {} GPU(s): CUDA_VISIBLE_DEVICES {}",
                                        local.size(), PsRoleName(role), gpus.size(),
                                        fmt::join(devices, ",")));
  }
}

void AddInfo(const PsInputs& inputs, const std::vector<std::string>& gpus, PsPlan& plan) {
  const NodeIdentity& node = plan.node;
  if (node.node_ips.size() > 1) {
    plan.info.push_back(
        fmt::format("This node is {}, node {} of {} of the parameter-server hosts (found by {})",
                    node.node_ips[static_cast<size_t>(node.node_index)], node.node_index,
                    node.node_ips.size(), node.how));
  }
  for (PsRole role : {PsRole::kServer, PsRole::kWorker, PsRole::kHeterWorker}) {
    AddRoleLines(role, gpus, plan);
  }
  plan.info.push_back(fmt::format(
      "Please check servers, workers and heter_worker logs in {0}/workerlog.*, {0}/serverlog.* "
      "and {0}/heterlog.*",
      inputs.options.log_dir));
}

}  // namespace

int PsPortsNeeded(const LaunchOptions& options, JobMode mode) {
  const Layout layout = BuildLayout(options, mode);
  int count = layout.http_port ? 0 : 1;
  for (const Slots* list : AllLists(layout)) {
    count += static_cast<int>(std::count_if(list->begin(), list->end(),
                                            [](const Slot& slot) { return slot.offset >= 0; }));
  }
  return count;
}

std::vector<std::string> PsNodeIps(const LaunchOptions& options, JobMode mode) {
  return NodeIpsOf(BuildLayout(options, mode));
}

PsPlan PlanPs(const PsInputs& inputs) {
  const Layout layout = BuildLayout(inputs.options, inputs.mode);
  PsPlan plan;
  plan.mode = inputs.mode;
  plan.warnings = layout.warnings;
  PortSource ports(inputs.start_port, inputs.free_ports);
  AssignEndpoints(layout, ports, plan);
  CheckDistinct(plan);
  plan.node = FindThisNode(NodeIpsOf(layout), inputs.options.host, inputs.node);
  const Shared shared = MakeShared(plan, inputs.job);
  const std::vector<std::string> gpus = PhysicalGpus(inputs.devices, inputs.cuda_visible_devices);
  AddLocal(PsRole::kServer, Members(plan.servers, 0), shared, gpus, plan);
  AddLocal(PsRole::kWorker, Members(plan.workers, 1), shared, gpus, plan);
  AddLocal(PsRole::kHeterWorker, HeterMembers(plan), shared, gpus, plan);
  AddInfo(inputs, gpus, plan);
  return plan;
}

std::string PsRoleName(PsRole role) {
  switch (role) {
    case PsRole::kServer:
      return "server";
    case PsRole::kWorker:
      return "worker";
    case PsRole::kHeterWorker:
      return "heter_worker";
  }
  return "";
}

}  // namespace pdlaunch
