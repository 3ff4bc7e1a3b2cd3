// One trial of an auto-tuner search, run as a job of this launcher and merged across nodes, and
// the nodes' agreement on the plan before any trial.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/exit_status.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/coord/store_exchange.h"
#include "pdlaunch/process/console_echo.h"
#include "tuner/search.h"

namespace pdlaunch::tuner_search {
namespace {

using Json = nlohmann::json;

// This node's name among the nodes of a search: its address (--host, else POD_IP), else its
// host name, and the launcher's pid (nodes may share a host).
std::string NodeName(const LaunchOptions& options) {
  std::string host = options.host.value_or("");
  if (host.empty()) {
    if (const char* pod_ip = std::getenv("POD_IP")) host = pod_ip;
  }
  if (host.empty()) {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0) host = name;
  }
  return fmt::format("{} {}", OneLine(host.substr(0, 200)), ::getpid());
}

// Sets an environment variable (the trials' processes inherit the launcher's environment) and
// puts back what was there, or nothing, when it goes.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// dp_estimation: the trial of one replica runs on the first mp x pp devices of the job's (Paddle
// names devices 0 .. n-1 whatever --devices said), as many processes as the job would give them.
void OneReplicaDevices(const Search& search, const TrialConfig& cfg, LaunchOptions& trial) {
  const long per_node = cfg.trial_gpus / std::max(1L, cfg.trial_nodes);
  if (search.device_ids.empty()) {  // CPUs: one process per "device".
    trial.nproc_per_node = static_cast<int>(per_node);
    return;
  }
  std::string ids;
  for (long k = 0; k < per_node && k < static_cast<long>(search.device_ids.size()); ++k) {
    ids += (ids.empty() ? "" : ",") + std::to_string(search.device_ids[static_cast<size_t>(k)]);
  }
  (search.options.xpus ? trial.xpus : trial.gpus) = ids;
  if (trial.nproc_per_node &&
      (*trial.nproc_per_node > per_node || per_node % *trial.nproc_per_node)) {
    trial.nproc_per_node = static_cast<int>(per_node);
  }
}

// The trial's options: its job id and logs, its script's arguments (and the trial's copies of
// the run_cmd files), one replica's devices under dp_estimation.
LaunchOptions TrialOptions(Search& search, const TunerConfig& config, const TrialConfig& cfg,
                           const std::string& job_name, const std::string& dir_name) {
  LaunchOptions trial = search.options;
  trial.auto_tuner_json.reset();
  trial.job_id = job_name;
  trial.log_dir = (search.base / dir_name).string();
  trial.report.reset();
  std::vector<FileEdit> edits;
  trial.training_script_args =
      TrialArguments(search.options.training_script_args, cfg, config, false, edits);
  // A per-trial copy of a run_cmd file is named after the trial's directory (its last part).
  ApplyEdits(edits, fs::path(dir_name).filename().string(), trial.training_script_args,
             search.warned);
  if (cfg.trial_gpus) OneReplicaDevices(search, cfg, trial);
  return trial;
}

// dp_estimation across nodes: a replica of k nodes is a job of the first k (AgreeOnPlan's
// order, the same on every node); the others wait for its outcome. Whether this node runs a
// part of the trial.
bool TakesPart(const Search& search, const TrialConfig& cfg, const std::string& job_name,
               LaunchOptions& trial) {
  const bool subset = search.several && cfg.trial_nodes &&
                      cfg.trial_nodes < static_cast<long>(search.node_names.size());
  if (!subset) return true;
  trial.nnodes = std::to_string(cfg.trial_nodes);
  const bool takes_part = search.node_index < cfg.trial_nodes;
  if (!takes_part) {
    PDLOG_INFO(
        "auto tuner: {} runs on the first {} of the {} nodes; this node waits for its "
        "outcome",
        job_name, cfg.trial_nodes, search.node_names.size());
  }
  return takes_part;
}

// Runs this node's part of the trial. A trial's own console (its ranks' output; the launcher's
// lines about it, an expected out-of-memory trial's ABORT!!! among them) goes to its directory,
// the search's console keeps one line per trial; --echo brings it all back
// (docs/auto-tuner.md).
RunResult RunHere(Search& search, LaunchOptions& trial, const JobControls& controls) {
  std::optional<ScopedLogToFile> to_file;
  if (!search.options.echo) {
    if (search.announce) search.announce();  // What was held is the search's: on the console.
    trial.echo = "none";
    std::error_code ec;
    fs::create_directories(trial.log_dir, ec);
    to_file.emplace((fs::path(trial.log_dir) / kTrialConsoleLog).string());
  }
  RunResult result = search.run_job(trial, controls);
  search.Record(result.record, *trial.job_id, /*outcome=*/false);
  return result;
}

// This node's outcome merged with every other node's, the same way on every node: the history
// stays one. `run` ends kInterrupted (a signal while waiting) or kNotAgreed, or has the merged
// outcome in `here`.
void MergeAcrossNodes(Search& search, const std::string& job_name, bool takes_part, double deadline,
                      NodeOutcome& here, TrialRun& run) {
  // A node that ran no part of the trial waits out the others' run: its deadline, then their
  // teardown.
  const ExchangeResult told =
      search.Exchange(job_name + "_outcome", EncodeNodeOutcome(here), /*first=*/false, job_name,
                      takes_part ? 0 : deadline + search.options.grace + 60);
  std::vector<NodeOutcome> nodes;
  for (const std::string& value : told.values) {
    const std::optional<NodeOutcome> node = DecodeNodeOutcome(value);
    if (!node) {
      throw LaunchError(fmt::format("auto tuner: a node's outcome of {} is not one: {}", job_name,
                                    OneLine(value.substr(0, 200))));
    }
    nodes.push_back(*node);
  }
  if (SignalOfShellCode(told.code)) {  // A signal while waiting for the others.
    run.end = TrialRun::End::kInterrupted;
    run.code = told.code;
    return;
  }
  if (told.code != 0 || nodes.empty()) {
    run.end = TrialRun::End::kNotAgreed;
    run.code = told.code != 0 ? told.code : 1;
    return;
  }
  here = MergeNodeOutcomes(nodes);
  run.search_seconds = here.search_seconds;
}

}  // namespace

// Runs `cfg` as a job of this launcher (job id `job_name`, logs in `dir_name` under the tuner
// file's directory), with `deadline` seconds, and returns its outcome, merged across nodes.
TrialRun RunTrial(Search& search, const TunerConfig& config, const TrialConfig& cfg, int job_id,
                  const std::string& job_name, const std::string& dir_name, double deadline) {
  ++search.launched;
  LaunchOptions trial = TrialOptions(search, config, cfg, job_name, dir_name);
  JobDeadline trial_deadline(deadline, "auto tuner: the trial reached its deadline",
                             " (max_time_per_task)");
  JobControls controls;
  controls.deadline = &trial_deadline;
  controls.one_of_a_sequence = search.several;
  controls.etcd_key_job = TrialKeyJob(search.options, job_name);
  const bool takes_part = TakesPart(search, cfg, job_name, trial);
  const Clock::time_point t0 = Clock::now();
  // Paddle's dp_estimation and customize searches set FLAGS_shard_bypass_dygraph_optimizer for
  // their trials: 1 for a replica without sharding under dp_estimation (its optimizer skips the
  // sharding step), else 0. Around the trial only: the user's own value, or none, is back for
  // the next stage and the best run.
  std::optional<ScopedEnv> bypass;
  if (config.search_algo == "dp_estimation" || config.search_algo == "customize") {
    bypass.emplace("FLAGS_shard_bypass_dygraph_optimizer",
                   config.estimated_num_gpus && cfg.sharding_degree == 1 ? "1" : "0");
  }
  const RunResult result = takes_part ? RunHere(search, trial, controls) : RunResult{};
  bypass.reset();
  EndOpenConsoleLine();  // A rank stopped mid-line: the trial's line starts a line of its own.
  TrialRun run;
  run.outcome.cfg = cfg;
  run.outcome.job_id = job_id;
  NodeOutcome here;
  here.exit_code = result.exit_code;
  here.exec_time = std::chrono::duration<double>(Clock::now() - t0).count();
  here.timed_out = result.deadline_hit;
  here.search_seconds = std::chrono::duration<double>(Clock::now() - search.search_start).count();
  here.skipped = !takes_part;
  if (takes_part) ReadTrialLogs(trial.log_dir, config, result.record, here);
  // Every node has a workerlog.0 (each names its logs by local index): the one that ran global
  // rank 0 has the metric.
  const std::vector<ProcessRecord>& records = result.record.processes;
  here.rank0 = std::any_of(records.begin(), records.end(),
                           [](const ProcessRecord& r) { return r.rank == 0; });
  if (result.record.signal) {
    run.end = TrialRun::End::kInterrupted;
    run.code = result.exit_code;
  } else if (search.several && result.record.stopped_node) {
    // Another node was stopped (Ctrl-C, a scheduler's SIGTERM): its outcome never comes, and
    // waiting for it at the exchange would only end in "did not agree". Stopped here, as an
    // interrupted trial: out of the history, the same command resumes with it.
    PDLOG_ERROR("auto tuner: {} during {}; the search stops here", *result.record.stopped_node,
                job_name);
    run.end = TrialRun::End::kInterrupted;
    run.code = result.exit_code != 0 ? result.exit_code : 1;
  } else if (search.several) {
    MergeAcrossNodes(search, job_name, takes_part, deadline, here, run);
    if (run.end == TrialRun::End::kNotAgreed) return run;
  }
  ClassifyOutcome(here, run.outcome);
  ConvertOutcome(run.outcome, config, here.step_time);
  return run;
}

// A digest of the plan is exchanged.
int AgreeOnPlan(Search& search, const std::string& name, const Layouts& space,
                const fs::path& history_csv, const std::string& summary, const std::string& what) {
  // The plan: the whole tuner file (canonical: key order and spacing aside; the limits, the
  // metric's direction, run_best, the stages' arguments), the layouts with their prunes, and
  // the history the search resumes from.
  std::string plan = Json::parse(ReadFile(*search.options.auto_tuner_json, 1 << 20)).dump() + "\n";
  for (const auto& [cfg, why] : space) plan += Describe(cfg) + "|" + why.value_or("") + "\n";
  std::error_code ec;
  if (fs::is_regular_file(history_csv, ec)) plan += ReadFile(history_csv);
  const std::string mine = fmt::format("{}, plan {}", summary, ExchangeDigest(plan));
  // After the plan, a line naming this node (its address, else host name, and pid): sorted, the
  // nodes' names give each its place, by which dp_estimation picks the nodes of a replica.
  const std::string me = NodeName(search.options);
  const ExchangeResult agreed = search.Exchange(name, mine + "\n" + me, /*first=*/true, "", 0);
  if (agreed.code != 0) {
    PDLOG_ERROR("auto tuner: the {} nodes did not meet to agree on the search",
                NodesOf(search.options));
    return agreed.code;
  }
  std::vector<std::string> names;
  for (size_t node = 0; node < agreed.values.size(); ++node) {
    const std::string& value = agreed.values[node];
    const size_t newline = value.find('\n');
    if (value.substr(0, newline) != mine) {
      throw LaunchError(fmt::format(
          "auto tuner: the nodes do not search the same {} (here: {}; node {} of the exchange: "
          "{}): give every node the same --auto_tuner_json, devices and history CSV",
          what, mine, node, OneLine(value.substr(0, newline))));
    }
    names.push_back(newline == std::string::npos ? "" : value.substr(newline + 1));
  }
  std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
    throw LaunchError(
        fmt::format("auto tuner: two nodes name themselves '{}': give each its own "
                    "--host",
                    OneLine(*std::adjacent_find(names.begin(), names.end()))));
  }
  search.node_index = static_cast<int>(std::find(names.begin(), names.end(), me) - names.begin());
  search.node_names = names;
  PDLOG_INFO("auto tuner: the {} nodes search the same {}", agreed.values.size(), summary);
  return 0;
}

}  // namespace pdlaunch::tuner_search
