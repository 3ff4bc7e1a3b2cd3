// A trial's outcome: what each node saw, merged; the metric and out-of-memory read from the
// logs; the best trial and the ranked table.

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "pdlaunch/base/endpoint.h"  // SplitAndStrip
#include "pdlaunch/base/errors.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "tuner/common.h"

namespace pdlaunch {

using tuner::Fmt;
using tuner::Json;

std::string EncodeNodeOutcome(const NodeOutcome& n) {
  const auto number = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  return Json{{"rank0", n.rank0},
              {"metric", number(n.metric)},
              {"memory_mib", number(n.memory_mib)},
              {"oom", n.oom},
              {"timed_out", n.timed_out},
              {"exit_code", n.exit_code},
              {"exec_time", n.exec_time},
              {"search_seconds", n.search_seconds},
              {"step_time", number(n.step_time)},
              {"skipped", n.skipped}}
      .dump();
}

std::optional<NodeOutcome> DecodeNodeOutcome(const std::string& text) {
  if (text.size() > 4096) return std::nullopt;
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto finite = [](const Json& v) {
    return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0;
  };
  const auto optional_number = [&](const char* key, std::optional<double>& out) {
    if (!j.contains(key)) return false;
    if (j[key].is_null()) return true;
    if (!finite(j[key])) return false;
    out = j[key].get<double>();
    return true;
  };
  const auto boolean = [&](const char* key, bool& out) {
    if (!j.contains(key) || !j[key].is_boolean()) return false;
    out = j[key].get<bool>();
    return true;
  };
  const auto seconds = [&](const char* key, double& out) {
    if (!j.contains(key) || !finite(j[key])) return false;
    out = j[key].get<double>();
    return true;
  };
  NodeOutcome n;
  if (!boolean("rank0", n.rank0) || !optional_number("metric", n.metric) ||
      !optional_number("memory_mib", n.memory_mib) || !boolean("oom", n.oom) ||
      !boolean("timed_out", n.timed_out) || !seconds("exec_time", n.exec_time) ||
      !seconds("search_seconds", n.search_seconds) || !j.contains("exit_code") ||
      !j["exit_code"].is_number_integer() || j["exit_code"].get<long>() < 0 ||
      j["exit_code"].get<long>() > 255 ||
      (j.contains("step_time") && !optional_number("step_time", n.step_time)) ||
      (j.contains("skipped") && !boolean("skipped", n.skipped))) {
    return std::nullopt;
  }
  n.exit_code = static_cast<int>(j["exit_code"].get<long>());
  return n;
}

NodeOutcome MergeNodeOutcomes(const std::vector<NodeOutcome>& nodes) {
  const auto rank0 = std::count_if(nodes.begin(), nodes.end(),
                                   [](const NodeOutcome& n) { return n.rank0 && !n.skipped; });
  if (rank0 > 1) {
    throw LaunchError(fmt::format(
        "auto tuner: {} of the {} nodes' outcomes say they ran rank 0, which one node runs: a "
        "record that no node of this search wrote (docs/master.md, \"Exposure\")",
        rank0, nodes.size()));
  }
  NodeOutcome merged;
  for (const NodeOutcome& n : nodes) {
    merged.search_seconds = std::max(merged.search_seconds, n.search_seconds);
    if (n.skipped) continue;  // Not among the nodes of a dp_estimation replica.
    merged.oom = merged.oom || n.oom;
    merged.timed_out = merged.timed_out || n.timed_out;
    if (merged.exit_code == 0 && !n.timed_out) merged.exit_code = n.exit_code;
    if (n.rank0) {
      merged.rank0 = true;
      merged.metric = n.metric;
      merged.step_time = n.step_time;
    }
    if (n.memory_mib) merged.memory_mib = std::max(merged.memory_mib.value_or(0), *n.memory_mib);
    merged.exec_time = std::max(merged.exec_time, n.exec_time);
    merged.search_seconds = std::max(merged.search_seconds, n.search_seconds);
  }
  return merged;
}

void ClassifyOutcome(const NodeOutcome& n, TrialOutcome& o) {
  o.metric = n.metric;
  o.memory_mib = n.memory_mib;
  o.oom = n.oom;
  o.timed_out = n.timed_out;
  o.exec_time = n.exec_time;
  o.error.clear();
  if (o.oom) {
    o.error = "Out of memory";
    o.metric.reset();
  } else if (o.timed_out && !o.metric) {
    o.error = "timeout";
  } else if (n.exit_code != 0 && !o.timed_out) {
    o.error = fmt::format("exit code {}", n.exit_code);
    o.metric.reset();
  }
}

std::string TimeLeft(size_t trials_ahead, double seconds_per_trial) {
  if (trials_ahead == 0) return {};
  const double seconds = static_cast<double>(trials_ahead) * std::max(0.0, seconds_per_trial);
  if (seconds < 1) return "under 1 s left";
  const auto total = static_cast<long>(std::lround(seconds));
  if (total < 60) return fmt::format("about {} s left", total);
  if (total < 3600) return fmt::format("about {} min {} s left", total / 60, total % 60);
  return fmt::format("about {} h {} min left", total / 3600, total % 3600 / 60);
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The first match in `line` of Paddle's regex `name:* *(\d+(\.\d*)?)|(\d+(\.\d*)?) *name`, the
// leftmost as re.search finds it (the first alternative where both start at one place), in one
// pass over the name's occurrences: no recursive matcher on log text (std::regex overflowed the
// stack on a line of 30 000 digits). A name that begins with a digit is not backtracked into.
std::optional<std::string> FirstMetricNumber(std::string_view line, std::string_view name) {
  std::optional<size_t> best_start;
  std::string_view best;
  const auto offer = [&](size_t start, std::string_view number) {
    if (!best_start || start < *best_start) {
      best_start = start;
      best = number;
    }
  };
  // \d+(\.\d*)? from `at`; its length, 0 for none.
  const auto number_at = [&](size_t at) {
    size_t end = at;
    while (end < line.size() && IsDigit(line[end])) ++end;
    if (end == at) return size_t{0};
    if (end < line.size() && line[end] == '.') {
      ++end;
      while (end < line.size() && IsDigit(line[end])) ++end;
    }
    return end - at;
  };
  for (size_t j = line.find(name); j != std::string_view::npos && !name.empty();
       j = line.find(name, j + 1)) {
    if (best_start && j > *best_start) break;  // Every later candidate starts later.
    // name:* *number
    size_t at = j + name.size();
    while (at < line.size() && line[at] == ':') ++at;
    while (at < line.size() && line[at] == ' ') ++at;
    if (const size_t length = number_at(at)) offer(j, line.substr(at, length));
    // number *name: the digits that end where the spaces before the name begin.
    size_t end = j;
    while (end > 0 && line[end - 1] == ' ') --end;
    size_t start = end;
    while (start > 0 && IsDigit(line[start - 1])) --start;
    if (start > 0 && line[start - 1] == '.') {  // A fraction: its integer digits before it.
      size_t integer = start - 1;
      while (integer > 0 && IsDigit(line[integer - 1])) --integer;
      if (integer < start - 1) start = integer;
    }
    if (start < end && IsDigit(line[start])) offer(start, line.substr(start, number_at(start)));
  }
  if (!best_start) return std::nullopt;
  return std::string(best);
}

}  // namespace

std::optional<double> ReadMetric(const std::string& log, const std::string& name) {
  std::vector<double> values;
  size_t begin = 0;
  while (begin < log.size()) {
    size_t end = log.find('\n', begin);
    if (end == std::string::npos) end = log.size();
    const std::string_view line = std::string_view(log).substr(begin, end - begin);
    begin = end + 1;
    if (line.size() > 64 * 1024) continue;
    const std::optional<std::string> number = FirstMetricNumber(line, name);
    if (!number) continue;
    // A number too long for a double (30 000 digits) is no metric.
    errno = 0;
    char* stop = nullptr;
    const double value = std::strtod(number->c_str(), &stop);
    if (errno == ERANGE || !std::isfinite(value)) continue;
    values.push_back(value);
  }
  if (values.empty()) return std::nullopt;
  double value = values.back();
  if (values.size() >= 10) {
    const size_t from = values.size() < 20 ? 9 : values.size() - 10;
    double sum = 0;
    for (size_t i = from; i < values.size(); ++i) sum += values[i];
    value = sum / static_cast<double>(values.size() - from);
  }
  return std::round(value * 1e5) / 1e5;
}

bool HasOutOfMemory(const std::string& log) {
  return log.find("Out of memory error on") != std::string::npos;
}

std::optional<size_t> BestTrial(const std::vector<TrialOutcome>& history,
                                const TunerConfig& config) {
  std::vector<size_t> order;
  for (size_t i = 0; i < history.size(); ++i) {
    if (history[i].metric && !history[i].oom && !history[i].pruned) order.push_back(i);
  }
  if (order.empty()) return std::nullopt;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return config.maximize ? *history[a].metric > *history[b].metric
                           : *history[a].metric < *history[b].metric;
  });
  if (!config.buffer || !config.max_mem_usage) return order.front();
  std::optional<size_t> least;
  for (size_t i : order) {
    const auto& mem = history[i].memory_mib;
    if (!mem) continue;
    if (*mem < *config.max_mem_usage - *config.buffer) return i;
    if (!least || *mem < *history[*least].memory_mib) least = i;
  }
  return least ? least : std::optional<size_t>(order.front());
}

std::vector<size_t> RankedTrials(const std::vector<TrialOutcome>& history,
                                 const TunerConfig& config) {
  std::vector<size_t> order;
  for (size_t i = 0; i < history.size(); ++i) {
    if (history[i].metric && !history[i].oom && !history[i].pruned) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return config.maximize ? *history[a].metric > *history[b].metric
                           : *history[a].metric < *history[b].metric;
  });
  // The table's first line is the layout the tuner runs: one rule for both.
  if (const std::optional<size_t> best = BestTrial(history, config)) {
    const auto at = std::find(order.begin(), order.end(), *best);
    if (at != order.end()) std::rotate(order.begin(), at, at + 1);
  }
  return order;
}

std::string RankedLine(size_t place, const TrialOutcome& trial, const TunerConfig& config) {
  std::string memory;
  if (trial.memory_mib) {
    memory = fmt::format("  {} MiB", Fmt(*trial.memory_mib));
    if (config.buffer && config.max_mem_usage &&
        *trial.memory_mib >= *config.max_mem_usage - *config.buffer) {
      memory += fmt::format(" (over max_mem_usage {} - buffer {})", Fmt(*config.max_mem_usage),
                            Fmt(*config.buffer));
    }
  }
  return fmt::format("  {}. {}  {}{}  (Job{})", place, Describe(trial.cfg),
                     trial.metric ? Fmt(*trial.metric) : std::string("-"), memory, trial.job_id);
}

}  // namespace pdlaunch
