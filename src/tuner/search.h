#pragma once

// A private header of the auto tuner's driver (src/tuner/driver.cc, trial_run.cc,
// gbs_search.cc, search_files.cc): what one search shares between its stages.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pdlaunch/base/exit_status.h"
#include "pdlaunch/coord/node_exchange.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/process/run_report.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "pdlaunch/tuner/driver.h"

namespace pdlaunch::tuner_search {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// Where a trial's launcher lines go, in its directory, unless --echo (RunTrial).
inline constexpr char kTrialConsoleLog[] = "launcher.log";

/// What the trials of one search share.
struct Search {
  Search(const LaunchOptions& o, const JobRunner& r, const TunerExchange& e,
         const std::function<void()>& a, RunReport& rep)
      : options(o),
        run_job(r),
        exchange_call(e),
        announce(a),
        report(rep),
        several(e != nullptr),  // Given for a search of several nodes only.
        base(fs::path(*o.auto_tuner_json).parent_path()) {}
  /// The exchange between the nodes (TunerExchange; several only): a signal that ended the wait
  /// is the search's, in `report` (its exit code is 128 + n).
  ExchangeResult Exchange(const std::string& job_id, const std::string& value, bool first,
                          const std::string& trial, double wait) const {
    ExchangeResult told = exchange_call(job_id, value, first, trial, wait);
    if (const std::optional<int> signal = SignalOfShellCode(told.code)) report.signal = signal;
    return told;
  }
  /// Adds the record of the job `job_id` (a trial, or the best) to the search's: its processes,
  /// marked with the job, a signal, the node's place, the device log's figures. `outcome`: the
  /// job whose end is the search's (the best), whose root cause and reason are the report's; a
  /// trial's failure is its outcome (the history, its line), not the search's root cause.
  void Record(RunReport job, const std::string& job_id, bool outcome) const;

  const LaunchOptions& options;
  const JobRunner& run_job;
  const TunerExchange& exchange_call;
  const std::function<void()>& announce;
  /// The search's record (--report): every trial's processes and the best run's.
  RunReport& report;
  bool several = false;  ///< A search of several nodes: outcomes are exchanged.
  fs::path base;         ///< The tuner file's directory: the trials' logs are there.
  Clock::time_point search_start = Clock::now();  ///< Once the nodes met: their clock.
  /// dp_estimation: this node's devices in the job's order (empty on CPUs), of which a trial of
  /// one replica takes the first mp x pp.
  std::vector<int> device_ids;
  /// This node's place among the nodes' sorted names (AgreeOnPlan), and the names: a
  /// dp_estimation replica of k nodes runs on the first k.
  int node_index = 0;
  std::vector<std::string> node_names;
  bool warned = false;  ///< A run_cmd file rewritten in place was said.
  int launched = 0;     ///< Trials run here, of every stage (the first gets warmup_time).
};

/// How one trial ended for the search.
struct TrialRun {
  enum class End { kMerged, kInterrupted, kNotAgreed } end = End::kMerged;
  TrialOutcome outcome;       ///< kMerged: the merged outcome; kInterrupted: this node's view.
  int code = 0;               ///< kInterrupted, kNotAgreed: the launcher's exit code.
  double search_seconds = 0;  ///< kMerged across nodes: the longest search of any node.
};

/// The layouts of a search with the static prune of each (none: a candidate).
using Layouts = std::vector<std::pair<TrialConfig, std::optional<std::string>>>;

// search_files.cc: the files of a search.

/// The end of `path` (at most `limit` bytes), or "" when it cannot be read.
std::string ReadFile(const fs::path& path, size_t limit = 64 << 20);
/// Writes `text` to `path` atomically (a temporary in the same directory, then rename).
void WriteAtomically(const fs::path& path, const std::string& text);
/// The trial's copies of the run_cmd files the script's arguments name (FileEdit).
void ApplyEdits(const std::vector<FileEdit>& edits, const std::string& trial,
                std::vector<std::string>& args, bool& warned);
/// A trial's outcome as its console line says it.
std::string Outcome(const TrialOutcome& o, const TunerConfig& config, bool best);
/// What the trial's logs in `dir` say on this node: the metric, out of memory, the GPU peak.
void ReadTrialLogs(const fs::path& dir, const TunerConfig& config, const RunReport& record,
                   NodeOutcome& o);
/// The history CSV, and dp_estimation's enhanced one beside it, after every trial.
void WriteHistory(const TunerConfig& config, const std::vector<TrialOutcome>& history);
/// The nodes of the job the search runs on (--ips, else --nnodes).
long NodesOf(const LaunchOptions& options);
/// The tuner file for this node's `devices`; `device_ids`, when given, gets those devices' ids
/// in the job's order (dp_estimation's replicas take the first of them).
TunerConfig LoadConfig(const LaunchOptions& options, const DeviceResolver& devices,
                       std::vector<int>* device_ids = nullptr);
/// The layouts of the search in its order, each with its static prune. A signal that stops
/// memory_estimation_tool's runs is noted in `record` when given (--dry_run gives none).
Layouts SearchLayouts(const TunerConfig& config, RunReport* record);

// trial_run.cc: one trial, and the nodes' agreement on the plan.

/// Runs `cfg` as a job of this launcher (job id `job_name`, logs in `dir_name` under the tuner
/// file's directory), with `deadline` seconds, and returns its outcome, merged across nodes.
TrialRun RunTrial(Search& search, const TunerConfig& config, const TrialConfig& cfg, int job_id,
                  const std::string& job_name, const std::string& dir_name, double deadline);
/// Across nodes, the nodes say what they are about to search and stop unless all say the same.
/// Returns 0, or the exit code.
int AgreeOnPlan(Search& search, const std::string& name, const Layouts& space,
                const fs::path& history_csv, const std::string& summary, const std::string& what);

// gbs_search.cc: the GBS pre-search.

/// The global batch size the pre-search found, or nullopt with `code` set.
std::optional<long> SearchGlobalBatchSize(Search& search, const TunerConfig& tuner, int& code);

}  // namespace pdlaunch::tuner_search
