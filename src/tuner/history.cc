// The history CSV (Paddle's columns), dp_estimation's conversion of a replica's metric, and
// reading a history back to resume.

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "pdlaunch/base/endpoint.h"  // SplitAndStrip
#include "pdlaunch/tuner/auto_tuner.h"
#include "tuner/common.h"

namespace pdlaunch {

using tuner::Fmt;
using tuner::PyBool;
using tuner::PyStr;
using tuner::RoundLikePython;

std::vector<std::string> ConversionColumns(const TunerConfig& config) {
  std::vector<std::string> out;
  if (!config.conversion) return out;
  out.push_back("unified_" + config.metric_name);
  for (const std::string& bw : config.conversion->comm_bw_names) {
    out.push_back(fmt::format("bw_{}_{}", bw, config.metric_name));
    out.push_back(fmt::format("unified_bw_{}_{}", bw, config.metric_name));
  }
  if (!config.sharding_overlap.empty() && config.estimated_num_gpus) {
    for (const std::string& bw : config.conversion->comm_bw_names) {
      out.push_back(fmt::format("overlap_bw_{}_{}", bw, config.metric_name));
    }
  }
  return out;
}

void ConvertOutcome(TrialOutcome& trial, const TunerConfig& config,
                    const std::optional<double>& step_time) {
  trial.converted.clear();
  if (!config.conversion || trial.cfg.sharding_overlap) return;  // As main.py: not the widened.
  const TunerConfig::Conversion& conv = *config.conversion;
  const std::vector<std::string> names = ConversionColumns(config);
  const double devices =
      static_cast<double>(trial.cfg.trial_gpus ? trial.cfg.trial_gpus : config.num_gpus);
  // Python's truthiness: a metric or step time of 0 converts to None, as in Paddle.
  const auto unify = [&](const std::optional<double>& v) -> std::optional<double> {
    if (!v || *v == 0 || !conv.need_unify) return v;
    return RoundLikePython(*v / devices, 2);
  };
  const std::optional<double> metric = trial.metric;
  trial.converted.emplace_back(names[0], unify(metric));
  for (size_t k = 0; k < conv.comm_bw.size(); ++k) {
    const double comm_time =
        static_cast<double>(conv.model_size_b) * (conv.amp ? 6.0 : 4.0) / conv.comm_bw[k];
    std::optional<double> multi;
    if (metric && *metric != 0 && step_time && *step_time != 0) {
      multi = RoundLikePython(*step_time / (*step_time + comm_time) * *metric, 5);
    }
    trial.converted.emplace_back(names[1 + 2 * k], multi);
    trial.converted.emplace_back(names[2 + 2 * k], unify(multi));
  }
}

namespace {

// dp_estimation's columns after global_batch_size: the cluster's dp degree, the trial's devices
// and nodes (Paddle's estimated_dp_degree, num_gpus and nodes keys).
// With sharding_overlap, a fourth: sharding_overlap (True, False, or empty for a replica).
std::vector<std::string> EstimationColumns(const TunerConfig& config) {
  if (!config.estimated_num_gpus) return {};
  std::vector<std::string> names = {"estimated_dp_degree", "num_gpus", "nodes"};
  if (!config.sharding_overlap.empty()) names.push_back("sharding_overlap");
  return names;
}

std::string CsvHeader(const TunerConfig& config) {
  std::string custom_columns;
  for (const TunerConfig::CustomDim& dim : config.custom_dims) custom_columns += dim.key + ",";
  for (const std::string& op : config.refined_recompute) custom_columns += op + ",";
  std::string estimation;
  for (const std::string& name : EstimationColumns(config)) estimation += name + ",";
  std::string converted;
  for (const std::string& name : ConversionColumns(config)) converted += name + ",";
  return fmt::format(
      "job_id,mp_degree,sharding_degree,pp_degree,dp_degree,sharding_stage,micro_batch_size,"
      "vpp_degree,use_recompute,recompute_granularity,{}acc_steps,global_batch_size,{}exec_time,"
      "{},{}max_mem_usage,error_info\n",
      custom_columns, estimation, config.metric_name, converted);
}

std::string CsvRow(const TrialOutcome& h, const TunerConfig& config) {
  const TrialConfig& c = h.cfg;
  std::string custom_values;
  for (const auto& [key, value] : c.custom) custom_values += PyStr(value) + ",";
  for (const auto& [op, value] : c.refined) custom_values += std::to_string(value) + ",";
  std::string estimation =
      config.estimated_num_gpus
          ? fmt::format("{},{},{},", c.estimated_dp ? std::to_string(c.estimated_dp) : "",
                        c.trial_gpus, c.trial_nodes)
          : "";
  if (config.estimated_num_gpus && !config.sharding_overlap.empty()) {
    estimation += (c.sharding_overlap ? PyBool(c.sharding_overlap) : "") + ",";
  }
  // As many cells as the header has, whether or not the trial was converted.
  std::string converted;
  const size_t columns = ConversionColumns(config).size();
  for (size_t k = 0; k < columns; ++k) {
    const std::optional<double> value =
        k < h.converted.size() ? h.converted[k].second : std::nullopt;
    converted += (value ? Fmt(*value) : "") + ",";
  }
  return fmt::format(
      "{},{},{},{},{},{},{},{},{},{},{}{},{},{}{},{},{}{},{}\n", h.job_id, c.mp, c.sharding_degree,
      c.pp, c.dp, c.sharding_stage, c.mbs, c.vpp, c.use_recompute ? PyBool(c.use_recompute) : "",
      c.recompute_granularity.value_or(""), custom_values, c.acc_steps, c.global_batch_size,
      estimation, Fmt(h.exec_time), h.metric ? Fmt(*h.metric) : "", converted,
      h.oom          ? "OOM"
      : h.memory_mib ? Fmt(*h.memory_mib)
                     : "",
      h.error.empty() ? "" : fmt::format("['{}']", h.error));
}

}  // namespace

std::string HistoryCsv(const std::vector<TrialOutcome>& history, const TunerConfig& config) {
  std::string out = CsvHeader(config);
  for (const TrialOutcome& h : history) {
    if (!h.pruned) out += CsvRow(h, config);
  }
  return out;
}

void AddOverlapPerformance(std::vector<TrialOutcome>& history, const TunerConfig& config) {
  if (history.empty() || !config.conversion) return;
  const TrialOutcome& overlap = history.back();
  if (!overlap.cfg.sharding_overlap || !*overlap.cfg.sharding_overlap || !overlap.metric) return;
  // The same layout (dp, mp, pp, vpp, mbs, recompute, stage): the replica, and the widened run
  // without overlap of the same sharding.
  const auto same = [&](const TrialConfig& c) {
    return c.dp == overlap.cfg.dp && c.mp == overlap.cfg.mp && c.pp == overlap.cfg.pp &&
           c.vpp == overlap.cfg.vpp && c.mbs == overlap.cfg.mbs &&
           c.use_recompute == overlap.cfg.use_recompute &&
           c.recompute_granularity == overlap.cfg.recompute_granularity &&
           c.sharding_stage == overlap.cfg.sharding_stage && c.custom == overlap.cfg.custom &&
           c.refined == overlap.cfg.refined;
  };
  TrialOutcome* replica = nullptr;
  const TrialOutcome* without = nullptr;
  for (TrialOutcome& h : history) {
    if (h.pruned || !same(h.cfg)) continue;
    if (!h.cfg.sharding_overlap) replica = &h;
    if (h.cfg.sharding_overlap && !*h.cfg.sharding_overlap &&
        h.cfg.sharding_degree == overlap.cfg.sharding_degree) {
      without = &h;
    }
  }
  if (!replica || !without || !replica->metric || !without->metric || *without->metric == 0) {
    return;
  }
  const double ratio = (*overlap.metric - *without->metric) / *without->metric;
  const std::vector<std::string> names = ConversionColumns(config);
  replica->converted.resize(names.size());
  const size_t bws = config.conversion->comm_bw.size();
  for (size_t k = 0; k < bws; ++k) {
    const std::optional<double>& bw = replica->converted[1 + 2 * k].second;
    replica->converted[1 + 2 * bws + k] = {
        names[1 + 2 * bws + k],
        bw ? std::optional<double>(RoundLikePython(*bw * (1 + ratio), 5)) : std::nullopt};
  }
}

std::string EnhancedHistoryCsv(const std::vector<TrialOutcome>& history,
                               const TunerConfig& config) {
  if (!config.conversion) return "";
  std::vector<const TrialOutcome*> rows;
  for (const TrialOutcome& h : history) {
    if (!h.pruned && h.error.empty() && !h.oom && h.metric && !h.cfg.sharding_overlap) {
      rows.push_back(&h);
    }
  }
  // The first comm_bw's unified value (recorder.py's additional_metric_key), highest first.
  const auto key = [](const TrialOutcome* h) {
    return h->converted.size() > 2 && h->converted[2].second ? *h->converted[2].second : -HUGE_VAL;
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const TrialOutcome* a, const TrialOutcome* b) { return key(a) > key(b); });
  std::string out = CsvHeader(config);
  for (const TrialOutcome* h : rows) out += CsvRow(*h, config);
  return out;
}

namespace {

// A number of the history as resume reads it: `nan` or `inf` (a hand-edited file, or a stranger's)
// would rank an out-of-memory layout the best; such a row is not history (the trial runs again).
double FiniteNumber(const std::string& text) {
  const double value = std::stod(text);
  if (!std::isfinite(value)) throw std::invalid_argument("not a finite number: " + text);
  return value;
}

/// The columns a history of `config` has beyond Paddle's fixed ones: the custom dimensions'
/// and refined_recompute's after recompute_granularity, dp_estimation's after
/// global_batch_size, the conversion's after the metric.
struct HistoryColumns {
  explicit HistoryColumns(const TunerConfig& config)
      : custom(config.custom_dims.size()),
        n(custom + config.refined_recompute.size()),
        estimation(EstimationColumns(config)),
        conversion(ConversionColumns(config)),
        est(estimation.size()),
        conv(conversion.size()) {}
  size_t custom;
  size_t n;
  std::vector<std::string> estimation;
  std::vector<std::string> conversion;
  size_t est;
  size_t conv;
};

/// The header a history of `config` writes, column for column.
bool HeaderMatches(const std::vector<std::string>& header, const TunerConfig& config,
                   const HistoryColumns& c) {
  if (header.size() != 16 + c.n + c.est + c.conv ||
      header[13 + c.n + c.est] != config.metric_name) {
    return false;
  }
  for (size_t k = 0; k < c.conv; ++k) {
    if (header[14 + c.n + c.est + k] != c.conversion[k]) return false;
  }
  for (size_t k = 0; k < c.est; ++k) {
    if (header[12 + c.n + k] != c.estimation[k]) return false;
  }
  for (size_t k = 0; k < c.n; ++k) {
    const std::string& name =
        k < c.custom ? config.custom_dims[k].key : config.refined_recompute[k - c.custom];
    if (header[10 + k] != name) return false;
  }
  return true;
}

/// A row's layout from its fields; false for a value no longer in the file's list of a custom
/// dimension (a row of another search). Throws on a number that does not parse.
bool ParseLayout(const std::vector<std::string>& f, const TunerConfig& config,
                 const HistoryColumns& cols, TrialConfig& c) {
  c.mp = std::stol(f[1]);
  c.sharding_degree = std::stol(f[2]);
  c.pp = std::stol(f[3]);
  c.dp = std::stol(f[4]);
  c.sharding_stage = std::stol(f[5]);
  c.mbs = std::stol(f[6]);
  c.vpp = std::stol(f[7]);
  if (!f[8].empty()) c.use_recompute = f[8] == "True";
  if (!f[9].empty()) c.recompute_granularity = f[9];
  const size_t n = cols.n;
  for (size_t k = cols.custom; k < n; ++k) {
    c.refined.emplace_back(config.refined_recompute[k - cols.custom], std::stol(f[10 + k]));
  }
  for (size_t k = 0; k < cols.custom; ++k) {
    const TunerConfig::CustomDim& dim = config.custom_dims[k];
    const auto it = std::find_if(dim.values.begin(), dim.values.end(),
                                 [&](const std::string& v) { return PyStr(v) == f[10 + k]; });
    if (it == dim.values.end()) return false;
    c.custom.emplace_back(dim.key, *it);
  }
  c.acc_steps = std::stol(f[10 + n]);
  c.global_batch_size = std::stol(f[11 + n]);
  if (cols.est) {
    c.estimated_dp = f[12 + n].empty() ? 0 : std::stol(f[12 + n]);
    c.trial_gpus = std::stol(f[13 + n]);
    c.trial_nodes = std::stol(f[14 + n]);
    if (cols.est == 4 && !f[15 + n].empty()) c.sharding_overlap = f[15 + n] == "True";
  }
  return true;
}

/// One row of the history; nullopt for a row that is not (a short one, another search's, a
/// number that does not parse or is not finite).
std::optional<TrialOutcome> ParseRow(const std::string& line, const TunerConfig& config,
                                     const HistoryColumns& cols) {
  const size_t n = cols.n, est = cols.est, conv = cols.conv;
  // error_info is the last column and may hold commas: split the others only.
  std::vector<std::string> f;
  size_t at = 0;
  for (size_t i = 0; i < 15 + n + est + conv && at != std::string::npos; ++i) {
    const size_t comma = line.find(',', at);
    f.push_back(line.substr(at, comma == std::string::npos ? comma : comma - at));
    at = comma == std::string::npos ? comma : comma + 1;
  }
  if (f.size() != 15 + n + est + conv || at == std::string::npos) return std::nullopt;
  try {
    TrialOutcome o;
    o.job_id = std::stoi(f[0]);
    if (!ParseLayout(f, config, cols, o.cfg)) return std::nullopt;
    o.exec_time = FiniteNumber(f[12 + n + est]);
    if (!f[13 + n + est].empty()) o.metric = FiniteNumber(f[13 + n + est]);
    for (size_t k = 0; k < conv; ++k) {
      const std::string& v = f[14 + n + est + k];
      o.converted.emplace_back(cols.conversion[k],
                               v.empty() ? std::nullopt : std::optional<double>(FiniteNumber(v)));
    }
    const std::string& memory = f[14 + n + est + conv];
    o.oom = memory == "OOM";
    if (!o.oom && !memory.empty()) o.memory_mib = FiniteNumber(memory);
    std::string error = line.substr(at);
    if (error.starts_with("['") && error.ends_with("']")) error = error.substr(2, error.size() - 4);
    o.error = error;
    return o;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::vector<TrialOutcome> ParseHistoryCsv(const std::string& text, const TunerConfig& config) {
  std::vector<TrialOutcome> out;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return out;
  const HistoryColumns cols(config);
  if (!HeaderMatches(SplitAndStrip(line, ','), config, cols)) return out;
  while (std::getline(in, line)) {
    if (std::optional<TrialOutcome> row = ParseRow(line, config, cols)) {
      out.push_back(std::move(*row));
    }
  }
  return out;
}

}  // namespace pdlaunch
