#include "run/auto_tuner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/coord/store_exchange.h"
#include "pdlaunch/plan/training_command.h"
#include "pdlaunch/plan/yaml_edit.h"
#include "pdlaunch/process/console_echo.h"
#include "pdlaunch/process/device_probe.h"
#include "pdlaunch/process/launcher_signals.h"
#include "pdlaunch/process/run_recorder.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "run/launch_support.h"

namespace pdlaunch::internal {

namespace {

// Where a trial's launcher lines go, in its directory, unless --echo (RunTrial).
constexpr char kTrialConsoleLog[] = "launcher.log";

// --report: the processes recorded since `first` were of the job `job_id` (a trial, or the
// best run).
void MarkProcessesOfJob(size_t first, const std::string& job_id) {
  std::vector<ProcessRecord>& records = TheRunReport().processes;
  for (size_t i = first; i < records.size(); ++i) records[i].job_id = job_id;
}

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string ReadFile(const fs::path& path, size_t limit = 64 << 20) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  std::string text = out.str();
  if (text.size() > limit) text.erase(0, text.size() - limit);  // The end is what counts.
  return text;
}

// Writes `text` to `path` atomically (a temporary in the same directory, then rename).
void WriteAtomically(const fs::path& path, const std::string& text) {
  // Of this process: nodes that share a file system never write the same temporary.
  const fs::path temp = fmt::format("{}.tmp.{}", path.string(), ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw LaunchError(fmt::format("cannot write {}", path.string()));
  }
  fs::rename(temp, path);
}

// Sets a.b.c in a JSON document.
void SetDotted(Json& doc, const std::string& dotted, const Json& value) {
  Json* at = &doc;
  std::string key;
  std::istringstream in(dotted);
  std::vector<std::string> keys;
  for (std::string part; std::getline(in, part, '.');) keys.push_back(part);
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    if (!at->is_object()) *at = Json::object();
    at = &(*at)[keys[i]];
  }
  if (!at->is_object()) *at = Json::object();
  (*at)[keys.back()] = value;
}

// The trial's JSON and YAML files: a copy per trial (<stem>_<trial dir>.json or .yaml beside
// the file) that the script's arguments point at instead of the file; a file the arguments do
// not name is rewritten in place, as Paddle does (said once). A JSON file is written anew; in
// a YAML file only the lines of the keys change (plan/yaml_edit.h).
void ApplyEdits(const std::vector<FileEdit>& edits, const std::string& trial,
                std::vector<std::string>& args, bool& warned) {
  std::map<std::string, std::vector<const FileEdit*>> by_file;
  for (const FileEdit& edit : edits) by_file[edit.file].push_back(&edit);
  for (const auto& [file, file_edits] : by_file) {
    const fs::path path(file);
    const std::string extension = path.extension().string();
    const bool yaml = extension != ".json";
    std::string text;
    try {
      std::error_code ec;
      if (!fs::is_regular_file(path, ec)) throw LaunchError("no such file");
      text = ReadFile(path);
      if (yaml) {
        for (const FileEdit* edit : file_edits) {
          text = SetYamlValue(text, edit->dotted_key, edit->value_json);
        }
      } else {
        Json doc = Json::parse(text);
        for (const FileEdit* edit : file_edits) {
          SetDotted(doc, edit->dotted_key, Json::parse(edit->value_json));
        }
        text = doc.dump(2) + "\n";
      }
    } catch (const std::exception& e) {
      throw LaunchError(fmt::format("auto tuner: the {} file {} of run_cmd: {}",
                                    yaml ? "YAML" : "JSON", OneLine(file), OneLine(e.what())));
    }
    const std::string stem = path.stem().string();
    const fs::path copy = path.parent_path() / fmt::format("{}_{}{}", stem, trial, extension);
    bool named = false;
    for (std::string& arg : args) {
      if (arg == file) {
        arg = copy.string();
        named = true;
      }
    }
    if (!named) {
      if (!warned) {
        PDLOG_WARN(
            "auto tuner: {} is not among the script's arguments: it is rewritten in place "
            "for each trial, as Paddle does",
            OneLine(file));
        warned = true;
      }
      WriteAtomically(path, text);
    } else {
      WriteAtomically(copy, text);
    }
  }
}

std::string Outcome(const TrialOutcome& o, const TunerConfig& config, bool best) {
  if (o.oom) return "OOM";
  if (!o.metric) return o.error.empty() ? "no metric" : o.error;
  // dp_estimation's conversion: the first bandwidth's estimate for the whole cluster.
  std::string converted;
  if (o.converted.size() > 1) {
    converted = o.converted[1].second
                    ? fmt::format(", {} at dp{} (comm_bw {})", *o.converted[1].second,
                                  o.cfg.estimated_dp, config.conversion->comm_bw_names[0])
                    : fmt::format(", no {} to convert", config.conversion->step_time);
  }
  return fmt::format("{} {}{}{}{}", *o.metric, config.metric_name, converted,
                     o.timed_out ? " (stopped at its deadline)" : "", best ? " (best so far)" : "");
}

// What the trial's logs say on this node: the metric of workerlog.0 (rank 0's on the node that
// ran it, which `rank0` says), out of memory in any worker log, the peak of the GPU log.
void ReadTrialLogs(const fs::path& dir, const TunerConfig& config, NodeOutcome& o) {
  const std::string log0 = ReadFile(dir / "workerlog.0");
  o.metric = ReadMetric(log0, config.metric_name);
  if (config.conversion) o.step_time = ReadMetric(log0, config.conversion->step_time);
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().starts_with("workerlog") &&
        HasOutOfMemory(ReadFile(entry.path(), 16 << 20))) {
      o.oom = true;
    }
  }
  const auto& usage = TheRunReport().device_usage;
  for (const auto& device : usage) {
    o.memory_mib = std::max(o.memory_mib.value_or(0), device.peak_memory_used_mib);
  }
}

// The history CSV, and dp_estimation's enhanced one beside it (<stem>_history_enhanced.csv)
// when it converts, both after every trial.
void WriteHistory(const TunerConfig& config, const std::vector<TrialOutcome>& history) {
  WriteAtomically(config.history_csv, HistoryCsv(history, config));
  if (config.conversion) WriteAtomically(config.enhanced_csv, EnhancedHistoryCsv(history, config));
}

long NodesOf(const LaunchOptions& options) {
  // --ips lists the nodes (with --nnodes, if given, the same count: the path checks it).
  // --ips of one address beside --master and --nnodes is that master's job of --nnodes.
  if (const size_t ips = SplitAndStrip(options.ips, ',').size();
      options.WasGiven("ips") && ips > 1) {
    return static_cast<long>(ips);
  }
  const std::string nnodes = options.nnodes.value_or("1");
  try {
    return std::stol(nnodes.substr(0, nnodes.find(':')));
  } catch (...) {
    return 1;
  }
}

}  // namespace

std::string TrialKeyJob(const LaunchOptions& options, const std::string& job_name) {
  return fmt::format("{}:{}", options.job_id.value_or("default"), job_name);
}

const char* const kTunerNeedsAMaster =
    "--auto_tuner_json with --nnodes > 1 needs --master host:port or --master "
    "etcd://host:port, the same on every node, through which the nodes agree on every trial "
    "(with --ips, an HTTP --master beside it; in a Slurm step, --master makes each trial a job "
    "of that master; docs/auto-tuner.md)";

// The tuner file for this node's devices; `device_ids`, when given, gets those devices' ids in
// the job's order (dp_estimation's replicas take the first of them).
static TunerConfig LoadConfig(const LaunchOptions& options,
                              std::vector<int>* device_ids = nullptr) {
  const std::string json_path = *options.auto_tuner_json;
  if (!json_path.ends_with(".json")) {
    throw UsageError(
        fmt::format("--auto_tuner_json: '{}' must be a .json file", OneLine(json_path)));
  }
  std::error_code ec;
  if (!fs::is_regular_file(json_path, ec)) {
    throw UsageError(fmt::format("--auto_tuner_json: no such file: '{}'", OneLine(json_path)));
  }
  // The devices of this node, as the job would use them (Paddle: len(--devices), else 8).
  const DevicePlan devices = ResolveCollectiveDevices(options);
  long gpus = 0;
  for (const auto& ids : devices.devices_per_proc) {
    gpus += static_cast<long>(std::max<size_t>(1, ids.size()));
    if (device_ids) device_ids->insert(device_ids->end(), ids.begin(), ids.end());
  }
  TunerConfig config = ParseTunerConfig(ReadFile(json_path, 1 << 20), json_path,
                                        std::max(1L, NodesOf(options)), std::max(1L, gpus));
  for (const std::string& warning : config.warnings) PDLOG_WARN("auto tuner: {}", warning);
  if (config.estimated_num_gpus && config.given_nodes > 1 &&
      !(options.master && options.master->starts_with("etcd://"))) {
    throw UsageError(
        "--auto_tuner_json: dp_estimation across several nodes runs through --master "
        "etcd://host:port, as Paddle's: a replica of fewer nodes is an etcd job of the first "
        "of them (docs/auto-tuner.md)");
  }
  // Opened as Paddle opens it: relative to the working directory.
  if (!config.memory_estimation_tool.empty() &&
      !fs::is_regular_file(config.memory_estimation_tool, ec)) {
    throw UsageError(fmt::format("--auto_tuner_json: memory_estimation_tool: no such file: '{}'",
                                 OneLine(config.memory_estimation_tool)));
  }
  return config;
}

// The layouts of the search in its order, each with its static prune: the grid, or the CSV of
// search_algo customize.
static std::vector<std::pair<TrialConfig, std::optional<std::string>>> Layouts(
    const TunerConfig& config) {
  if (config.search_algo != "customize") {
    if (config.memory_estimation_tool.empty()) return SearchSpace(config);
    // memory_estimation_tool: run as Paddle runs it, once per layout the rules before it kept,
    // with the training script's Python (PADDLE_LAUNCH_PYTHON, else python3).
    const std::string& tool = config.memory_estimation_tool;
    return SearchSpace(config, [&](const TrialConfig& cfg) {
      // The signals wait while no loop runs: asked between two calls of the tool.
      if (const int signal = TakeTerminationSignal()) {
        TheRunReport().signal = signal;
        throw LaunchError(fmt::format("auto tuner: stopped by {} while memory_estimation_tool ran",
                                      SignalName(signal)),
                          128 + signal);
      }
      TrainingCommand command = ResolveTrainingCommand(tool, MemoryEstimationArguments(cfg, config),
                                                       GetEnv("PADDLE_LAUNCH_PYTHON"),
                                                       GetEnv("PATH").value_or("/bin:/usr/bin"));
      command.argv.front() = command.executable;
      const std::optional<std::string> out = CaptureOutput(command.argv, 60 * 1000);
      if (!out) {
        throw LaunchError(fmt::format(
            "auto tuner: memory_estimation_tool '{}' failed for {} (a non-zero exit, or no answer "
            "within 60 s)",
            OneLine(tool), Describe(cfg)));
      }
      const std::string text = OneLine(out->substr(0, 200));
      double mb = 0;
      try {
        size_t used = 0;
        mb = std::stod(*out, &used);
        if (!std::isfinite(mb) || mb < 0 ||
            out->find_first_not_of(" \t\r\n", used) != std::string::npos) {
          throw std::invalid_argument("not one number");
        }
      } catch (const std::exception&) {
        throw LaunchError(fmt::format(
            "auto tuner: memory_estimation_tool '{}' printed '{}' for {}, not a number of MB",
            OneLine(tool), text, Describe(cfg)));
      }
      PDLOG_DEBUG("auto tuner: {} is estimated at {} MB", Describe(cfg), mb);
      return mb;
    });
  }
  std::error_code ec;
  if (!fs::is_regular_file(config.configs_csv, ec)) {
    throw UsageError(fmt::format("--auto_tuner_json: configs_csv '{}' is not a file",
                                 OneLine(config.configs_csv)));
  }
  return CustomizedLayouts(ReadFile(config.configs_csv, 1 << 20), config);
}

int PrintAutoTunerPlan(const LaunchOptions& options) {
  const TunerConfig config = LoadConfig(options);
  if (config.gbs_auto) {
    // The search's layouts depend on the global batch size the pre-search will find.
    Json gbs = Json::array();
    for (const auto& [cfg, why] : GbsSearchSpace(config)) {
      gbs.push_back({{"layout", Describe(cfg)},
                     {"global_batch_size", cfg.global_batch_size},
                     {"log_dir", why ? Json(nullptr) : Json(GbsTrialDirName(1, cfg))},
                     {"pruned", why ? Json(*why) : Json(nullptr)}});
    }
    const Json out = {{"auto_tuner", *options.auto_tuner_json},
                      {"devices", config.num_gpus},
                      {"metric", config.metric_name},
                      {"gbs_search", gbs},
                      {"layouts", nullptr}};
    fmt::print("{}\n", out.dump(2, ' ', false, Json::error_handler_t::replace));
    return 0;
  }
  Json layouts = Json::array();
  int job_id = 0;  // As the trials would be numbered if no history prune removed one.
  for (const auto& [cfg, why] : Layouts(config)) {
    layouts.push_back({{"layout", Describe(cfg)},
                       {"log_dir", why ? Json(nullptr) : Json(TrialDirName(++job_id, cfg))},
                       {"pruned", why ? Json(*why) : Json(nullptr)}});
  }
  Json out = {{"auto_tuner", *options.auto_tuner_json},
              {"devices", config.given_nodes * config.gpus_per_node},
              {"metric", config.metric_name},
              {"layouts", layouts}};
  if (config.estimated_num_gpus) out["estimated_num_gpus"] = *config.estimated_num_gpus;
  fmt::print("{}\n", out.dump(2, ' ', false, Json::error_handler_t::replace));
  return 0;
}

namespace {

// What the trials of one search share.
struct Search {
  Search(const LaunchOptions& o, const JobRunner& r, const TunerExchange& e,
         const std::function<void()>& a)
      : options(o),
        run_job(r),
        exchange(e),
        announce(a),
        several(e != nullptr),  // Given for a search of several nodes only.
        base(fs::path(*o.auto_tuner_json).parent_path()) {}
  const LaunchOptions& options;
  const JobRunner& run_job;
  const TunerExchange& exchange;
  const std::function<void()>& announce;
  bool several = false;  // A search of several nodes: outcomes are exchanged.
  fs::path base;         // The tuner file's directory: the trials' logs are there.
  Clock::time_point search_start = Clock::now();  // Once the nodes met: their clock.
  // dp_estimation: this node's devices in the job's order (empty on CPUs), of which a trial of
  // one replica takes the first mp x pp.
  std::vector<int> device_ids;
  // This node's place among the nodes' sorted names (AgreeOnPlan), and the names: a
  // dp_estimation replica of k nodes runs on the first k.
  int node_index = 0;
  std::vector<std::string> node_names;
  bool warned = false;  // A run_cmd file rewritten in place was said.
  int launched = 0;     // Trials run here, of every stage (the first gets warmup_time).
};

// How one trial ended for the search.
struct TrialRun {
  enum class End { kMerged, kInterrupted, kNotAgreed } end = End::kMerged;
  TrialOutcome outcome;       // kMerged: the merged outcome; kInterrupted: this node's own view.
  int code = 0;               // kInterrupted, kNotAgreed: the launcher's exit code.
  double search_seconds = 0;  // kMerged across nodes: the longest search of any node.
};

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

// Runs `cfg` as a job of this launcher (job id `job_name`, logs in `dir_name` under the tuner
// file's directory), with `deadline` seconds, and returns its outcome, merged across nodes.
TrialRun RunTrial(Search& search, const TunerConfig& config, const TrialConfig& cfg, int job_id,
                  const std::string& job_name, const std::string& dir_name, double deadline) {
  ++search.launched;
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
  JobDeadline trial_deadline(deadline, "auto tuner: the trial reached its deadline",
                             " (max_time_per_task)");
  JobControls controls;
  controls.deadline = &trial_deadline;
  controls.one_of_a_sequence = search.several;
  controls.etcd_key_job = TrialKeyJob(search.options, job_name);
  if (cfg.trial_gpus) OneReplicaDevices(search, cfg, trial);
  // dp_estimation across nodes: a replica of k nodes is a job of the first k (AgreeOnPlan's
  // order, the same on every node); the others wait for its outcome.
  const bool subset = search.several && cfg.trial_nodes &&
                      cfg.trial_nodes < static_cast<long>(search.node_names.size());
  const bool takes_part = !subset || search.node_index < cfg.trial_nodes;
  if (subset) {
    trial.nnodes = std::to_string(cfg.trial_nodes);
    if (!takes_part) {
      PDLOG_INFO(
          "auto tuner: {} runs on the first {} of the {} nodes; this node waits for its "
          "outcome",
          job_name, cfg.trial_nodes, search.node_names.size());
    }
  }
  TheRunReport().device_usage.clear();
  const size_t processes_before = TheRunReport().processes.size();
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
  RunResult result;
  if (takes_part) {
    // A trial's own console (its ranks' output; the launcher's lines about it, an expected
    // out-of-memory trial's ABORT!!! among them) goes to its directory, the search's console
    // keeps one line per trial; --echo brings it all back (docs/auto-tuner.md).
    std::optional<ScopedLogToFile> to_file;
    if (!search.options.echo) {
      if (search.announce) search.announce();  // What was held is the search's: on the console.
      trial.echo = "none";
      std::error_code ec;
      fs::create_directories(trial.log_dir, ec);
      to_file.emplace((fs::path(trial.log_dir) / kTrialConsoleLog).string());
    }
    result = search.run_job(trial, controls);
    // A trial's failure is its outcome (the history, the trial's line), not the search's root
    // cause: --report's root_cause is the best run's, or null.
    TheRunReport().root_cause.reset();
    MarkProcessesOfJob(processes_before, *trial.job_id);
  }
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
  if (takes_part) ReadTrialLogs(trial.log_dir, config, here);
  // Every node has a workerlog.0 (each names its logs by local index): the one that ran global
  // rank 0 has the metric.
  const auto& records = TheRunReport().processes;
  here.rank0 = std::any_of(records.begin() + static_cast<long>(processes_before), records.end(),
                           [](const ProcessRecord& r) { return r.rank == 0; });
  if (TheRunReport().signal) {
    ClassifyOutcome(here, run.outcome);
    ConvertOutcome(run.outcome, config, here.step_time);
    run.end = TrialRun::End::kInterrupted;
    run.code = result.exit_code;
    return run;
  }
  if (search.several && TheRunReport().stopped_node) {
    // Another node was stopped (Ctrl-C, a scheduler's SIGTERM): its outcome never comes, and
    // waiting for it at the exchange would only end in "did not agree". Stopped here, as an
    // interrupted trial: out of the history, the same command resumes with it.
    PDLOG_ERROR("auto tuner: {} during {}; the search stops here", *TheRunReport().stopped_node,
                job_name);
    ClassifyOutcome(here, run.outcome);
    ConvertOutcome(run.outcome, config, here.step_time);
    run.end = TrialRun::End::kInterrupted;
    run.code = result.exit_code != 0 ? result.exit_code : 1;
    return run;
  }
  if (search.several) {
    // What each node saw, merged the same way on every node: the history stays one.
    ExchangeResult told;
    {
      const ScopedQuietInfo quiet;
      // A node that ran no part of the trial waits out the others' run: its deadline, then
      // their teardown.
      told = search.exchange(job_name + "_outcome", EncodeNodeOutcome(here), /*first=*/false,
                             job_name, takes_part ? 0 : deadline + search.options.grace + 60);
    }
    std::vector<NodeOutcome> nodes;
    for (const std::string& value : told.values) {
      const std::optional<NodeOutcome> node = DecodeNodeOutcome(value);
      if (!node) {
        throw LaunchError(fmt::format("auto tuner: a node's outcome of {} is not one: {}", job_name,
                                      OneLine(value.substr(0, 200))));
      }
      nodes.push_back(*node);
    }
    if (told.code > 128 && told.code <= 128 + 64) {  // A signal while waiting for the others.
      run.end = TrialRun::End::kInterrupted;
      run.code = told.code;
      ClassifyOutcome(here, run.outcome);
      ConvertOutcome(run.outcome, config, here.step_time);
      return run;
    }
    if (told.code != 0 || nodes.empty()) {
      run.end = TrialRun::End::kNotAgreed;
      run.code = told.code != 0 ? told.code : 1;
      return run;
    }
    here = MergeNodeOutcomes(nodes);
    run.search_seconds = here.search_seconds;
  }
  ClassifyOutcome(here, run.outcome);
  ConvertOutcome(run.outcome, config, here.step_time);
  return run;
}

// Across nodes, the nodes say what they are about to search (a digest of its plan exchanged)
// and stop unless all say the same. Returns 0, or the exit code.
int AgreeOnPlan(Search& search, const std::string& name,
                const std::vector<std::pair<TrialConfig, std::optional<std::string>>>& space,
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
  ExchangeResult agreed;
  {
    const ScopedQuietInfo quiet;
    agreed = search.exchange(name, mine + "\n" + me, /*first=*/true, "", 0);
  }
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

// The GBS pre-search (model_cfg.global_batch_size "auto"): the layouts of GbsSearchSpace in
// order until the first without a metric or out of memory; the last that ran gives the global
// batch size, or nullopt with `code` set. Its history is tuner_gbs_history.csv beside the tuner
// file, written after every trial and resumed from as the main history is.
std::optional<long> SearchGlobalBatchSize(Search& search, const TunerConfig& tuner, int& code) {
  const std::vector<std::pair<TrialConfig, std::optional<std::string>>> space =
      GbsSearchSpace(tuner);
  // Its layouts have no custom_search_dim or refined_recompute values: nor have its history's
  // columns, and its trials' arguments.
  TunerConfig config = tuner;
  config.search_algo = "gbs";  // Paddle's name for this stage's search; no conversion in it.
  config.conversion.reset();
  config.custom_dims.clear();
  config.refined_recompute.clear();
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
    ++job_id;
    const auto done =
        std::find_if(resumed.begin(), resumed.end(),
                     [&layout = cfg](const TrialOutcome& r) { return r.cfg == layout; });
    TrialOutcome outcome;
    std::string from;
    if (done != resumed.end()) {
      outcome = *done;
      outcome.job_id = job_id;
      from = fmt::format(" (from {})", csv.filename().string());
    } else {
      const TrialRun run = RunTrial(
          search, config, cfg, job_id, fmt::format("gbs_tuner_{}", job_id), GbsTrialDirName(1, cfg),
          search.launched == 0 ? config.warmup_time : config.max_time_per_task);
      if (run.end != TrialRun::End::kMerged) {
        WriteAtomically(csv, HistoryCsv(history, config));
        if (run.end == TrialRun::End::kInterrupted) {
          fmt::print(
              "auto tuner interrupted during GBS trial {}: history in {}; run the same "
              "command again to resume\n",
              job_id, csv.string());
        } else {
          PDLOG_ERROR(
              "auto tuner: the nodes did not agree on the outcome of GBS trial {} (a "
              "node stopped or is unreachable); the search stops here, history in {}",
              job_id, csv.string());
        }
        code = run.code;
        return std::nullopt;
      }
      outcome = run.outcome;
    }
    history.push_back(outcome);
    WriteAtomically(csv, HistoryCsv(history, config));
    const bool ran = outcome.metric && !outcome.oom;
    fmt::print("[GBS {}/{}] {} gbs{} → {}{}\n", index, space.size(), Describe(cfg),
               cfg.global_batch_size,
               ran ? fmt::format("ran ({} {})", *outcome.metric, config.metric_name)
                   : Outcome(outcome, config, false),
               from);
    std::fflush(stdout);
    if (!ran) break;
    found = cfg.global_batch_size;
  }
  if (!found && candidates == 0) {
    PDLOG_ERROR(
        "auto tuner: every layout of the GBS pre-search was pruned; --dry_run lists them "
        "with the reasons");
    code = 1;
    return std::nullopt;
  }
  if (!found) {
    PDLOG_ERROR(
        "auto tuner: the GBS pre-search found no global batch size that runs (its first "
        "layout gave no metric or ran out of memory); see its logs under {}",
        (search.base / "Job1_GBSSearch").string());
    code = 1;
    return std::nullopt;
  }
  PDLOG_INFO("auto tuner: global_batch_size {} (the largest of the GBS pre-search that ran)",
             *found);
  return found;
}

}  // namespace

int RunAutoTuner(const LaunchOptions& options, const JobRunner& run_job,
                 const TunerExchange& exchange, const std::function<void()>& announce) {
  const std::string json_path = *options.auto_tuner_json;
  Search search(options, run_job, exchange, announce);
  TunerConfig config = LoadConfig(options, &search.device_ids);
  const fs::path& base = search.base;
  const bool several = search.several;
  const Clock::time_point start = Clock::now();
  int job_id = 0;
  if (config.gbs_auto) {
    int code = 0;
    const std::optional<long> gbs = SearchGlobalBatchSize(search, config, code);
    if (!gbs) return code;
    SettleGlobalBatchSize(config, *gbs);
    config.gbs_searched = true;
    job_id = 1;  // Paddle's GBS stage is job 1: the search's trials are Job2, Job3, ...
  }
  std::error_code ec;
  const std::vector<std::pair<TrialConfig, std::optional<std::string>>> space = Layouts(config);
  std::vector<TrialConfig> candidates;
  for (const auto& [cfg, why] : space) {
    if (!why) candidates.push_back(cfg);
  }
  PDLOG_INFO(
      "auto tuner: {} layouts for {} device(s){}, {} pruned before launching, {} "
      "candidates (history: {})",
      space.size(), config.num_gpus,
      config.estimated_num_gpus
          ? fmt::format(" (estimated; one replica of each on this node's {})", config.gpus_per_node)
          : "",
      space.size() - candidates.size(), candidates.size(), config.history_csv);
  if (candidates.empty()) {
    throw LaunchError("auto tuner: every layout was pruned; --dry_run lists them with the reasons");
  }
  // Resume: what a previous search of the same file already ran.
  std::vector<TrialOutcome> history;
  std::vector<TrialOutcome> resumed;
  if (fs::is_regular_file(config.resume_csv, ec)) {
    resumed = ParseHistoryCsv(ReadFile(config.resume_csv), config);
    if (!resumed.empty()) {
      PDLOG_INFO("auto tuner: resuming from {} ({} trials done)", config.resume_csv,
                 resumed.size());
    }
  }
  if (several) {
    // Every node runs the same deterministic search: they agree first that it is the same, or
    // none starts a trial.
    const std::string summary = fmt::format("{} layouts, {} candidates, {} trials resumed",
                                            space.size(), candidates.size(), resumed.size());
    if (const int code =
            AgreeOnPlan(search, config.gbs_searched ? "auto_tuner_layouts" : "auto_tuner_plan",
                        space, config.resume_csv, summary, "layouts")) {
      return code;
    }
  }
  double search_seconds = 0;           // The longest any node has searched (max_search_time).
  search.search_start = Clock::now();  // After the nodes met: their time.
  const Clock::time_point search_start = search.search_start;
  int launched = 0;  // Trials of this stage run here (task_limit).
  std::optional<size_t> best;
  double trial_seconds = 0;  // Of the trials run here (not resumed), for the time left.
  for (size_t index = 0; index < candidates.size(); ++index) {
    const TrialConfig& cfg = candidates[index];
    bool oom = false;
    // Paddle's customize search runs every layout of its CSV: no history prune.
    const bool prunes = config.search_algo != "customize";
    if (const auto why = prunes ? HistoryPrune(cfg, history, oom, config) : std::nullopt) {
      TrialOutcome pruned;
      pruned.cfg = cfg;
      pruned.pruned = true;
      pruned.oom = oom;
      history.push_back(pruned);
      fmt::print("[{}/{}] {} → pruned: {}\n", index + 1, candidates.size(), Describe(cfg), *why);
      std::fflush(stdout);
      continue;
    }
    if (launched >= config.task_limit) {
      PDLOG_INFO("auto tuner: task_limit {} reached", config.task_limit);
      break;
    }
    // Across nodes, only the exchanged time decides: a node's own clock (which counted its wait
    // for the others to start) would end the search on it alone.
    if (!several)
      search_seconds = std::chrono::duration<double>(Clock::now() - search_start).count();
    // Across nodes, the longest search of the last exchange decides, the same on every node.
    if (config.max_search_time && search_seconds > *config.max_search_time) {
      PDLOG_INFO("auto tuner: max_search_time {} s reached", *config.max_search_time);
      break;
    }
    ++job_id;
    const auto done =
        std::find_if(resumed.begin(), resumed.end(),
                     [&layout = cfg](const TrialOutcome& r) { return r.cfg == layout; });
    TrialOutcome outcome;
    if (done != resumed.end()) {
      outcome = *done;
      outcome.job_id = job_id;
      history.push_back(outcome);
      fmt::print("[{}/{}] {} → {} (from {})\n", index + 1, candidates.size(), Describe(cfg),
                 Outcome(outcome, config, false), config.resume_csv);
    } else {
      ++launched;
      const TrialRun run =
          RunTrial(search, config, cfg, job_id, fmt::format("auto_tuner_{}", job_id),
                   TrialDirName(job_id, cfg),
                   search.launched == 0 ? config.warmup_time : config.max_time_per_task);
      if (run.end == TrialRun::End::kInterrupted) {
        // A trial that did not finish is no result (Paddle's order): left out of the history,
        // on one node as across nodes, so that the same command resumes with it.
        WriteHistory(config, history);
        fmt::print(
            "auto tuner interrupted during trial {}: history in {}; run the same command "
            "again to resume\n",
            job_id, config.history_csv);
        return run.code;
      }
      if (run.end == TrialRun::End::kNotAgreed) {
        // Not merged: left out of the history (see above), to be run again on resume.
        WriteHistory(config, history);
        PDLOG_ERROR(
            "auto tuner: the nodes did not agree on the outcome of trial {} (a node "
            "stopped or is unreachable); the search stops here, history in {}",
            job_id, config.history_csv);
        return run.code;
      }
      outcome = run.outcome;
      if (several) search_seconds = run.search_seconds;
      history.push_back(outcome);
    }
    // dp_estimation with sharding_overlap: the overlap's gain, onto its replica's row.
    AddOverlapPerformance(history, config);
    const std::optional<size_t> now_best = BestTrial(history, config);
    const bool improved = now_best && now_best != best && *now_best == history.size() - 1;
    best = now_best;
    if (done == resumed.end()) {
      trial_seconds += history.back().exec_time;
      const std::vector<TrialConfig> later(candidates.begin() + static_cast<long>(index) + 1,
                                           candidates.end());
      std::string more;
      if (const size_t pruned =
              prunes && history.back().oom ? NewlyPruned(later, history, config) : 0) {
        more = fmt::format(" (pruned {} more)", pruned);
      }
      size_t ahead = 0;  // The candidates the history does not prune yet.
      for (const TrialConfig& next : later) {
        bool oom_prune = false;
        if (!prunes || !HistoryPrune(next, history, oom_prune, config)) ++ahead;
      }
      ahead =
          std::min<size_t>(ahead, static_cast<size_t>(std::max(0, config.task_limit - launched)));
      const std::string left = TimeLeft(ahead, trial_seconds / launched);
      // A failure that is not an expected out-of-memory says where to look.
      if (!history.back().metric && !history.back().oom) {
        more += fmt::format(" (logs: {})", (base / TrialDirName(job_id, cfg)).string());
      }
      fmt::print("[{}/{}] {} → {}{}{}\n", index + 1, candidates.size(), Describe(cfg),
                 Outcome(history.back(), config, improved), more, left.empty() ? "" : "; " + left);
      std::fflush(stdout);
    }
    WriteHistory(config, history);
  }
  if (!best) {
    PDLOG_ERROR("auto tuner: no trial gave the metric {}; see the trials' logs under {}",
                config.metric_name, base.empty() ? "." : base.string());
    return 1;
  }
  // The best five, the one that runs first.
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
  const TrialOutcome& winner = history[*best];
  Json best_json = {
      {"dp_degree", winner.cfg.dp},
      {"mp_degree", winner.cfg.mp},
      {"pp_degree", winner.cfg.pp},
      {"vpp_degree", winner.cfg.vpp},
      {"sharding_degree", winner.cfg.sharding_degree},
      {"sharding_stage", winner.cfg.sharding_stage},
      {"micro_batch_size", winner.cfg.mbs},
      {"use_recompute", winner.cfg.use_recompute ? Json(*winner.cfg.use_recompute) : Json(nullptr)},
      {"recompute_granularity",
       winner.cfg.recompute_granularity ? Json(*winner.cfg.recompute_granularity) : Json(nullptr)},
      {"global_batch_size", winner.cfg.global_batch_size},
      {"acc_steps", winner.cfg.acc_steps},
      {"job_id", winner.job_id},
      {config.metric_name, *winner.metric}};
  for (const auto& [op, value] : winner.cfg.refined) best_json[op] = value;
  for (const auto& [key, value] : winner.cfg.custom) best_json[key] = Json::parse(value);
  if (config.estimated_num_gpus) {
    best_json["estimated_dp_degree"] = winner.cfg.estimated_dp;
    best_json["num_gpus"] = winner.cfg.trial_gpus;
    best_json["nodes"] = winner.cfg.trial_nodes;
    for (const auto& [name, value] : winner.converted) {
      best_json[name] = value ? Json(*value) : Json(nullptr);
    }
  }
  fs::create_directories(config.best_cfg_dir, ec);
  WriteAtomically(fs::path(config.best_cfg_dir) / "best_cfg.json", best_json.dump(2) + "\n");
  PDLOG_INFO("AutoTuner ended in {:.1f}s.",
             std::chrono::duration<double>(Clock::now() - start).count());
  if (config.estimated_num_gpus) {
    // As Paddle: the layouts ran as one replica of a cluster this job is not; nothing to run.
    fmt::print(
        "auto tuner: dp_estimation ran one replica of each layout for {} devices; the best "
        "is not run here (best_cfg.json in {}{})\n",
        *config.estimated_num_gpus, config.best_cfg_dir,
        config.conversion ? ", the converted metrics in " + config.enhanced_csv : "");
    if (several) exchange("", "", false, "", 0);
    return 0;
  }
  if (!config.run_best) return 0;
  fmt::print("Launch best cfg: {}\n", best_json.dump());
  std::fflush(stdout);
  LaunchOptions run = options;
  run.auto_tuner_json.reset();
  run.job_id = "best_cfg";
  run.log_dir = config.best_cfg_dir;
  JobControls controls;
  controls.one_of_a_sequence = several;
  controls.etcd_key_job = TrialKeyJob(options, "best_cfg");
  std::vector<FileEdit> edits;
  run.training_script_args =
      TrialArguments(options.training_script_args, winner.cfg, config, true, edits);
  ApplyEdits(edits, "best_cfg", run.training_script_args, search.warned);
  const size_t processes_before = TheRunReport().processes.size();
  const int code = run_job(run, controls).exit_code;
  MarkProcessesOfJob(processes_before, *run.job_id);
  if (several) exchange("", "", false, "", 0);  // The best was a job of every node: all are past.
  return code;
}

}  // namespace pdlaunch::internal
