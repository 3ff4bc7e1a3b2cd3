// The auto tuner's GBS pre-search (model_cfg.global_batch_size "auto").
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "pdlaunch/base/logging.h"
#include "tuner/search.h"

namespace pdlaunch::tuner_search {

namespace {

/// The stage's configuration: its layouts have no custom_search_dim or refined_recompute
/// values: nor have its history's columns, and its trials' arguments.
TunerConfig GbsConfig(const TunerConfig& tuner) {
  TunerConfig config = tuner;
  config.search_algo = "gbs";  // Paddle's name for this stage's search; no conversion in it.
  config.conversion.reset();
  config.custom_dims.clear();
  config.refined_recompute.clear();
  return config;
}

/// What GBS trial `job_id` of layout `cfg` gave: resumed from the history (`from` says so), or
/// run; nullopt with `code` set when the search stops here (interrupted, or the nodes did not
/// agree on the outcome), the history written.
std::optional<TrialOutcome> GbsTrial(Search& search, const TunerConfig& config,
                                     const TrialConfig& cfg, int job_id,
                                     const std::vector<TrialOutcome>& resumed,
                                     const std::vector<TrialOutcome>& history, const fs::path& csv,
                                     std::string& from, int& code) {
  const auto done =
      std::find_if(resumed.begin(), resumed.end(),
                   [&layout = cfg](const TrialOutcome& r) { return r.cfg == layout; });
  if (done != resumed.end()) {
    TrialOutcome outcome = *done;
    outcome.job_id = job_id;
    from = fmt::format(" (from {})", csv.filename().string());
    return outcome;
  }
  const TrialRun run = RunTrial(
      search, config, cfg, job_id, fmt::format("gbs_tuner_{}", job_id), GbsTrialDirName(1, cfg),
      search.launched == 0 ? config.warmup_time : config.max_time_per_task);
  if (run.end == TrialRun::End::kMerged) return run.outcome;
  WriteAtomically(csv, HistoryCsv(history, config));
  if (run.end == TrialRun::End::kInterrupted) {
    fmt::print(
        "auto tuner interrupted during GBS trial {}: history in {}; run the same command again "
        "to resume\n",
        job_id, csv.string());
  } else {
    PDLOG_ERROR(
        "auto tuner: the nodes did not agree on the outcome of GBS trial {} (a node stopped or "
        "is unreachable); the search stops here, history in {}",
        job_id, csv.string());
  }
  code = run.code;
  return std::nullopt;
}

/// Why the pre-search found no global batch size; the search's exit code.
int NoGbsFound(const Search& search, size_t candidates) {
  if (candidates == 0) {
    PDLOG_ERROR(
        "auto tuner: every layout of the GBS pre-search was pruned; --dry_run lists them with "
        "the reasons");
  } else {
    PDLOG_ERROR(
        "auto tuner: the GBS pre-search found no global batch size that runs (its first layout "
        "gave no metric or ran out of memory); see its logs under {}",
        (search.base / "Job1_GBSSearch").string());
  }
  return 1;
}

}  // namespace

// The GBS pre-search (model_cfg.global_batch_size "auto"): the layouts of GbsSearchSpace in
// order until the first without a metric or out of memory; the last that ran gives the global
// batch size, or nullopt with `code` set. Its history is tuner_gbs_history.csv beside the tuner
// file, written after every trial and resumed from as the main history is.
std::optional<long> SearchGlobalBatchSize(Search& search, const TunerConfig& tuner, int& code) {
  const Layouts space = GbsSearchSpace(tuner);
  const TunerConfig config = GbsConfig(tuner);
  const fs::path csv = search.base / "tuner_gbs_history.csv";
  std::error_code ec;
  std::vector<TrialOutcome> resumed;
  if (fs::is_regular_file(csv, ec)) resumed = ParseHistoryCsv(ReadFile(csv), config);
  size_t candidates = 0;
  for (const auto& [cfg, why] : space) candidates += why ? 0 : 1;
  PDLOG_INFO(
      "auto tuner: global_batch_size \"auto\": the GBS pre-search runs {} of {} layouts "
      "in order until one has no metric or runs out of memory (history: {})",
      candidates, space.size(), csv.string());
  if (search.several) {
    const std::string summary =
        fmt::format("{} GBS layouts, {} trials resumed", space.size(), resumed.size());
    // The first exchange of every search is auto_tuner_plan: nodes that differ in this too
    // meet there and say so, instead of each waiting for the others in an exchange of its own.
    if (const int agreed =
            AgreeOnPlan(search, "auto_tuner_plan", space, csv, summary, "GBS layouts")) {
      code = agreed;
      return std::nullopt;
    }
  }
  std::vector<TrialOutcome> history;
  std::optional<long> found;
  int job_id = 0;
  size_t index = 0;
  for (const auto& [cfg, why] : space) {
    ++index;
    if (why) {
      fmt::print("[GBS {}/{}] {} gbs{} → pruned: {}\n", index, space.size(), Describe(cfg),
                 cfg.global_batch_size, *why);
      continue;
    }
    std::string from;
    const std::optional<TrialOutcome> outcome =
        GbsTrial(search, config, cfg, ++job_id, resumed, history, csv, from, code);
    if (!outcome) return std::nullopt;
    history.push_back(*outcome);
    WriteAtomically(csv, HistoryCsv(history, config));
    const bool ran = outcome->metric && !outcome->oom;
    fmt::print("[GBS {}/{}] {} gbs{} → {}{}\n", index, space.size(), Describe(cfg),
               cfg.global_batch_size,
               ran ? fmt::format("ran ({} {})", *outcome->metric, config.metric_name)
                   : Outcome(*outcome, config, false),
               from);
    std::fflush(stdout);
    if (!ran) break;
    found = cfg.global_batch_size;
  }
  if (!found) {
    code = NoGbsFound(search, candidates);
    return std::nullopt;
  }
  PDLOG_INFO("auto tuner: global_batch_size {} (the largest of the GBS pre-search that ran)",
             *found);
  return found;
}

}  // namespace pdlaunch::tuner_search
