// The files of an auto-tuner search: the tuner file and its layouts, a trial's copies of the
// run_cmd files, what a trial's logs say, the history; and --dry_run's plan.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/environment.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/exit_status.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/plan/training_command.h"
#include "pdlaunch/plan/yaml_edit.h"
#include "pdlaunch/process/device_probe.h"
#include "pdlaunch/process/launcher_signals.h"
#include "pdlaunch/process/run_report.h"
#include "tuner/search.h"

namespace pdlaunch {

using Json = nlohmann::json;

namespace tuner_search {
namespace {

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

}  // namespace

std::string ReadFile(const fs::path& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  std::string text = out.str();
  if (text.size() > limit) text.erase(0, text.size() - limit);  // The end is what counts.
  return text;
}

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
void ReadTrialLogs(const fs::path& dir, const TunerConfig& config, const RunReport& record,
                   NodeOutcome& o) {
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
  for (const auto& device : record.device_usage) {
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

void Search::Record(RunReport job, const std::string& job_id, bool outcome) const {
  if (outcome && job.root_cause) report.root_cause = report.processes.size() + *job.root_cause;
  if (outcome && !job.reason.empty()) report.reason = std::move(job.reason);
  for (ProcessRecord& process : job.processes) {
    process.job_id = job_id;
    report.processes.push_back(std::move(process));
  }
  if (job.signal) report.signal = job.signal;
  if (job.nodes > 0) {
    report.node_rank = job.node_rank;
    report.nodes = job.nodes;
  }
  report.device_usage = std::move(job.device_usage);  // The last job's: the best's, at the end.
}

TunerConfig LoadConfig(const LaunchOptions& options, const DeviceResolver& resolve_devices,
                       std::vector<int>* device_ids) {
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
  const DevicePlan devices = resolve_devices();
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

// The grid, or the CSV of search_algo customize.
Layouts SearchLayouts(const TunerConfig& config, RunReport* record) {
  if (config.search_algo != "customize") {
    if (config.memory_estimation_tool.empty()) return SearchSpace(config);
    // memory_estimation_tool: run as Paddle runs it, once per layout the rules before it kept,
    // with the training script's Python (PADDLE_LAUNCH_PYTHON, else python3).
    const std::string& tool = config.memory_estimation_tool;
    return SearchSpace(config, [&](const TrialConfig& cfg) {
      // The signals wait while no loop runs: asked between two calls of the tool.
      if (const int signal = TakeTerminationSignal()) {
        if (record != nullptr) record->signal = signal;
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

}  // namespace tuner_search

std::string TrialKeyJob(const LaunchOptions& options, const std::string& job_name) {
  return fmt::format("{}:{}", options.job_id.value_or("default"), job_name);
}

const char* const kTunerNeedsAMaster =
    "--auto_tuner_json with --nnodes > 1 needs --master host:port or --master "
    "etcd://host:port, the same on every node, through which the nodes agree on every trial "
    "(with --ips, an HTTP --master beside it; in a Slurm step, --master makes each trial a job "
    "of that master; docs/auto-tuner.md)";

int PrintAutoTunerPlan(const LaunchOptions& options, const DeviceResolver& devices) {
  const TunerConfig config = tuner_search::LoadConfig(options, devices);
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
  for (const auto& [cfg, why] : tuner_search::SearchLayouts(config, nullptr)) {
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

}  // namespace pdlaunch
