// The search space: each layout in Paddle's order, with the static prune that removes it (the
// grid, dp_estimation's replicas, customize's CSV, the GBS pre-search), and the history prunes.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "pdlaunch/base/endpoint.h"  // SplitAndStrip
#include "pdlaunch/base/errors.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "tuner/common.h"

namespace pdlaunch {

using tuner::Divisors;
using tuner::Filter;
using tuner::Fmt;
using tuner::Json;
using tuner::MatchesStrategy;
using tuner::PyBool;
using tuner::PyStr;
using tuner::RecomputeLevel;
using tuner::SameBeside;

std::string Describe(const TrialConfig& c) {
  std::string out = fmt::format("dp{} mp{} pp{} vpp{} sharding{} stage{} mbs{} recompute={}", c.dp,
                                c.mp, c.pp, c.vpp, c.sharding_degree, c.sharding_stage, c.mbs,
                                !c.use_recompute    ? std::string("-")
                                : !*c.use_recompute ? std::string("off")
                                                    : c.recompute_granularity.value_or("on"));
  for (const auto& [op, value] : c.refined) out += fmt::format(" {}={}", op, value);
  for (const auto& [key, value] : c.custom) out += fmt::format(" {}={}", key, PyStr(value));
  if (c.estimated_dp) out += fmt::format(" (for dp{}, gbs{})", c.estimated_dp, c.global_batch_size);
  if (c.sharding_overlap) out += *c.sharding_overlap ? " overlap=on" : " overlap=off";
  return out;
}

std::vector<std::pair<TrialConfig, std::optional<std::string>>> CustomizedLayouts(
    const std::string& text, const TunerConfig& config) {
  std::istringstream in(text);
  std::string line;
  const auto bad = [&](size_t row, const std::string& what) {
    throw UsageError(fmt::format("configs_csv '{}' row {}: {}", OneLine(config.configs_csv), row,
                                 OneLine(what)));
  };
  if (!std::getline(in, line)) bad(1, "no header");
  const std::vector<std::string> header = SplitAndStrip(line, ',');
  const auto column = [&](const std::string& name) -> std::optional<size_t> {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? std::nullopt : std::optional<size_t>(it - header.begin());
  };
  std::vector<std::pair<TrialConfig, std::optional<std::string>>> out;
  for (size_t row = 2; std::getline(in, line); ++row) {
    if (StripSpace(line).empty()) continue;
    const std::vector<std::string> fields = SplitAndStrip(line, ',');
    const auto field = [&](const std::string& name) {
      const std::optional<size_t> at = column(name);
      return at && *at < fields.size() ? fields[*at] : std::string();
    };
    const auto integer = [&](const std::string& name) {
      const std::string text_value = field(name);
      long value = 0;
      const auto [end, ec] =
          std::from_chars(text_value.data(), text_value.data() + text_value.size(), value);
      if (text_value.empty() || ec != std::errc() || end != text_value.data() + text_value.size() ||
          value < 1) {
        bad(row, fmt::format("{} must be an integer >= 1, got '{}'", name, text_value));
      }
      return value;
    };
    TrialConfig c;
    c.dp = integer("dp_degree");
    c.mp = integer("mp_degree");
    c.pp = integer("pp_degree");
    c.vpp = integer("vpp_degree");
    c.mbs = integer("micro_batch_size");
    c.sharding_degree = integer("sharding_degree");
    c.sharding_stage = integer("sharding_stage");
    std::string recompute = field("use_recompute");
    std::transform(recompute.begin(), recompute.end(), recompute.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (recompute != "true" && recompute != "false") {
      bad(row,
          fmt::format("use_recompute must be true or false, got '{}'", field("use_recompute")));
    }
    c.use_recompute = recompute == "true";
    const std::string granularity = field("recompute_granularity");
    if (!granularity.empty()) {
      if (granularity != "full" && granularity != "full_attn" && granularity != "core_attn") {
        bad(row, fmt::format("recompute_granularity must be full, full_attn or core_attn, got "
                             "'{}'",
                             granularity));
      }
      c.recompute_granularity = granularity;
    }
    c.global_batch_size = config.global_batch_size.value_or(0);
    if (c.global_batch_size > 0) {
      const long per_step = c.dp * c.sharding_degree * c.mbs;
      if (c.global_batch_size % per_step) {
        bad(row, fmt::format("global_batch_size {} is not a multiple of dp_degree {} x "
                             "sharding_degree {} x micro_batch_size {}",
                             c.global_batch_size, c.dp, c.sharding_degree, c.mbs));
      }
      c.acc_steps = c.global_batch_size / per_step;
    }
    out.emplace_back(c, std::nullopt);
  }
  if (out.empty()) bad(2, "no layout");
  return out;
}

namespace {

// refined_recompute's values for one layout (utils.py search_all): all 0 when it cannot apply
// (pp 1, recompute off or not full); else the first operator from 0 to num_layers / pp with the
// others 0, then each next operator from 0 up with those before it at the maximum; descending in
// schedule_mode performance. One empty list without refined_recompute.
std::vector<std::vector<long>> RefinedValues(const TunerConfig& cfg, long pp,
                                             const std::optional<bool>& recompute,
                                             const std::optional<std::string>& granularity) {
  const size_t ops = cfg.refined_recompute.size();
  if (ops == 0) return {{}};
  if (pp == 1 || !recompute.value_or(false) || granularity.value_or("") != "full") {
    return {std::vector<long>(ops, 0)};
  }
  const long max = *cfg.num_layers / pp;
  std::vector<std::vector<long>> out;
  for (size_t i = 0; i < ops; ++i) {
    for (long v = 0; v <= max; ++v) {
      std::vector<long> values(ops, 0);
      for (size_t k = 0; k < i; ++k) values[k] = max;
      values[i] = v;
      if (std::find(out.begin(), out.end(), values) == out.end()) out.push_back(values);
    }
  }
  if (cfg.performance_first) std::sort(out.rbegin(), out.rend());
  return out;
}

// prune.py prune_by_refined_recompute, its last static rule.
std::optional<std::string> RefinedPrune(const TrialConfig& c, const TunerConfig& cfg) {
  if (c.refined.empty()) return std::nullopt;
  const bool any = std::any_of(c.refined.begin(), c.refined.end(),
                               [](const auto& op) { return op.second != 0; });
  if (any && c.use_recompute.value_or(false) && c.recompute_granularity &&
      *c.recompute_granularity != "full") {
    return "refined_recompute needs recompute_granularity full";
  }
  if (any && c.pp == 1) return "refined_recompute needs pp > 1";
  const long max = *cfg.num_layers / c.pp;
  for (size_t i = 0; i < c.refined.size(); ++i) {
    if (c.refined[i].second > max) {
      return fmt::format("{} {} is past num_layers / pp {}", c.refined[i].first,
                         c.refined[i].second, max);
    }
    if (i > 0 && c.refined[i - 1].second != max && c.refined[i].second != 0) {
      return fmt::format("{} before {} is not at its maximum {}", c.refined[i - 1].first,
                         c.refined[i].first, max);
    }
  }
  return std::nullopt;
}

// prune.py's static rules, in its order, for `c` given the candidates `kept` before it: the
// reason it is pruned, or nullopt.
std::optional<std::string> StaticPrune(const TrialConfig& c, const TunerConfig& cfg,
                                       const std::vector<TrialConfig>& kept,
                                       const MemoryEstimate& estimate) {
  const long dp = c.dp, mp = c.mp, pp = c.pp, sd = c.sharding_degree, mbs = c.mbs, vpp = c.vpp;
  const long local = c.global_batch_size / dp / sd;
  const std::optional<bool>& recompute = c.use_recompute;
  const std::optional<std::string>& granularity = c.recompute_granularity;
  if (std::find(cfg.mp.begin(), cfg.mp.end(), mp) == cfg.mp.end()) {
    return "mp_degree not a candidate";
  }
  if (cfg.num_layers && *cfg.num_layers % pp) {
    return fmt::format("num_layers {} not divisible by pp {}", *cfg.num_layers, pp);
  }
  if (vpp > 1 && (c.acc_steps % pp)) {
    return fmt::format("vpp {} needs acc_steps {} divisible by pp {}", vpp, c.acc_steps, pp);
  }
  if (pp <= 2 && vpp != 1) return fmt::format("vpp {} needs pp > 2", vpp);
  if (local == 0 || local % mbs) {
    return fmt::format("local batch {} not divisible by mbs {}", local, mbs);
  }
  if (local / mbs < pp) return fmt::format("acc_steps {} below pp {}", local / mbs, pp);
  if (pp != 1 && c.sharding_stage != 1 && sd != 1) {
    return fmt::format("sharding stage {} with pp {}", c.sharding_stage, pp);
  }
  if (sd == 1 && std::any_of(kept.begin(), kept.end(), [&](const TrialConfig& k) {
        return SameBeside(k, c, {"sharding_stage"});
      })) {
    return "sharding_degree 1: the stage makes no difference";
  }
  if (recompute && !*recompute && granularity && *granularity != "full") {
    return "recompute off: the granularity makes no difference";
  }
  if (recompute && std::any_of(kept.begin(), kept.end(), [&](const TrialConfig& k) {
        return RecomputeLevel(k) == RecomputeLevel(c) && SameBeside(k, c, {"recompute"});
      })) {
    return "the same recompute level as a kept candidate";
  }
  if (dp * mp * pp * sd != cfg.num_gpus) {
    return fmt::format("dp*mp*pp*sharding {} is not the {} devices", dp * mp * pp * sd,
                       cfg.num_gpus);
  }
  if (estimate) {
    // Paddle compares the MB printed with max_mem_usage * 1024; recorder.py and PaddleNLP's
    // files give max_mem_usage in MiB, as pdlaunch reads it everywhere.
    const double mb = std::round(estimate(c));
    if (mb > *cfg.max_mem_usage) {
      return fmt::format("estimated {} MB, above max_mem_usage {}", Fmt(mb),
                         Fmt(*cfg.max_mem_usage));
    }
  }
  for (const std::string& strategy : cfg.invalid_strategy) {
    if (MatchesStrategy(c, strategy)) return fmt::format("invalid_strategy {}", strategy);
  }
  return RefinedPrune(c, cfg);
}

}  // namespace

namespace {

// gen_new_ctx's nodes for a trial of `gpus` devices: one, whole nodes, or the fewest of the
// job's that split the devices evenly; 0 when none does.
long NodesOfTrial(long gpus, const TunerConfig& cfg) {
  if (gpus <= cfg.gpus_per_node) return 1;
  if (gpus % cfg.gpus_per_node == 0) return gpus / cfg.gpus_per_node;
  for (long n = 2; n <= cfg.given_nodes; ++n) {
    if (gpus % n == 0 && gpus / n <= cfg.gpus_per_node) return n;
  }
  return 0;
}

// utils.py search_by_dp_estimation: each layout of the estimated cluster that the static rules
// kept, as one data-parallel replica (dp, sharding and stage 1) on mp x pp devices, its batch the
// cluster's divided by the cluster's dp x sharding; a layout equal to an earlier one (stages
// collapse) is left out, and one that needs more nodes than the job has is pruned.
std::vector<std::pair<TrialConfig, std::optional<std::string>>> SingleReplicaLayouts(
    const std::vector<std::pair<TrialConfig, std::optional<std::string>>>& grid,
    const TunerConfig& cfg) {
  std::vector<std::pair<TrialConfig, std::optional<std::string>>> out;
  std::vector<TrialConfig> seen;
  for (const auto& [layout, why] : grid) {
    if (why) continue;
    TrialConfig t = layout;
    t.estimated_dp = layout.dp * layout.sharding_degree;
    t.dp = t.sharding_degree = t.sharding_stage = 1;
    t.trial_gpus = t.mp * t.pp;
    t.global_batch_size = *cfg.global_batch_size / t.estimated_dp;
    t.acc_steps = t.global_batch_size / t.mbs;
    t.trial_nodes = NodesOfTrial(t.trial_gpus, cfg);
    if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
    seen.push_back(t);
    std::optional<std::string> reason;
    if (t.trial_nodes == 0 || t.trial_nodes > cfg.given_nodes) {
      reason = fmt::format("one replica needs {} devices, more than the job's {} node(s) of {}",
                           t.trial_gpus, cfg.given_nodes, cfg.gpus_per_node);
    }
    out.emplace_back(t, reason);
  }
  // sharding_overlap: each replica that runs, widened by sharding to the job's devices, without
  // and with the overlap (its gain over the replica's converted metrics: AddOverlapPerformance).
  if (cfg.sharding_overlap.empty()) return out;
  const long given = cfg.given_nodes * cfg.gpus_per_node;
  const size_t replicas = out.size();
  for (size_t k = 0; k < replicas; ++k) {
    if (out[k].second) continue;  // Paddle widens only the replicas it keeps.
    const TrialConfig& replica = out[k].first;
    const long sharding = given / replica.trial_gpus;
    if (sharding <= 1) continue;
    TrialConfig wide = replica;
    wide.sharding_degree = sharding;
    wide.estimated_dp = 0;
    wide.trial_gpus = replica.trial_gpus * sharding;
    wide.trial_nodes = NodesOfTrial(wide.trial_gpus, cfg);
    wide.global_batch_size = replica.global_batch_size * sharding;
    wide.acc_steps = wide.global_batch_size / sharding / wide.mbs;
    for (const bool overlap : {false, true}) {
      wide.sharding_overlap = overlap;
      out.emplace_back(wide, std::nullopt);
    }
  }
  return out;
}

}  // namespace

namespace {

/// utils.py search_all: the degrees nested mp → sharding → pp → dp, their product the devices.
std::vector<std::array<long, 4>> DegreeTuples(const TunerConfig& cfg) {
  std::vector<std::array<long, 4>> degrees;
  for (long mp : cfg.mp) {
    if (cfg.num_gpus % mp) continue;
    for (long sd : cfg.sharding_degree) {
      if ((cfg.num_gpus / mp) % sd) continue;
      for (long pp : cfg.pp) {
        const long rest = cfg.num_gpus / mp / sd;
        if (rest % pp) continue;
        for (long dp : cfg.dp) {
          if (dp == rest / pp) degrees.push_back({mp, sd, pp, dp});
        }
      }
    }
  }
  return degrees;
}

/// custom_search_dim: itertools.product of the values, the last dimension varying fastest,
/// innermost of all (after the recompute granularity).
std::vector<std::vector<std::pair<std::string, std::string>>> CustomProducts(
    const TunerConfig& cfg) {
  std::vector<std::vector<std::pair<std::string, std::string>>> customs{{}};
  for (const TunerConfig::CustomDim& dim : cfg.custom_dims) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& prefix : customs) {
      for (const std::string& value : dim.values) {
        next.push_back(prefix);
        next.back().emplace_back(dim.key, value);
      }
    }
    customs = std::move(next);
  }
  return customs;
}

/// need_baseline: memory-first (utils.py memory_sort), so the first trial most likely fits;
/// schedule_prior: the matching candidates first, the first strategy's first.
void OrderCandidates(const TunerConfig& cfg,
                     std::vector<std::pair<TrialConfig, std::optional<std::string>>>& all) {
  if (cfg.need_baseline) {
    std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) {
      const TrialConfig& a = x.first;
      const TrialConfig& b = y.first;
      return std::make_tuple(-a.mp, -a.pp, -a.vpp, -a.sharding_degree, -a.sharding_stage, a.mbs,
                             -static_cast<int>(a.use_recompute.value_or(false))) <
             std::make_tuple(-b.mp, -b.pp, -b.vpp, -b.sharding_degree, -b.sharding_stage, b.mbs,
                             -static_cast<int>(b.use_recompute.value_or(false)));
    });
  }
  // schedule_prior: the matching candidates first, the first strategy's first.
  for (auto it = cfg.schedule_prior.rbegin(); it != cfg.schedule_prior.rend(); ++it) {
    std::stable_partition(all.begin(), all.end(),
                          [&](const auto& x) { return MatchesStrategy(x.first, *it); });
  }
}

}  // namespace

std::vector<std::pair<TrialConfig, std::optional<std::string>>> SearchSpace(
    const TunerConfig& cfg, const MemoryEstimate& estimate) {
  if (cfg.estimated_num_gpus) {
    TunerConfig grid = cfg;
    grid.estimated_num_gpus.reset();
    return SingleReplicaLayouts(SearchSpace(grid, estimate), cfg);
  }
  if (!cfg.global_batch_size) {
    throw LaunchError("auto tuner: the layouts need the global batch size (the GBS pre-search's)");
  }
  const long gbs = *cfg.global_batch_size;
  const std::vector<std::array<long, 4>> degrees = DegreeTuples(cfg);
  const std::vector<std::vector<std::pair<std::string, std::string>>> customs = CustomProducts(cfg);
  std::vector<std::pair<TrialConfig, std::optional<std::string>>> all;
  std::vector<TrialConfig> kept;
  for (const auto& [mp, sd, pp, dp] : degrees) {
    for (long stage : cfg.sharding_stage) {
      for (long mbs : cfg.mbs) {
        for (long vpp : cfg.vpp) {
          for (const auto& recompute : cfg.use_recompute) {
            for (const auto& granularity : cfg.recompute_granularity) {
              for (const auto& custom : customs) {
                if (gbs % (mbs * sd * dp)) continue;
                if (cfg.num_layers && *cfg.num_layers % (pp * vpp)) continue;
                for (const std::vector<long>& rr : RefinedValues(cfg, pp, recompute, granularity)) {
                  TrialConfig c{dp,
                                mp,
                                pp,
                                sd,
                                stage,
                                mbs,
                                vpp,
                                recompute,
                                granularity,
                                gbs,
                                gbs / dp / sd / mbs,
                                custom,
                                {}};
                  for (size_t k = 0; k < rr.size(); ++k) {
                    c.refined.emplace_back(cfg.refined_recompute[k], rr[k]);
                  }
                  const std::optional<std::string> why = StaticPrune(c, cfg, kept, estimate);
                  if (!why) kept.push_back(c);
                  all.emplace_back(c, why);
                }
              }
            }
          }
        }
      }
    }
  }
  OrderCandidates(cfg, all);
  return all;
}

std::optional<std::string> HistoryPrune(const TrialConfig& c,
                                        const std::vector<TrialOutcome>& history, bool& oom) {
  oom = false;
  for (const TrialOutcome& h : history) {
    const bool ran = h.metric.has_value() && !h.oom;
    const TrialConfig& o = h.cfg;
    if (SameBeside(o, c, {"mbs"})) {
      if (o.mbs > c.mbs && ran) return fmt::format("mbs {} ran, a smaller one is slower", o.mbs);
      if (o.mbs < c.mbs && h.oom) {
        oom = true;
        return fmt::format("mbs {} ran out of memory", o.mbs);
      }
    }
    if (SameBeside(o, c, {"sharding_stage"})) {
      if (o.sharding_stage < c.sharding_stage && ran) {
        return fmt::format("stage {} ran, a higher one is slower", o.sharding_stage);
      }
      if (o.sharding_stage > c.sharding_stage && h.oom) {
        oom = true;
        return fmt::format("stage {} ran out of memory", o.sharding_stage);
      }
    }
    if (SameBeside(o, c, {"recompute"})) {
      if (RecomputeLevel(o) < RecomputeLevel(c) && ran) {
        return "less recompute ran, more is slower";
      }
      if (RecomputeLevel(o) > RecomputeLevel(c) && h.oom) {
        oom = true;
        return "more recompute ran out of memory";
      }
    }
    if (SameBeside(o, c, {"vpp"}) && o.vpp > c.vpp && h.oom) {
      oom = true;
      return fmt::format("vpp {} ran out of memory", o.vpp);
    }
  }
  return std::nullopt;
}

std::optional<std::string> HistoryPrune(const TrialConfig& c,
                                        const std::vector<TrialOutcome>& history, bool& oom,
                                        const TunerConfig& config) {
  if (auto why = HistoryPrune(c, history, oom)) return why;
  // refined_recompute (prune.py prune_by_refined_recompute_history), for layouts equal but in
  // the operators' values and use_recompute: recompute off ran, so refining it is slower; an
  // operator's larger value ran (less recompute), so a smaller one is slower; a smaller one ran
  // out of memory, so would a larger one.
  for (size_t i = 0; i < c.refined.size(); ++i) {
    const auto& [op, value] = c.refined[i];
    for (const TrialOutcome& h : history) {
      if (h.cfg.refined.size() != c.refined.size() ||
          !SameBeside(h.cfg, c, {"refined", "use_recompute"})) {
        continue;
      }
      const bool ran = h.metric.has_value() && !h.oom;
      const bool both = h.cfg.use_recompute.value_or(false) && c.use_recompute.value_or(false);
      const long theirs = h.cfg.refined[i].second;
      if (!h.cfg.use_recompute.value_or(false) && ran) {
        return fmt::format("{} {}: recompute off ran, refining recompute is slower", op, value);
      }
      if (theirs > value && ran && both) {
        return fmt::format("{} {} ran, a smaller one is slower", op, theirs);
      }
      if (theirs < value && h.oom && both) {
        oom = true;
        return fmt::format("{} {} ran out of memory", op, theirs);
      }
    }
  }
  // custom_search_dim with prune: its values are the user's order of preference; once one ran,
  // the later ones of the same layout are not tried (prune.py
  // prune_by_custom_search_dim_history, which compares the other keys by a substring test of
  // the dimension's name: a key contained in it, mp_degree in mp_degree_x, was not compared).
  for (const TunerConfig::CustomDim& dim : config.custom_dims) {
    if (!dim.prune) continue;
    const auto index = [&](const TrialConfig& t) -> long {
      for (const auto& [key, value] : t.custom) {
        if (key != dim.key) continue;
        const auto it = std::find(dim.values.begin(), dim.values.end(), value);
        return it == dim.values.end() ? -1 : it - dim.values.begin();
      }
      return -1;
    };
    const long mine = index(c);
    if (mine < 0) continue;
    for (const TrialOutcome& h : history) {
      const long theirs = index(h.cfg);
      if (theirs >= 0 && theirs < mine && h.metric && !h.oom &&
          SameBeside(h.cfg, c, {"custom." + dim.key})) {
        return fmt::format("{} {} ran, a later value is not tried", dim.key,
                           PyStr(dim.values[static_cast<size_t>(theirs)]));
      }
    }
  }
  return std::nullopt;
}

size_t NewlyPruned(const std::vector<TrialConfig>& later, const std::vector<TrialOutcome>& history,
                   const TunerConfig& config) {
  if (history.empty()) return 0;
  const std::vector<TrialOutcome> before(history.begin(), history.end() - 1);
  size_t count = 0;
  for (const TrialConfig& cfg : later) {
    bool oom = false;
    if (HistoryPrune(cfg, history, oom, config) && !HistoryPrune(cfg, before, oom, config)) {
      ++count;
    }
  }
  return count;
}

std::vector<std::string> MemoryEstimationArguments(const TrialConfig& c,
                                                   const TunerConfig& config) {
  const std::pair<const char*, std::string> layout[] = {
      {"--dp_degree", std::to_string(c.dp)},
      {"--mp_degree", std::to_string(c.mp)},
      {"--pp_degree", std::to_string(c.pp)},
      {"--vpp_degree", std::to_string(c.vpp)},
      {"--sharding_degree", std::to_string(c.sharding_degree)},
      {"--sharding_stage", std::to_string(c.sharding_stage)},
      {"--use_recompute", PyBool(c.use_recompute)},
      {"--micro_batch_size", std::to_string(c.mbs)},
      {"--recompute_granularity", c.recompute_granularity.value_or("None")}};
  std::vector<std::string> args;
  for (const auto& [flag, value] : layout) {
    args.push_back(flag);
    args.push_back(value);
  }
  const std::pair<const char*, std::optional<long>> model[] = {
      {"--hidden_size", config.hidden_size}, {"--num_attention_heads", config.num_attention_heads},
      {"--num_layers", config.num_layers},   {"--max_sequence_length", config.max_sequence_length},
      {"--vocab_size", config.vocab_size},   {"--intermediate_size", config.intermediate_size}};
  for (const auto& [flag, value] : model) {
    if (!value) continue;
    args.push_back(flag);
    args.push_back(std::to_string(*value));
  }
  return args;
}

void SettleGlobalBatchSize(TunerConfig& c, long gbs) {
  c.global_batch_size = gbs;
  Json spec = Json::object();
  if (!c.mbs_spec.empty()) spec["micro_batch_size"] = Json::parse(c.mbs_spec);
  c.mbs = Filter(spec, "micro_batch_size", Divisors(gbs, c.performance_first), gbs);
}

std::vector<std::pair<TrialConfig, std::optional<std::string>>> GbsSearchSpace(
    const TunerConfig& config) {
  // utils.py gbs_dp_mp_pp_candidates: a data-parallel degree near the cube root of the devices,
  // then mp near the square root of the rest, pp what remains.
  const long n = config.num_gpus;
  long dp = std::max(1L, std::lround(std::cbrt(static_cast<double>(n))));
  while (n % dp) --dp;
  const long rest = n / dp;
  long mp = std::max(1L, std::lround(std::sqrt(static_cast<double>(rest))));
  while (rest % mp) --mp;
  const long pp = rest / mp;
  // gbs_default_candidates: dp becomes the sharding degree (stage 1), no recompute, mbs 2^0 ..
  // 2^9, the global batch pp x sharding x mbs (so acc_steps is pp, the least the static rule
  // keeps; gbs_search_all's pp x dp x mbs, dp being 1, is below it for every layout).
  TunerConfig rules = config;
  rules.mp = {mp};  // Paddle prunes against the stage's own candidates.
  rules.refined_recompute.clear();
  rules.custom_dims.clear();
  std::vector<std::pair<TrialConfig, std::optional<std::string>>> all;
  std::vector<TrialConfig> kept;
  for (long mbs = 1; mbs <= 512; mbs *= 2) {
    TrialConfig c;
    c.dp = 1;
    c.mp = mp;
    c.pp = pp;
    c.sharding_degree = dp;
    c.sharding_stage = 1;
    c.mbs = mbs;
    c.vpp = 1;
    c.use_recompute = false;
    c.global_batch_size = pp * dp * mbs;
    c.acc_steps = pp;
    const std::optional<std::string> why = StaticPrune(c, rules, kept, nullptr);
    if (!why) kept.push_back(c);
    all.emplace_back(c, why);
  }
  return all;
}

}  // namespace pdlaunch
