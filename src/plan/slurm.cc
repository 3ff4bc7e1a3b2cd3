#include "pdlaunch/plan/slurm.h"

#include <fmt/format.h>

#include <charconv>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

[[noreturn]] void Malformed(std::string_view text, std::string_view why) {
  throw UsageError(fmt::format("malformed Slurm hostlist '{}': {}", text, why));
}

bool AllDigits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// The numbers of one bracket group ("008-011,20"), as strings with their padding.
std::vector<std::string> ExpandGroup(std::string_view group, std::string_view text) {
  std::vector<std::string> out;
  for (const std::string& item : SplitAndStrip(group, ',')) {
    const size_t dash = item.find('-');
    const std::string_view low = std::string_view(item).substr(0, dash);
    if (dash == std::string::npos) {
      if (!AllDigits(low)) Malformed(text, fmt::format("'{}' is not a number", item));
      out.push_back(item);
      continue;
    }
    const std::string_view high = std::string_view(item).substr(dash + 1);
    if (!AllDigits(low) || !AllDigits(high) || low.size() > 9 || high.size() > 9) {
      Malformed(text, fmt::format("'{}' is not a range of numbers", item));
    }
    long a = 0;
    long b = 0;
    std::from_chars(low.data(), low.data() + low.size(), a);
    std::from_chars(high.data(), high.data() + high.size(), b);
    if (a > b) Malformed(text, fmt::format("range '{}' runs backwards", item));
    if (b - a > 100000) Malformed(text, fmt::format("range '{}' is too large", item));
    const size_t width = low.size() > 1 && low.front() == '0' ? low.size() : 0;
    for (long n = a; n <= b; ++n) out.push_back(fmt::format("{:0{}}", n, width));
  }
  if (out.empty()) Malformed(text, "empty brackets");
  return out;
}

// One top-level entry: text and bracket groups, expanded leftmost-slowest.
std::vector<std::string> ExpandEntry(std::string_view entry, std::string_view text) {
  std::vector<std::string> names = {""};
  size_t i = 0;
  while (i < entry.size()) {
    if (entry[i] == ']') Malformed(text, "']' without '['");
    if (entry[i] != '[') {
      const size_t next = std::min(entry.find('[', i), entry.find(']', i));
      const std::string_view literal = entry.substr(i, next - i);
      for (std::string& name : names) name += literal;
      i = next == std::string_view::npos ? entry.size() : next;
      continue;
    }
    const size_t close = entry.find(']', i);
    if (close == std::string_view::npos) Malformed(text, "'[' without ']'");
    const std::string_view group = entry.substr(i + 1, close - i - 1);
    if (group.find('[') != std::string_view::npos) Malformed(text, "nested '['");
    const std::vector<std::string> numbers = ExpandGroup(group, text);
    std::vector<std::string> expanded;
    for (const std::string& name : names) {
      for (const std::string& number : numbers) expanded.push_back(name + number);
    }
    names = std::move(expanded);
    i = close + 1;
  }
  return names;
}

std::optional<std::string> Get(const EnvMap& env, const char* name) {
  const auto it = env.find(name);
  if (it == env.end() || StripSpace(it->second).empty()) return std::nullopt;
  return std::string(StripSpace(it->second));
}

std::optional<int> GetInt(const EnvMap& env, const char* name) {
  const std::optional<std::string> text = Get(env, name);
  int value = 0;
  if (!text) return std::nullopt;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return value;
}

// SLURM_STEP_TASKS_PER_NODE: "1(x2)", "2,1", "1".
int MaxTasksPerNode(const std::string& spec) {
  int most = 0;
  for (const std::string& item : SplitAndStrip(spec, ',')) {
    int tasks = 0;
    std::from_chars(item.data(), item.data() + item.size(), tasks);
    most = std::max(most, tasks);
  }
  return most;
}

}  // namespace

std::vector<std::string> ExpandHostlist(std::string_view text) {
  const std::string_view list = StripSpace(text);
  if (list.empty()) Malformed(text, "empty");
  std::vector<std::string> hosts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']' && --depth < 0) Malformed(text, "']' without '['");
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      const std::string_view entry = StripSpace(list.substr(start, i - start));
      if (entry.empty()) Malformed(text, "an empty entry");
      for (std::string& host : ExpandEntry(entry, text)) hosts.push_back(std::move(host));
      start = i + 1;
    }
  }
  if (depth != 0) Malformed(text, "'[' without ']'");
  return hosts;
}

std::optional<SlurmStep> DetectSlurmStep(const EnvMap& env) {
  const std::optional<std::string> step_id = Get(env, "SLURM_STEP_ID");
  if (!step_id || !AllDigits(*step_id)) return std::nullopt;  // Not inside an srun step.
  SlurmStep step;
  std::optional<std::string> list = Get(env, "SLURM_STEP_NODELIST");
  step.source = "SLURM_STEP_NODELIST";
  if (!list) {
    list = Get(env, "SLURM_JOB_NODELIST");
    step.source = "SLURM_JOB_NODELIST";
  }
  if (!list) return std::nullopt;
  step.nodes = ExpandHostlist(*list);
  if (const std::optional<std::string> tasks = Get(env, "SLURM_STEP_TASKS_PER_NODE");
      tasks && MaxTasksPerNode(*tasks) > 1) {
    throw LaunchError(fmt::format(
        "this Slurm step runs {} tasks on a node (SLURM_STEP_TASKS_PER_NODE={}): run one "
        "launcher per node, srun --ntasks-per-node=1 launch ...; the launcher starts the "
        "processes of its node itself",
        MaxTasksPerNode(*tasks), *tasks));
  }
  if (const std::optional<int> local = GetInt(env, "SLURM_LOCALID"); local && *local > 0) {
    throw LaunchError(fmt::format(
        "this is task {} of its node in the Slurm step (SLURM_LOCALID): run one launcher per "
        "node, srun --ntasks-per-node=1 launch ...",
        *local));
  }
  const std::optional<int> count = GetInt(env, "SLURM_STEP_NUM_NODES")
                                       ? GetInt(env, "SLURM_STEP_NUM_NODES")
                                       : GetInt(env, "SLURM_NNODES");
  if (count && *count != static_cast<int>(step.nodes.size())) {
    throw LaunchError(
        fmt::format("Slurm says {} nodes but {} lists {}", *count, step.source, step.nodes.size()));
  }
  const std::optional<int> rank = GetInt(env, "SLURM_NODEID");
  if (!rank || *rank < 0 || *rank >= static_cast<int>(step.nodes.size())) {
    throw LaunchError(fmt::format("inside a Slurm step, SLURM_NODEID must be 0..{}, not '{}'",
                                  step.nodes.size() - 1,
                                  Get(env, "SLURM_NODEID").value_or("unset")));
  }
  step.node_rank = *rank;
  return step;
}

}  // namespace pdlaunch
