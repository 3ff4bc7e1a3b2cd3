// The auto tuner's driver: the search's stages in order (the GBS pre-search, the plan, the
// trials, the ranking, the best run), each trial an ordinary job run through the JobRunner the
// launcher gives it (docs/auto-tuner.md).
#include "pdlaunch/tuner/driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "tuner/search.h"

namespace pdlaunch {
namespace tuner_search {
namespace {

using Json = nlohmann::json;

/// The search's layouts, its candidates (those no static rule pruned), and what a previous
/// search of the same file already ran.
struct Plan {
  Layouts space;
  std::vector<TrialConfig> candidates;
  std::vector<TrialOutcome> resumed;
  /// Whether a trial's outcome prunes later candidates (out of memory, the history's rules):
  /// not in Paddle's customize search, which runs every layout of its CSV.
  bool history_prunes = true;
};

/// Where the trial loop is.
struct Progress {
  std::vector<TrialOutcome> history;
  std::optional<size_t> best;
  int job_id = 0;             ///< The last trial's number (the GBS stage is job 1).
  int launched = 0;           ///< Trials of this stage run here (task_limit).
  double trial_seconds = 0;   ///< Of the trials run here (not resumed), for the time left.
  double search_seconds = 0;  ///< The longest any node has searched (max_search_time).
};

Plan PlanSearch(const TunerConfig& config, RunReport& record) {
  Plan plan;
  plan.space = SearchLayouts(config, &record);
  plan.history_prunes = config.search_algo != "customize";
  for (const auto& [cfg, why] : plan.space) {
    if (!why) plan.candidates.push_back(cfg);
  }
  PDLOG_INFO(
      "auto tuner: {} layouts for {} device(s){}, {} pruned before launching, {} "
      "candidates (history: {})",
      plan.space.size(), config.num_gpus,
      config.estimated_num_gpus
          ? fmt::format(" (estimated; one replica of each on this node's {})", config.gpus_per_node)
          : "",
      plan.space.size() - plan.candidates.size(), plan.candidates.size(), config.history_csv);
  if (plan.candidates.empty()) {
    throw LaunchError("auto tuner: every layout was pruned; --dry_run lists them with the reasons");
  }
  std::error_code ec;
  if (fs::is_regular_file(config.resume_csv, ec)) {
    plan.resumed = ParseHistoryCsv(ReadFile(config.resume_csv), config);
    if (!plan.resumed.empty()) {
      PDLOG_INFO("auto tuner: resuming from {} ({} trials done)", config.resume_csv,
                 plan.resumed.size());
    }
  }
  return plan;
}

// Every node runs the same deterministic search: they agree first that it is the same, or none
// starts a trial. Returns 0, or the exit code.
int AgreeOnSearch(Search& search, const TunerConfig& config, const Plan& plan) {
  if (!search.several) return 0;
  const std::string summary =
      fmt::format("{} layouts, {} candidates, {} trials resumed", plan.space.size(),
                  plan.candidates.size(), plan.resumed.size());
  return AgreeOnPlan(search, config.gbs_searched ? "auto_tuner_layouts" : "auto_tuner_plan",
                     plan.space, config.resume_csv, summary, "layouts");
}

// Whether the search stops before its next trial: task_limit, or max_search_time (across
// nodes, the longest search of the last exchange decides, the same on every node; a node's own
// clock, which counted its wait for the others to start, would end the search on it alone).
bool LimitReached(const Search& search, const TunerConfig& config, Progress& progress) {
  if (progress.launched >= config.task_limit) {
    PDLOG_INFO("auto tuner: task_limit {} reached", config.task_limit);
    return true;
  }
  if (!search.several) {
    progress.search_seconds =
        std::chrono::duration<double>(Clock::now() - search.search_start).count();
  }
  if (config.max_search_time && progress.search_seconds > *config.max_search_time) {
    PDLOG_INFO("auto tuner: max_search_time {} s reached", *config.max_search_time);
    return true;
  }
  return false;
}

// The console line of a trial run here: its outcome, what it pruned, the time left.
void PrintTrialLine(const Search& search, const TunerConfig& config, const Plan& plan, size_t index,
                    const Progress& progress, bool improved) {
  const TrialOutcome& last = progress.history.back();
  const TrialConfig& cfg = plan.candidates[index];
  const std::vector<TrialConfig> later(plan.candidates.begin() + static_cast<long>(index) + 1,
                                       plan.candidates.end());
  std::string more;
  if (const size_t pruned =
          plan.history_prunes && last.oom ? NewlyPruned(later, progress.history, config) : 0) {
    more = fmt::format(" (pruned {} more)", pruned);
  }
  size_t ahead = 0;  // The candidates the history does not prune yet.
  for (const TrialConfig& next : later) {
    bool oom_prune = false;
    if (!plan.history_prunes || !HistoryPrune(next, progress.history, oom_prune, config)) {
      ++ahead;
    }
  }
  ahead = std::min<size_t>(ahead,
                           static_cast<size_t>(std::max(0, config.task_limit - progress.launched)));
  const std::string left = TimeLeft(ahead, progress.trial_seconds / progress.launched);
  // A failure that is not an expected out-of-memory says where to look.
  if (!last.metric && !last.oom) {
    more += fmt::format(" (logs: {})", (search.base / TrialDirName(progress.job_id, cfg)).string());
  }
  fmt::print("[{}/{}] {} → {}{}{}\n", index + 1, plan.candidates.size(), Describe(cfg),
             Outcome(last, config, improved), more, left.empty() ? "" : "; " + left);
  std::fflush(stdout);
}

// Runs candidate `index` (or takes it from the resumed history) and adds it to the history.
// Returns the exit code when the search stops there: interrupted, or the nodes did not agree
// (the trial is left out of the history, to be run again on resume, on one node as across
// nodes: Paddle's order).
std::optional<int> RunCandidate(Search& search, const TunerConfig& config, const Plan& plan,
                                size_t index, Progress& progress, bool& resumed) {
  const TrialConfig& cfg = plan.candidates[index];
  ++progress.job_id;
  const auto done =
      std::find_if(plan.resumed.begin(), plan.resumed.end(),
                   [&layout = cfg](const TrialOutcome& r) { return r.cfg == layout; });
  resumed = done != plan.resumed.end();
  if (resumed) {
    TrialOutcome outcome = *done;
    outcome.job_id = progress.job_id;
    progress.history.push_back(outcome);
    fmt::print("[{}/{}] {} → {} (from {})\n", index + 1, plan.candidates.size(), Describe(cfg),
               Outcome(outcome, config, false), config.resume_csv);
    return std::nullopt;
  }
  ++progress.launched;
  const int job_id = progress.job_id;
  const TrialRun run = RunTrial(
      search, config, cfg, job_id, fmt::format("auto_tuner_{}", job_id), TrialDirName(job_id, cfg),
      search.launched == 0 ? config.warmup_time : config.max_time_per_task);
  if (run.end == TrialRun::End::kInterrupted) {
    WriteHistory(config, progress.history);
    fmt::print(
        "auto tuner interrupted during trial {}: history in {}; run the same command "
        "again to resume\n",
        job_id, config.history_csv);
    return run.code;
  }
  if (run.end == TrialRun::End::kNotAgreed) {
    WriteHistory(config, progress.history);
    PDLOG_ERROR(
        "auto tuner: the nodes did not agree on the outcome of trial {} (a node "
        "stopped or is unreachable); the search stops here, history in {}",
        job_id, config.history_csv);
    return run.code;
  }
  if (search.several) progress.search_seconds = run.search_seconds;
  progress.history.push_back(run.outcome);
  return std::nullopt;
}

// The trials, in the plan's order, until the candidates or a limit run out. Returns the exit
// code when the search stops early.
std::optional<int> RunCandidates(Search& search, const TunerConfig& config, const Plan& plan,
                                 Progress& progress) {
  search.search_start = Clock::now();  // After the nodes met: their time.
  for (size_t index = 0; index < plan.candidates.size(); ++index) {
    const TrialConfig& cfg = plan.candidates[index];
    bool oom = false;
    if (const auto why =
            plan.history_prunes ? HistoryPrune(cfg, progress.history, oom, config) : std::nullopt) {
      TrialOutcome pruned;
      pruned.cfg = cfg;
      pruned.pruned = true;
      pruned.oom = oom;
      progress.history.push_back(pruned);
      fmt::print("[{}/{}] {} → pruned: {}\n", index + 1, plan.candidates.size(), Describe(cfg),
                 *why);
      std::fflush(stdout);
      continue;
    }
    if (LimitReached(search, config, progress)) break;
    bool resumed = false;
    if (const std::optional<int> code =
            RunCandidate(search, config, plan, index, progress, resumed)) {
      return code;
    }
    // dp_estimation with sharding_overlap: the overlap's gain, onto its replica's row.
    AddOverlapPerformance(progress.history, config);
    const std::optional<size_t> now_best = BestTrial(progress.history, config);
    const bool improved =
        now_best && now_best != progress.best && *now_best == progress.history.size() - 1;
    progress.best = now_best;
    if (!resumed) {
      progress.trial_seconds += progress.history.back().exec_time;
      PrintTrialLine(search, config, plan, index, progress, improved);
    }
    WriteHistory(config, progress.history);
  }
  return std::nullopt;
}

// The best five, the one that runs first.
void PrintRanking(const std::vector<TrialOutcome>& history, const TunerConfig& config) {
  const std::vector<size_t> order = RankedTrials(history, config);
  fmt::print("auto tuner: the best layouts ({}, {} is best{}):\n", config.metric_name,
             config.maximize ? "higher" : "lower",
             config.buffer && config.max_mem_usage
                 ? fmt::format("; under max_mem_usage {} - buffer {} MiB first",
                               *config.max_mem_usage, *config.buffer)
                 : std::string());
  for (size_t k = 0; k < std::min<size_t>(5, order.size()); ++k) {
    fmt::print("{}\n", RankedLine(k + 1, history[order[k]], config));
  }
}

// best_cfg.json: the winner's layout, its job and its metric (Paddle's keys).
Json BestCfgJson(const TrialOutcome& winner, const TunerConfig& config) {
  const TrialConfig& cfg = winner.cfg;
  Json best = {{"dp_degree", cfg.dp},
               {"mp_degree", cfg.mp},
               {"pp_degree", cfg.pp},
               {"vpp_degree", cfg.vpp},
               {"sharding_degree", cfg.sharding_degree},
               {"sharding_stage", cfg.sharding_stage},
               {"micro_batch_size", cfg.mbs},
               {"use_recompute", cfg.use_recompute ? Json(*cfg.use_recompute) : Json(nullptr)},
               {"recompute_granularity",
                cfg.recompute_granularity ? Json(*cfg.recompute_granularity) : Json(nullptr)},
               {"global_batch_size", cfg.global_batch_size},
               {"acc_steps", cfg.acc_steps},
               {"job_id", winner.job_id},
               {config.metric_name, *winner.metric}};
  for (const auto& [op, value] : cfg.refined) best[op] = value;
  for (const auto& [key, value] : cfg.custom) best[key] = Json::parse(value);
  if (config.estimated_num_gpus) {
    best["estimated_dp_degree"] = cfg.estimated_dp;
    best["num_gpus"] = cfg.trial_gpus;
    best["nodes"] = cfg.trial_nodes;
    for (const auto& [name, value] : winner.converted) {
      best[name] = value ? Json(*value) : Json(nullptr);
    }
  }
  return best;
}

// The best layout as a job of its own, in best_cfg_dir; its exit code is the search's.
int RunBest(Search& search, const TunerConfig& config, const TrialOutcome& winner,
            const Json& best) {
  fmt::print("Launch best cfg: {}\n", best.dump());
  std::fflush(stdout);
  const LaunchOptions& options = search.options;
  LaunchOptions run = options;
  run.auto_tuner_json.reset();
  run.job_id = "best_cfg";
  run.log_dir = config.best_cfg_dir;
  JobControls controls;
  controls.one_of_a_sequence = search.several;
  controls.etcd_key_job = TrialKeyJob(options, "best_cfg");
  std::vector<FileEdit> edits;
  run.training_script_args =
      TrialArguments(options.training_script_args, winner.cfg, config, true, edits);
  ApplyEdits(edits, "best_cfg", run.training_script_args, search.warned);
  RunResult result = search.run_job(run, controls);
  search.Record(std::move(result.record), *run.job_id, /*outcome=*/true);
  const int code = result.exit_code;
  // The best was a job of every node: all are past.
  if (search.several) search.Exchange("", "", false, "", 0);
  return code;
}

// After the trials: the ranking, best_cfg.json, and the best run unless dp_estimation or
// run_best false.
int Conclude(Search& search, const TunerConfig& config, const Progress& progress,
             Clock::time_point start) {
  if (!progress.best) {
    PDLOG_ERROR("auto tuner: no trial gave the metric {}; see the trials' logs under {}",
                config.metric_name, search.base.empty() ? "." : search.base.string());
    return 1;
  }
  PrintRanking(progress.history, config);
  const TrialOutcome& winner = progress.history[*progress.best];
  const Json best = BestCfgJson(winner, config);
  std::error_code ec;
  fs::create_directories(config.best_cfg_dir, ec);
  WriteAtomically(fs::path(config.best_cfg_dir) / "best_cfg.json", best.dump(2) + "\n");
  PDLOG_INFO("AutoTuner ended in {:.1f}s.",
             std::chrono::duration<double>(Clock::now() - start).count());
  if (config.estimated_num_gpus) {
    // As Paddle: the layouts ran as one replica of a cluster this job is not; nothing to run.
    fmt::print(
        "auto tuner: dp_estimation ran one replica of each layout for {} devices; the best "
        "is not run here (best_cfg.json in {}{})\n",
        *config.estimated_num_gpus, config.best_cfg_dir,
        config.conversion ? ", the converted metrics in " + config.enhanced_csv : "");
  }
  // No job of every node runs after the last outcome: a node cannot know that the others have
  // read it, so its record goes with its lease (a record dropped at once would leave a slower
  // node waiting for it until the exchange timed out).
  if (config.estimated_num_gpus || !config.run_best) return 0;
  return RunBest(search, config, winner, best);
}

}  // namespace
}  // namespace tuner_search

int RunAutoTuner(const LaunchOptions& options, const DeviceResolver& devices,
                 const JobRunner& run_job, const TunerExchange& exchange,
                 const std::function<void()>& announce, RunReport& report) {
  tuner_search::Search search(options, run_job, exchange, announce, report);
  TunerConfig config = tuner_search::LoadConfig(options, devices, &search.device_ids);
  const auto start = tuner_search::Clock::now();
  tuner_search::Progress progress;
  if (config.gbs_auto) {
    int code = 0;
    const std::optional<long> gbs = tuner_search::SearchGlobalBatchSize(search, config, code);
    if (!gbs) return code;
    SettleGlobalBatchSize(config, *gbs);
    config.gbs_searched = true;
    progress.job_id = 1;  // Paddle's GBS stage is job 1: the search's trials are Job2, Job3, ...
  }
  const tuner_search::Plan plan = tuner_search::PlanSearch(config, report);
  if (const int code = tuner_search::AgreeOnSearch(search, config, plan)) return code;
  if (const std::optional<int> code = tuner_search::RunCandidates(search, config, plan, progress)) {
    return *code;
  }
  return tuner_search::Conclude(search, config, progress, start);
}

}  // namespace pdlaunch
