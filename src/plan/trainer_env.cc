#include "pdlaunch/plan/trainer_env.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string_view>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {

namespace {

std::string_view NameOf(std::string_view entry) { return entry.substr(0, entry.find('=')); }

// Never passed to a process: the proxies (Paddle drops them), and the job token, which is the
// launchers' alone (docs/master.md, "Exposure"): a rank has no use for it, and its environment is
// written to envlog.N and the pod log.
bool IsWithheldVariable(std::string_view name) {
  return name == "http_proxy" || name == "https_proxy" || name == "HTTP_PROXY" ||
         name == "HTTPS_PROXY" || name == "PDLAUNCH_JOB_TOKEN";
}

// PyTorch's names (env:// init): the same master as Paddle's PADDLE_MASTER. Appended in place:
// these lists are built for every process, and an initializer list copies each string twice.
void AppendTorchVariables(EnvList& vars, const Cluster& cluster, const Trainer& trainer,
                          const WorldValues& world) {
  vars.emplace_back("RANK", std::to_string(trainer.global_rank));
  vars.emplace_back("WORLD_SIZE", world.world_size);
  vars.emplace_back("LOCAL_RANK", std::to_string(trainer.local_rank));
  vars.emplace_back("LOCAL_WORLD_SIZE", world.local_size);
  vars.emplace_back("MASTER_ADDR", cluster.master.host);
  vars.emplace_back("MASTER_PORT", std::to_string(cluster.master.port));
}

}  // namespace

WorldValues::WorldValues(const Cluster& cluster)
    : trainer_endpoints(JoinEndpoints(cluster.world_endpoints())),
      world_device_ids(cluster.world_device_ids()),
      world_size(std::to_string(cluster.world_size())),
      local_size(std::to_string(cluster.local_pod().trainers.size())),
      nnodes(std::to_string(cluster.pods.size())),
      master(cluster.master.ToString()) {}

EnvList TrainerTable(const Cluster& cluster, const Trainer& trainer) {
  return TrainerTable(cluster, trainer, WorldValues(cluster));
}

EnvList TrainerTable(const Cluster& cluster, const Trainer& trainer, const WorldValues& world) {
  const std::string ids = fmt::format("{}", fmt::join(trainer.devices, ","));
  EnvList table;
  table.reserve(32);  // Room for TrainerVariables' additions as well.
  table.emplace_back("PADDLE_TRAINER_ID", std::to_string(trainer.global_rank));
  table.emplace_back("PADDLE_CURRENT_ENDPOINT", trainer.endpoint.ToString());
  table.emplace_back("PADDLE_TRAINERS_NUM", world.world_size);
  table.emplace_back("PADDLE_TRAINER_ENDPOINTS", world.trainer_endpoints);
  table.emplace_back("PADDLE_RANK_IN_NODE", std::to_string(trainer.local_rank));
  table.emplace_back("PADDLE_LOCAL_DEVICE_IDS", ids);
  table.emplace_back("PADDLE_WORLD_DEVICE_IDS", world.world_device_ids);
  if (!ids.empty() && cluster.mode != DeviceMode::kCpu) {
    table.emplace_back(cluster.family.selected_key, ids);
    for (const auto& [name, value] : cluster.family.env) {
      // PADDLE_DISTRI_BACKEND is cluster.backend, set by TrainerVariables.
      if (name != "PADDLE_DISTRI_BACKEND") table.emplace_back(name, value);
    }
  }
  if (!ids.empty()) table.emplace_back("FLAGS_selected_accelerators", ids);
  return table;
}

EnvList TrainerVariables(const Cluster& cluster, const Trainer& trainer, const JobEnv& job) {
  return TrainerVariables(cluster, trainer, job, WorldValues(cluster));
}

EnvList TrainerVariables(const Cluster& cluster, const Trainer& trainer, const JobEnv& job,
                         const WorldValues& world) {
  EnvList vars = TrainerTable(cluster, trainer, world);
  vars.emplace_back("PADDLE_WITH_GLOO", job.with_gloo);
  vars.emplace_back("PADDLE_GLOO_RENDEZVOUS", "3");
  vars.emplace_back("PADDLE_GLOO_FS_PATH", job.gloo_fs_path);
  vars.emplace_back("PADDLE_DISTRI_BACKEND", cluster.backend);
  vars.emplace_back("PADDLE_GLOBAL_RANK", std::to_string(trainer.global_rank));
  vars.emplace_back("PADDLE_LOCAL_RANK", std::to_string(trainer.local_rank));
  vars.emplace_back("PADDLE_GLOBAL_SIZE", world.world_size);
  vars.emplace_back("PADDLE_LOCAL_SIZE", world.local_size);
  vars.emplace_back("PADDLE_NNODES", world.nnodes);
  vars.emplace_back("PADDLE_MASTER", world.master);
  vars.emplace_back("PADDLE_LOG_DIR", job.log_dir);
  AppendTorchVariables(vars, cluster, trainer, world);
  vars.emplace_back("PYTHONUNBUFFERED", "1");
  return vars;
}

EnvList MasterTrainerVariables(const Cluster& cluster, const Trainer& trainer,
                               const MasterJobEnv& job) {
  return MasterTrainerVariables(cluster, trainer, job, WorldValues(cluster));
}

EnvList MasterTrainerVariables(const Cluster& cluster, const Trainer& trainer,
                               const MasterJobEnv& job, const WorldValues& world) {
  const std::string global_rank = std::to_string(trainer.global_rank);
  const std::string local_rank = std::to_string(trainer.local_rank);
  EnvList vars = {
      {"PADDLE_MASTER", world.master},
      {"PADDLE_GLOBAL_SIZE", world.world_size},
      {"PADDLE_LOCAL_SIZE", world.local_size},
      {"PADDLE_GLOBAL_RANK", global_rank},
      {"PADDLE_LOCAL_RANK", local_rank},
      {"PADDLE_NNODES", world.nnodes},
      {"PADDLE_CURRENT_ENDPOINT", trainer.endpoint.ToString()},
      {"PADDLE_TRAINER_ID", global_rank},
      {"PADDLE_TRAINERS_NUM", world.world_size},
      {"PADDLE_RANK_IN_NODE", local_rank},
  };
  if (job.auto_cluster) vars.emplace_back("PADDLE_AUTO_CLUSTER", *job.auto_cluster);
  vars.emplace_back("PADDLE_TRAINER_ENDPOINTS", world.trainer_endpoints);
  if (!trainer.devices.empty()) {
    for (const auto& [name, value] : cluster.family.env) vars.emplace_back(name, value);
    vars.emplace_back(cluster.family.selected_key,
                      fmt::format("{}", fmt::join(trainer.devices, ",")));
  } else {
    vars.emplace_back("PADDLE_DISTRI_BACKEND", "gloo");
  }
  vars.emplace_back("POD_NAME", job.pod_name);
  vars.emplace_back("PADDLE_LOG_DIR", job.log_dir);
  AppendTorchVariables(vars, cluster, trainer, world);
  return vars;
}

EnvList RpcVariables(const Cluster& cluster, const Trainer& trainer, const MasterJobEnv& job) {
  return {{"PADDLE_MASTER_ENDPOINT", cluster.master.ToString()},
          {"PADDLE_SERVER_ENDPOINT", trainer.endpoint.ToString()},
          {"PADDLE_TRAINER_ID", std::to_string(trainer.global_rank)},
          {"PADDLE_TRAINERS_NUM", std::to_string(cluster.world_size())},
          {"POD_NAME", job.pod_name},
          {"PADDLE_LOG_DIR", job.log_dir}};
}

std::vector<std::string> WithProxyBackups(std::vector<std::string> parent) {
  const auto has = [&parent](std::string_view name) {
    return std::any_of(parent.begin(), parent.end(),
                       [name](const std::string& entry) { return NameOf(entry) == name; });
  };
  std::vector<std::string> backups;
  for (const std::string& entry : parent) {
    const std::string_view name = NameOf(entry);
    if (name != "http_proxy" && name != "https_proxy") continue;
    const std::string backup = std::string(name) + "_original";
    if (!has(backup)) backups.push_back(backup + entry.substr(name.size()));
  }
  parent.insert(parent.end(), backups.begin(), backups.end());
  return parent;
}

std::vector<std::string> ComposeEnvironment(const std::vector<std::string>& parent,
                                            const EnvList& vars) {
  // Called once per process with a few dozen entries on each side: linear scans over
  // string_views, no maps, one allocation per entry (this was 30 us per process with std::map).
  const auto last_setting = [&vars](std::string_view name) -> const std::string* {
    for (auto it = vars.rbegin(); it != vars.rend(); ++it) {
      if (it->first == name) return &it->second;  // The last setting wins.
    }
    return nullptr;
  };
  std::vector<std::string_view> placed;  // The names of `vars` already in the result.
  placed.reserve(vars.size());
  const auto is_placed = [&placed](std::string_view name) {
    return std::find(placed.begin(), placed.end(), name) != placed.end();
  };
  const auto entry_of = [](std::string_view name, const std::string& value) {
    std::string entry;
    entry.reserve(name.size() + 1 + value.size());
    entry.append(name).append(1, '=').append(value);
    return entry;
  };
  std::vector<std::string> env;
  env.reserve(parent.size() + vars.size());
  for (const std::string& entry : parent) {
    const std::string_view name = NameOf(entry);
    if (IsWithheldVariable(name) || is_placed(name)) continue;
    if (const std::string* value = last_setting(name)) {
      env.push_back(entry_of(name, *value));
      placed.push_back(name);
    } else {
      env.push_back(entry);
    }
  }
  for (const auto& [name, value] : vars) {
    if (is_placed(name)) continue;
    placed.push_back(name);
    env.push_back(entry_of(name, *last_setting(name)));
  }
  return env;
}

SplitEnvironments ComposeEnvironments(const std::vector<std::string>& parent,
                                      const std::vector<EnvList>& vars) {
  std::vector<const EnvList*> lists;
  lists.reserve(vars.size());
  for (const EnvList& list : vars) lists.push_back(&list);
  return ComposeEnvironments(parent, lists);
}

SplitEnvironments ComposeEnvironments(const std::vector<std::string>& parent,
                                      const std::vector<const EnvList*>& vars) {
  // The processes of a job usually set the same names in the same order (one rank differs from
  // the next in values only): what is worked out for the first list serves every list like it.
  const EnvList* first = vars.empty() ? nullptr : vars.front();
  const auto same_names = [first](const EnvList& list) {
    if (list.size() != first->size()) return false;
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].first != (*first)[i].first) return false;
    }
    return true;
  };
  // The names any process sets, sorted for binary search.
  std::vector<std::string_view> set_names;
  for (const EnvList* list : vars) {
    if (list != first && same_names(*list)) continue;
    for (const auto& entry : *list) set_names.push_back(entry.first);
  }
  std::sort(set_names.begin(), set_names.end());
  set_names.erase(std::unique(set_names.begin(), set_names.end()), set_names.end());
  auto common = std::make_shared<std::vector<std::string>>();
  common->reserve(parent.size());
  bool parent_has_a_set_name = false;
  for (const std::string& entry : parent) {
    const std::string_view name = NameOf(entry);
    if (IsWithheldVariable(name)) continue;
    if (std::binary_search(set_names.begin(), set_names.end(), name)) {
      parent_has_a_set_name = true;
      break;
    }
    common->push_back(entry);
  }
  SplitEnvironments split;
  split.own.reserve(vars.size());
  if (parent_has_a_set_name) {
    // The parent already has some of the names (a launcher inside a rank inherits PADDLE_*):
    // ComposeEnvironment replaces those in place, which a common prefix cannot express. The
    // whole environment per process then, in exactly ComposeEnvironment's order.
    for (const EnvList* list : vars) split.own.push_back(ComposeEnvironment(parent, *list));
    split.common = std::make_shared<std::vector<std::string>>();
    return split;
  }
  // Otherwise (the usual case) a process's own part, ComposeEnvironment({}, list), is `list` in
  // the order of first settings with each name's last value: for the first list, which
  // positions those are (n^2 name comparisons, once), then copied for each list like it.
  std::vector<std::pair<size_t, size_t>> picks;  // (first setting, last setting) of each name
  if (first != nullptr) {
    for (size_t i = 0; i < first->size(); ++i) {
      const std::string& name = (*first)[i].first;
      bool seen = false;
      for (const auto& pick : picks) seen |= (*first)[pick.first].first == name;
      if (seen) continue;
      size_t last = i;
      for (size_t j = i + 1; j < first->size(); ++j) {
        if ((*first)[j].first == name) last = j;
      }
      picks.emplace_back(i, last);
    }
  }
  for (const EnvList* list : vars) {
    if (!same_names(*list)) {
      split.own.push_back(ComposeEnvironment({}, *list));
      continue;
    }
    std::vector<std::string> own;
    own.reserve(picks.size());
    for (const auto& [at, value_at] : picks) {
      const std::string& name = (*list)[at].first;
      const std::string& value = (*list)[value_at].second;
      std::string entry;
      entry.reserve(name.size() + 1 + value.size());
      entry.append(name).append(1, '=').append(value);
      own.push_back(std::move(entry));
    }
    split.own.push_back(std::move(own));
  }
  split.common = std::move(common);
  return split;
}

void CheckEnvironmentSizes(const std::vector<std::string>& env) {
  for (const std::string& entry : env) {
    if (entry.size() + 1 <= kMaxEnvEntryBytes) continue;
    const size_t equals = std::min(entry.find('='), entry.size());
    const std::string_view name = std::string_view(entry).substr(0, equals);
    const std::string_view value =
        std::string_view(entry).substr(std::min(equals + 1, entry.size()));
    const size_t entries = static_cast<size_t>(std::count(value.begin(), value.end(), ',')) + 1;
    std::string list;
    if (entries > 1) {
      const size_t per_entry = (value.size() + entries - 1) / entries;
      const size_t fit = (kMaxEnvEntryBytes - 1 - name.size() - 1) / per_entry;
      list = fmt::format(" for a list of {} entries, which passes the bound at about {}", entries,
                         fit + 1);
    }
    throw LaunchError(fmt::format(
        "{} would be {} bytes{}; Linux takes at most {} bytes for one environment variable "
        "(MAX_ARG_STRLEN), so no process could start (Paddle's launcher sets the same variable "
        "and its ranks fail with 'Argument list too long'); run fewer ranks in one job "
        "(docs/env.md, \"Size\")",
        OneLine(name), entry.size(), list, kMaxEnvEntryBytes - 1));
  }
}

}  // namespace pdlaunch
