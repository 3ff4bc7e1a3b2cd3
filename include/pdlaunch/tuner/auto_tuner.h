#pragma once

// The auto tuner's pure core (issue #28; docs/auto-tuner.md): the --auto_tuner_json file as
// Paddle's python/paddle/distributed/auto_tuner/ reads it, the ordered candidate list with its
// static prunes, the history prunes, the metric rule, the best trial and the history CSV. No I/O:
// run/auto_tuner.cc runs the trials.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pdlaunch {

/// One way a dimension reaches the script (`run_cmd`): `--flag value` (the value appended to a
/// prefix), `-o Key=value`, or a key of a JSON file set per trial.
struct RunCmdEntry {
  enum class Kind { kFlag, kOption, kFile };
  Kind kind = Kind::kFlag;
  std::string first;   ///< The flag ("--tensor_parallel_degree", "-o") or the JSON file.
  std::string second;  ///< The value's prefix (flag), "Key" (-o), or the dotted key (file).
  std::optional<std::string> third;  ///< JSON file: a prefix for the value, or a stage's literal.
};

/// The tuner's settings (Paddle's keys; docs/auto-tuner.md lists them with their defaults).
struct TunerConfig {
  std::string json_path;
  std::string search_algo = "grid";
  bool performance_first = false;  ///< schedule_mode "performance"; else "memory".
  // model_cfg
  std::optional<long> global_batch_size, num_layers, hidden_size, vocab_size, num_attention_heads,
      seq_length, max_sequence_length, intermediate_size;
  /// model_cfg.global_batch_size "auto" or absent: the GBS pre-search finds it first, then
  /// SettleGlobalBatchSize sets it (and the micro-batch sizes, which depend on it).
  bool gbs_auto = false;
  bool gbs_searched = false;  ///< The pre-search ran and SettleGlobalBatchSize set the batch.
  std::string mbs_spec;       ///< micro_batch_size as the file gives it (JSON text); empty: absent.
  bool use_sequence_parallel = false;
  /// Candidate values per dimension after the user's filter, in Paddle's order.
  std::vector<long> dp, mp, pp, sharding_degree, sharding_stage, vpp, mbs;
  std::vector<std::optional<bool>> use_recompute;
  std::vector<std::optional<std::string>> recompute_granularity;
  std::string metric_name;
  bool maximize = false;  ///< metric_cfg.OptimizationDirection == "Maximize".
  std::map<std::string, RunCmdEntry> run_cmd;
  std::vector<std::pair<std::string, RunCmdEntry>> search_stage, run_best_stage;
  int task_limit = 100;
  double max_time_per_task = 1800;
  double warmup_time = 1800;
  std::optional<double> max_search_time;
  std::optional<double> buffer, max_mem_usage;  ///< MiB, as recorder.py compares them.
  bool need_baseline = false;
  std::vector<std::string> invalid_strategy, schedule_prior;
  bool run_best = true;
  std::string best_cfg_dir;  ///< Default: <json dir>/best_cfg.
  std::string history_csv;   ///< <json dir>/<stem>_history.csv.
  std::string enhanced_csv;  ///< <json dir>/<stem>_history_enhanced.csv (dp_estimation).
  std::string resume_csv;    ///< resume_csv_file_path, default history_csv.
  long nodes = 1, gpus_per_node = 8, num_gpus = 8;
  /// search_algo "customize": the CSV of layouts to run, in its order (configs_csv; relative to
  /// the working directory, as Paddle opens it).
  std::string configs_csv;
  /// custom_search_dim: a dimension of the user's own, reaching the script through run_cmd by its
  /// key as the built-in ones do.
  struct CustomDim {
    std::string key;
    std::vector<std::string> values;  ///< JSON scalars as JSON text, in the file's order.
    bool prune = false;  ///< A value that ran prunes the values after it (the same layout).
  };
  std::vector<CustomDim> custom_dims;  ///< In the file's order.
  /// refined_recompute: the operators whose recompute is refined, each searched from 0 (every
  /// layer's recomputed) to num_layers / pp; reaches the script as one JSON object
  /// {"op": value, ...} at run_cmd.refined_recompute's key of a JSON file.
  std::vector<std::string> refined_recompute;
  /// memory_estimation_tool: a Python script that prints a layout's memory in MB; a layout it
  /// puts above max_mem_usage is pruned before launching. Empty: none.
  std::string memory_estimation_tool;
  /// search_algo dp_estimation (docs/auto-tuner.md, "dp_estimation"): the devices the layouts are
  /// for (search_algo.estimated_num_gpus). The candidates are those of that many devices (`nodes`
  /// and `num_gpus` are then the estimated cluster's, `given_nodes` the job's), and each layout
  /// runs with one data-parallel replica on mp x pp of this job's devices.
  std::optional<long> estimated_num_gpus;
  long given_nodes = 1;  ///< The job's nodes (`nodes` unless estimated_num_gpus).
  /// search_algo.conversion: a single-replica metric converted to the estimated data-parallel
  /// degree (Paddle's main.py): comm_time = model_size_b x (6 with amp, else 4) / bw; converted =
  /// step_time / (step_time + comm_time) x metric, for each bw of comm_bw.
  struct Conversion {
    std::string step_time;             ///< The step time's name in workerlog.0 (required).
    std::vector<double> comm_bw{100};  ///< In the order given; each a column of the history.
    std::vector<std::string> comm_bw_names{"100"};  ///< As Python prints them (100, 12.5).
    long model_size_b = 7;
    bool amp = false;
    bool need_unify = false;  ///< Also per device: the values divided by the trial's devices.
  };
  std::optional<Conversion> conversion;
  /// search_algo.sharding_overlap (grid): the arguments for a layout's shape, by the shape's name
  /// (sharding_mp, sharding_pp, sharding_mp_pp, no_overlap), each element as JSON text.
  std::map<std::string, std::vector<std::string>> sharding_overlap;
  /// What the run layer should say as a warning (Paddle's, e.g. dp_degree set to [1]).
  std::vector<std::string> warnings;
};

/// Parses the file's `text` for a job of `nodes` nodes of `gpus_per_node` devices. UsageError
/// naming the key and the problem for a malformed file, a key of the wrong type, or a key or
/// value pdlaunch does not support (never silently ignored).
TunerConfig ParseTunerConfig(const std::string& text, const std::string& json_path, long nodes,
                             long gpus_per_node);

/// The global batch size the GBS pre-search found: set, and the micro-batch candidates
/// (divisors of it, filtered by the file's micro_batch_size) computed, as a given one's are.
void SettleGlobalBatchSize(TunerConfig& config, long gbs);

/// One candidate layout.
struct TrialConfig {
  long dp = 1, mp = 1, pp = 1, sharding_degree = 1, sharding_stage = 1, mbs = 1, vpp = 1;
  std::optional<bool> use_recompute;
  std::optional<std::string> recompute_granularity;
  long global_batch_size = 0;
  long acc_steps = 0;  ///< gbs / dp / sharding / mbs.
  /// custom_search_dim's values, (key, value as JSON text), in TunerConfig::custom_dims' order.
  std::vector<std::pair<std::string, std::string>> custom;
  /// refined_recompute's values, (operator, value), in TunerConfig::refined_recompute's order.
  std::vector<std::pair<std::string, long>> refined;
  /// dp_estimation only (0 otherwise): the data-parallel degree of the estimated cluster this
  /// single-replica layout stands for (its dp x sharding there), and the devices and nodes the
  /// trial runs on (mp x pp).
  long estimated_dp = 0, trial_gpus = 0, trial_nodes = 0;
  /// dp_estimation with search_algo.sharding_overlap: a replica widened by sharding to the job's
  /// devices, run with (true) and without (false) the overlap's settings; nullopt otherwise.
  std::optional<bool> sharding_overlap = std::nullopt;
  bool operator==(const TrialConfig&) const = default;
};

/// search_algo "customize" (search.py CustomizeSearch, utils.py load_configs_from_csv): the
/// layouts of the CSV `text`, in its order, none pruned (Paddle runs them all). Columns by name:
/// dp_degree, mp_degree, pp_degree, vpp_degree, micro_batch_size, sharding_degree and
/// sharding_stage (integers >= 1), use_recompute (true or false), recompute_granularity (empty,
/// full, full_attn or core_attn); others ignored. UsageError naming the row and the column.
std::vector<std::pair<TrialConfig, std::optional<std::string>>> CustomizedLayouts(
    const std::string& text, const TunerConfig& config);

/// "dp2 mp4 pp1 vpp1 sharding1 stage1 mbs2 recompute=off", then " <op>=<value>" for each
/// refined_recompute operator and " <key>=<value>" for each custom_search_dim.
std::string Describe(const TrialConfig& cfg);

/// A layout's memory in MB as memory_estimation_tool says it; throws LaunchError when the tool
/// fails (the run layer runs it: the core stays free of I/O).
using MemoryEstimate = std::function<double(const TrialConfig&)>;

/// Every layout in Paddle's order (utils.py search_all), each with the reason a static prune
/// removed it (prune.py's registered rules), or nullopt when it stays a candidate. With
/// `estimate` (memory_estimation_tool), a layout that passed the rules before it (prune.py's
/// order: after the device count, before invalid_strategy) and is estimated above
/// max_mem_usage is pruned.
std::vector<std::pair<TrialConfig, std::optional<std::string>>> SearchSpace(
    const TunerConfig& config, const MemoryEstimate& estimate = nullptr);

/// memory_estimation_tool's arguments for `cfg` (prune.py prune_by_memory_estimation): --dp_degree
/// N --mp_degree N --pp_degree N --vpp_degree N --sharding_degree N --sharding_stage N
/// --use_recompute True|False|None --micro_batch_size N --recompute_granularity g|None, then
/// --hidden_size, --num_attention_heads, --num_layers, --max_sequence_length, --vocab_size and
/// --intermediate_size where model_cfg has them.
std::vector<std::string> MemoryEstimationArguments(const TrialConfig& cfg,
                                                   const TunerConfig& config);

/// The GBS pre-search's layouts (model_cfg.global_batch_size "auto"; utils.py
/// gbs_default_candidates), in order, each with the static prune that removed it: one layout of
/// the devices (sharding near their cube root, mp near the square root of the rest, pp the rest,
/// dp 1, stage 1, recompute off) with mbs 1, 2, 4 ... 512 and the global batch pp x sharding x
/// mbs. The search runs them in order and stops at the first without a metric or out of memory;
/// the last that ran is the global batch size.
std::vector<std::pair<TrialConfig, std::optional<std::string>>> GbsSearchSpace(
    const TunerConfig& config);

/// Paddle's log directory of a GBS trial: Job<id>_GBSSearch/GBS<gbs>_DP<dp>_MP<mp>_PP<pp>_
/// Sharding_degree_<sd>_stage_<st>_MBS<mbs>_Recompute_<r>_granularity_<g>.
std::string GbsTrialDirName(int job_id, const TrialConfig& cfg);

/// What one trial gave.
struct TrialOutcome {
  TrialConfig cfg;
  int job_id = 0;                    ///< 1, 2, ... (auto_tuner_<job_id>); 0 for pruned ones.
  std::optional<double> metric;      ///< None: no metric, an error or OOM.
  std::optional<double> memory_mib;  ///< Peak memory_used from the GPU log, when it ran.
  bool oom = false;
  bool timed_out = false;
  std::string error;  ///< "Out of memory", "timeout", "exit code 3", ...; empty when fine.
  double exec_time = 0;
  bool pruned = false;  ///< Pruned by history as OOM or slower: not run.
  /// search_algo.conversion's columns, in the history's order (ConversionColumns): the metric
  /// as the estimated cluster would see it. Empty without a conversion.
  std::vector<std::pair<std::string, std::optional<double>>> converted;
};

/// What one node saw of a trial: the facts the nodes of a search across several nodes exchange
/// after each trial (docs/auto-tuner.md, "Several nodes"), and what a one-node search classifies.
struct NodeOutcome {
  bool rank0 = false;                ///< This node ran rank 0: the metric is its workerlog.0's.
  std::optional<double> metric;      ///< From workerlog.0, where this node has it.
  std::optional<double> memory_mib;  ///< Peak of this node's GPU log.
  std::optional<double> step_time;   ///< search_algo.conversion.step_time, from workerlog.0.
  bool oom = false;           ///< Paddle's out-of-memory text in one of this node's worker logs.
  bool timed_out = false;     ///< This node's deadline (max_time_per_task) stopped the trial.
  int exit_code = 0;          ///< The trial job's, on this node.
  double exec_time = 0;       ///< Seconds the trial took here.
  double search_seconds = 0;  ///< Since this node's search began (max_search_time).
  /// dp_estimation across nodes: this node was not among the replica's nodes and ran nothing;
  /// only its search_seconds count in the merge.
  bool skipped = false;

  bool operator==(const NodeOutcome&) const = default;
};

/// {"rank0":true,"metric":240,...}: small, and every field of a peer's checked on the way back.
std::string EncodeNodeOutcome(const NodeOutcome& outcome);
/// nullopt when `text` is not such a record.
std::optional<NodeOutcome> DecodeNodeOutcome(const std::string& text);

/// The trial's outcome from every node's (Paddle's merge through etcd, made whole): out of
/// memory if any node ran out; timed out if any node's deadline stopped it; the exit code of the
/// first node (in the given order) that did not time out and failed; the metric of the node that
/// ran rank 0; the highest peak memory; the longest time. Throws LaunchError when more than one
/// node says it ran rank 0 (only one did: another record is not a node's of this search).
NodeOutcome MergeNodeOutcomes(const std::vector<NodeOutcome>& nodes);

/// Classifies `node` into `trial` (metric, memory, oom, timed_out, error, exec_time): out of
/// memory → "Out of memory", no metric; stopped at the deadline without a metric → "timeout"
/// (with one, the metric counts, as in Paddle); a failed job otherwise → "exit code N", no
/// metric.
void ClassifyOutcome(const NodeOutcome& node, TrialOutcome& trial);

/// search_algo.conversion's column names (Paddle's): unified_<metric>, then bw_<bw>_<metric>
/// and unified_bw_<bw>_<metric> for each comm_bw, then (with sharding_overlap)
/// overlap_bw_<bw>_<metric> for each. Empty without a conversion.
std::vector<std::string> ConversionColumns(const TunerConfig& config);

/// Sets `trial.converted` from its metric and the step time of its workerlog.0 (main.py's multi
/// dp conversion): each value None when either is missing. Nothing without a conversion.
void ConvertOutcome(TrialOutcome& trial, const TunerConfig& config,
                    const std::optional<double>& step_time);

/// utils.py add_overlap_performance: after the overlap variant of a replica (the last of
/// `history`) ran, its gain over the variant without overlap, (overlap - without) / without,
/// applied to the single replica's bw_ values as its overlap_bw_ ones. Nothing unless all three
/// gave a metric.
void AddOverlapPerformance(std::vector<TrialOutcome>& history, const TunerConfig& config);

/// dp_estimation's <stem>_history_enhanced.csv (recorder.py): the trials that ran without an
/// error, by the first comm_bw's unified value, highest first (those without one last); the
/// history's columns. Empty without a conversion.
std::string EnhancedHistoryCsv(const std::vector<TrialOutcome>& history, const TunerConfig& config);

/// prune.py's history rules: the reason `cfg` need not run given `history`, or nullopt. Sets
/// `oom` when the reason is that a smaller configuration already ran out of memory (Paddle
/// records it as OOM too, so that pruning chains).
std::optional<std::string> HistoryPrune(const TrialConfig& cfg,
                                        const std::vector<TrialOutcome>& history, bool& oom);
/// The same, with the rules that need the file: custom_search_dim's `prune` (a value that ran
/// prunes the later values of that dimension in the same layout).
std::optional<std::string> HistoryPrune(const TrialConfig& cfg,
                                        const std::vector<TrialOutcome>& history, bool& oom,
                                        const TunerConfig& config);

/// How many of `later` (the candidates still ahead) the last outcome of `history` prunes that
/// the history before it did not: the "(pruned N more)" of an OOM trial's line.
size_t NewlyPruned(const std::vector<TrialConfig>& later, const std::vector<TrialOutcome>& history,
                   const TunerConfig& config);

/// The search's time left, estimated: `trials_ahead` more trials of the mean `seconds_per_trial`
/// so far (later history prunes can shorten it, slower trials lengthen it), as "about 3 min
/// 20 s left"; empty when nothing is ahead.
std::string TimeLeft(size_t trials_ahead, double seconds_per_trial);

/// The metric in a worker log by Paddle's rule (utils.py read_metric_log): every line's first
/// "<name>: <number>" or "<number> <name>"; none → nullopt; fewer than 10 → the last; 10 to 19
/// → the mean of those from the 10th on; 20 or more → the mean of the last 10; rounded to 5
/// places. `name` is matched literally (Paddle puts it into a regex unescaped).
std::optional<double> ReadMetric(const std::string& log, const std::string& name);

/// Paddle's out-of-memory text ("Out of memory error on") in a worker log.
bool HasOutOfMemory(const std::string& log);

/// The index of the best outcome (recorder.py get_best): by the metric in its direction; with
/// `buffer` and `max_mem_usage`, the best one that uses less than max_mem_usage - buffer MiB
/// (else the one that uses least). nullopt when no trial gave a metric.
std::optional<size_t> BestTrial(const std::vector<TrialOutcome>& history,
                                const TunerConfig& config);

/// The trials with a metric (not out of memory, not pruned) for the final table: BestTrial's
/// choice first, then the others by the metric in its direction.
std::vector<size_t> RankedTrials(const std::vector<TrialOutcome>& history,
                                 const TunerConfig& config);

/// Line `place` (1-based) of the final table: the layout, its metric, its peak memory when known,
/// marked when it is over max_mem_usage - buffer, and its job: "1. dp2 mp1 ...  220  2400 MiB
/// (over max_mem_usage 2300 - buffer 100)  (Job3)".
std::string RankedLine(size_t place, const TrialOutcome& trial, const TunerConfig& config);

/// The history CSV (Paddle's columns: job_id, mp_degree, sharding_degree, pp_degree, dp_degree,
/// sharding_stage, micro_batch_size, vpp_degree, use_recompute, recompute_granularity,
/// acc_steps, global_batch_size, exec_time, <metric name>, max_mem_usage, error_info), the runs
/// in the order they ran.
std::string HistoryCsv(const std::vector<TrialOutcome>& history, const TunerConfig& config);
/// Reads such a CSV back (resume): the trials it lists; malformed rows are skipped.
std::vector<TrialOutcome> ParseHistoryCsv(const std::string& text, const TunerConfig& config);

/// Paddle's trial log directory name: Job<id>_GBS<gbs>_DP<dp>_MP<mp>_PP<pp>_VPP<vpp>_Sharding<sd>_
/// Stage<st>_MBS<mbs>_Recompute_<True|False|None>_Granularity_<g|None>_AccStep<acc>, then
/// _<Op><value> for each refined_recompute operator (mlp_row_ln 2: _MlpRowLn2), then
/// _<Key><value> for each custom_search_dim (use_flash_attn true: _UseFlashAttnTrue); a '/' (or
/// NUL) of those becomes '_', so that the name is one directory whatever the file says.
std::string TrialDirName(int job_id, const TrialConfig& cfg);

/// A JSON file key set for a trial.
struct FileEdit {
  std::string file;
  std::string dotted_key;
  std::string value_json;  ///< The value as JSON text (2, true, "stage2", null).
};

/// The trial's script arguments (utils.py gen_new_args): `raw` with `--flag value` and `-o K=v`
/// pairs appended per run_cmd, in Paddle's order (dp_degree, mp_degree, pp_degree, vpp_degree,
/// micro_batch_size, sharding_degree, sharding_stage, use_recompute, recompute_granularity,
/// local_batch_size, gradient_accumulation_steps, global_batch_size, sequence_parallel, then the
/// custom_search_dim keys), then the
/// stage's entries (search_stage, or run_best_stage for the best run); JSON file keys go to
/// `edits` instead.
std::vector<std::string> TrialArguments(const std::vector<std::string>& raw, const TrialConfig& cfg,
                                        const TunerConfig& config, bool best_run,
                                        std::vector<FileEdit>& edits);

}  // namespace pdlaunch
