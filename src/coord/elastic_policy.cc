#include "pdlaunch/coord/elastic_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

namespace pdlaunch {
namespace {

std::vector<std::string> LiveIds(const JobState& state) {
  std::vector<std::string> ids;
  for (const ElasticNode& node : state.nodes) ids.push_back(node.id);
  return ids;
}

bool Contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

const ElasticNode* FindNode(const JobState& state, const std::string& id) {
  for (const ElasticNode& node : state.nodes) {
    if (node.id == id) return &node;
  }
  return nullptr;
}

bool AllMembersLive(const JobState& state, const WorldRecord& world) {
  return std::all_of(world.members.begin(), world.members.end(),
                     [&](const std::string& id) { return state.HasNode(id); });
}

bool NoMemberLive(const JobState& state, const WorldRecord& world) {
  return std::none_of(world.members.begin(), world.members.end(),
                      [&](const std::string& id) { return state.HasNode(id); });
}

bool AllMembersDone(const JobState& state, const WorldRecord& world) {
  auto done = state.done.find(world.generation);
  if (done == state.done.end()) return false;
  return std::all_of(world.members.begin(), world.members.end(),
                     [&](const std::string& id) { return done->second.count(id) != 0; });
}

bool AnyoneDone(const JobState& state, const WorldRecord& world) {
  auto done = state.done.find(world.generation);
  return done != state.done.end() && !done->second.empty();
}

std::string FormatNp(const ElasticConfig& config) {
  if (config.np_min == config.np_max) return std::to_string(config.np_max);
  return fmt::format("{}:{}", config.np_min, config.np_max);
}

ElasticStep Wait(std::string status) {
  ElasticStep step;
  step.status = std::move(status);
  return step;
}

// Paddle's line, then how many are missing and, after a world broke, which of its members.
std::string NotReady(const JobState& state, const ElasticConfig& config,
                     const WorldRecord* broken = nullptr) {
  const int registered = static_cast<int>(state.nodes.size());
  const int wanted = registered < config.np_min ? config.np_min : config.np_max;
  std::string line =
      fmt::format("not ready for np {} with hosts {}: {} registered, waiting for {} more",
                  FormatNp(config), FormatHosts(state), registered, wanted - registered);
  if (config.np_min < config.np_max && registered >= config.np_min) {
    line +=
        fmt::format(" (or {} s in all, then starting with {})", config.timeout_seconds, registered);
  }
  std::vector<std::string> gone;
  if (broken) {
    for (size_t i = 0; i < broken->members.size() && i < broken->nodes.size(); ++i) {
      if (!state.HasNode(broken->members[i])) gone.push_back(broken->nodes[i].host);
    }
  }
  if (!gone.empty()) line += fmt::format("; gone: {}", fmt::join(gone, ", "));
  return line;
}

// Generation `generation` with `members` (FormWorld's order) and their current records.
ElasticStep Propose(const JobState& state, const std::vector<std::string>& members,
                    int64_t generation, int restarts) {
  ElasticStep step;
  step.kind = ElasticStep::Kind::kPropose;
  step.world.generation = generation;
  step.world.restarts = restarts;
  step.world.members = members;
  for (const std::string& id : members) step.world.nodes.push_back(FindNode(state, id)->record);
  return step;
}

ElasticStep ProposeNext(const JobState& state, const WorldRecord& world,
                        const ElasticConfig& config, int restarts) {
  const std::optional<std::vector<std::string>> members =
      FormWorld(world.members, LiveIds(state), config.np_min, config.np_max, /*waited=*/true);
  if (!members) return Wait(NotReady(state, config, &world));
  return Propose(state, *members, world.generation + 1, restarts);
}

// Registered nodes that could join `world` now, if it may grow.
bool CanGrow(const JobState& state, const WorldRecord& world, const ElasticConfig& config) {
  if (static_cast<int>(world.members.size()) >= config.np_max || AnyoneDone(state, world)) {
    return false;
  }
  return std::any_of(state.nodes.begin(), state.nodes.end(),
                     [&](const ElasticNode& node) { return !Contains(world.members, node.id); });
}

// The job fails in `world`: `cause` in words, every node exits with `exit_code`.
ElasticStep Fail(const WorldRecord& world, std::string cause, int exit_code) {
  ElasticStep step;
  step.kind = ElasticStep::Kind::kFail;
  step.world = world;
  step.cause = std::move(cause);
  step.exit_code = exit_code;
  return step;
}

std::string HostOf(const WorldRecord& world, const std::string& id) {
  for (size_t i = 0; i < world.members.size() && i < world.nodes.size(); ++i) {
    if (world.members[i] == id) return world.nodes[i].host;
  }
  return id;
}

}  // namespace

std::string FormatHosts(const JobState& state) {
  std::vector<std::string> hosts;
  for (const ElasticNode& node : state.nodes) hosts.push_back(node.record.host);
  return fmt::format("[{}]", fmt::join(hosts, ", "));
}

ElasticStep DecideElasticStep(const JobState& state, const std::string& self,
                              int64_t ran_generation, const ElasticConfig& config, bool waited) {
  const std::optional<WorldRecord>& world = state.world;
  if (!world || NoMemberLive(state, *world)) {
    const std::optional<std::vector<std::string>> members =
        FormWorld({}, LiveIds(state), config.np_min, config.np_max, waited);
    if (!members) return Wait(NotReady(state, config));
    return Propose(state, *members, world ? world->generation + 1 : 1, 0);
  }
  const auto failure = state.failures.find(world->generation);
  const bool failed = failure != state.failures.end();
  const bool healthy = !failed && AllMembersLive(state, *world);
  if (world->generation > ran_generation && healthy && Contains(world->members, self)) {
    ElasticStep step;
    step.kind = ElasticStep::Kind::kRun;
    step.world = *world;
    return step;
  }
  if (AllMembersDone(state, *world)) {
    ElasticStep step;
    step.kind = ElasticStep::Kind::kComplete;
    step.world = *world;
    return step;
  }
  if (failed) {
    if (config.level < 0 || world->restarts >= config.max_restart) {
      const FailureRecord& record = failure->second;
      // -1: the rank's own code on every node; else Paddle's codes for a spent budget.
      const int code = config.level < 0
                           ? (record.signal ? 128 + *record.signal : record.exit_code.value_or(1))
                       : config.elastic_level() ? kExitElasticError
                                                : kExitElasticRestart;
      ElasticStep step = Fail(*world, DescribeFailure(record), code);
      step.failure = record;
      return step;
    }
    return ProposeNext(state, *world, config, world->restarts + 1);
  }
  // --elastic_level -1: a member that left ends the job for the members (no next world).
  if (config.level < 0 && Contains(world->members, self)) {
    const auto gone = std::find_if(world->members.begin(), world->members.end(),
                                   [&](const std::string& id) { return !state.HasNode(id); });
    if (gone != world->members.end()) {
      return Fail(*world, fmt::format("node {} left the job", HostOf(*world, *gone)), 1);
    }
  }
  // This node ran the current world and its ranks were stopped before they finished (a member
  // left, was seen gone, and came back: an etcd lease that expired under load and was renewed),
  // so the world looks healthy again but no node runs it: form the next one rather than wait
  // for done keys that will never come. A node whose ranks finished has its done key.
  const auto done = state.done.find(world->generation);
  const bool self_done = done != state.done.end() && done->second.count(self) != 0;
  if (world->generation == ran_generation && Contains(world->members, self) && !self_done) {
    if (config.level < 0) {  // Any stop of a running world ends the job.
      return Fail(*world,
                  fmt::format("the world of generation {} was stopped (a node left or joined)",
                              world->generation),
                  1);
    }
    return ProposeNext(state, *world, config, world->restarts);
  }
  if (!healthy || CanGrow(state, *world, config)) {
    return ProposeNext(state, *world, config, world->restarts);
  }
  if (!Contains(world->members, self)) {
    return Wait(fmt::format("the job runs with {} nodes (np {}); waiting as a spare",
                            world->members.size(), FormatNp(config)));
  }
  return Wait("waiting for the other nodes to finish");
}

std::optional<std::string> ReasonToStop(const JobState& state, const WorldRecord& running,
                                        const ElasticConfig& config) {
  if (state.world && state.world->generation != running.generation) {
    return fmt::format("the job formed a new world (generation {})", state.world->generation);
  }
  if (auto failure = state.failures.find(running.generation); failure != state.failures.end()) {
    return DescribeFailure(failure->second);
  }
  for (const std::string& id : running.members) {
    if (!state.HasNode(id)) return fmt::format("node {} left the job", HostOf(running, id));
  }
  if (config.elastic_level() && CanGrow(state, running, config)) {
    for (const ElasticNode& node : state.nodes) {
      if (!Contains(running.members, node.id)) {
        return fmt::format("node {} joined the job", node.record.host);
      }
    }
  }
  return std::nullopt;
}

}  // namespace pdlaunch
