// The auto tuner's pure core (issue #28). Fixture: PaddleNLP's
// tests/test_tipc/auto_tuner/autoconfig/llama7b_pretrain.json (commit fa7b9934), as stored in
// tests/unit/plan/fixtures/. The small configurations' counts are worked out by hand below from
// Paddle's utils.py (dist_degree, search_all) and prune.py.
#include "pdlaunch/tuner/auto_tuner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "pdlaunch/base/errors.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;

TrialOutcome Ran(const TrialConfig& cfg, int job_id, std::optional<double> metric) {
  TrialOutcome outcome;
  outcome.cfg = cfg;
  outcome.job_id = job_id;
  outcome.metric = metric;
  return outcome;
}

const char* kSmall = R"({
  "dp_degree": "auto", "mp_degree": "auto", "micro_batch_size": "auto",
  "model_cfg": {"global_batch_size": 4},
  "metric_cfg": {"name": "tokens/s", "OptimizationDirection": "Maximize"},
  "run_cmd": {"dp_degree": ["--dp", ""], "mp_degree": ["-o", "Distributed.mp_degree"],
              "micro_batch_size": ["p.json", "train.mbs"]}
})";

std::vector<std::string> Layouts(const TunerConfig& config, bool kept_only = true) {
  std::vector<std::string> out;
  for (const auto& [cfg, why] : SearchSpace(config)) {
    if (!kept_only || !why) out.push_back(Describe(cfg) + (why ? " | " + *why : ""));
  }
  return out;
}

// 4 devices on one node: dp from divisors(4) ascending, mp from divisors(4) descending (memory
// mode); the degrees nested mp → sharding → pp → dp with dp * mp = 4; mbs from divisors(gbs 4)
// ascending with gbs % (mbs * dp) == 0. By hand: mp4/dp1 with mbs 1, 2, 4; mp2/dp2 with mbs 1,
// 2; mp1/dp4 with mbs 1: six layouts, none pruned.
TEST(AutoTunerTest, MemoryModeOrderOfASmallSpace) {
  const TunerConfig config = ParseTunerConfig(kSmall, "/t/tuner.json", 1, 4);
  EXPECT_EQ(Layouts(config),
            (std::vector<std::string>{"dp1 mp4 pp1 vpp1 sharding1 stage1 mbs1 recompute=-",
                                      "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs2 recompute=-",
                                      "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs4 recompute=-",
                                      "dp2 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=-",
                                      "dp2 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=-",
                                      "dp4 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=-"}));
  EXPECT_EQ(config.history_csv, "/t/tuner_history.csv");
  EXPECT_EQ(config.best_cfg_dir, "/t/best_cfg");
}

TEST(AutoTunerTest, PerformanceModeReversesTheOrders) {
  std::string text = kSmall;
  text.insert(1, R"("schedule_mode": "performance",)");
  EXPECT_EQ(Layouts(ParseTunerConfig(text, "t.json", 1, 4)),
            (std::vector<std::string>{"dp4 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=-",
                                      "dp2 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=-",
                                      "dp2 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=-",
                                      "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs4 recompute=-",
                                      "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs2 recompute=-",
                                      "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs1 recompute=-"}));
}

TEST(AutoTunerTest, InvalidStrategiesAllApplyWithWholeNumbers) {
  // Paddle applies only the last entry and reads one character ("mp16" as "1").
  std::string text = kSmall;
  text.insert(1, R"("invalid_strategy": ["mp4", "dp2_mbs2"],)");
  EXPECT_EQ(Layouts(ParseTunerConfig(text, "t.json", 1, 4), false),
            (std::vector<std::string>{
                "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs1 recompute=- | invalid_strategy mp4",
                "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs2 recompute=- | invalid_strategy mp4",
                "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs4 recompute=- | invalid_strategy mp4",
                "dp2 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=-",
                "dp2 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=- | invalid_strategy dp2_mbs2",
                "dp4 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=-"}));
}

// One device, recompute and granularity "auto": [True, False] × [full, full_attn, core_attn];
// with recompute off the granularity makes no difference (prune_by_recompute): four kept.
TEST(AutoTunerTest, RecomputeOffKeepsOneGranularity) {
  const char* text = R"({"use_recompute": "auto", "recompute_granularity": "auto",
    "model_cfg": {"global_batch_size": 1}, "metric_cfg": {"name": "m"}, "run_cmd": {}})";
  EXPECT_EQ(Layouts(ParseTunerConfig(text, "t.json", 1, 1), false),
            (std::vector<std::string>{
                "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=full",
                "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=full_attn",
                "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=core_attn",
                "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=off",
                "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=off | recompute off: the "
                "granularity makes no difference",
                "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=off | recompute off: the "
                "granularity makes no difference"}));
}

// Two devices: sharding "auto" gives [2, 1], stage "auto" [3, 2, 1]; dp absent is [1], so only
// sharding 2 makes two devices; with pp 2 (a second pipeline stage) stages 2 and 3 are refused.
TEST(AutoTunerTest, ShardingStagesAndPipelines) {
  const char* text = R"({"sharding_degree": "auto", "sharding_stage": "auto",
    "model_cfg": {"global_batch_size": 2}, "metric_cfg": {"name": "m"}, "run_cmd": {}})";
  EXPECT_EQ(Layouts(ParseTunerConfig(text, "t.json", 1, 2)),
            (std::vector<std::string>{"dp1 mp1 pp1 vpp1 sharding2 stage3 mbs1 recompute=-",
                                      "dp1 mp1 pp1 vpp1 sharding2 stage2 mbs1 recompute=-",
                                      "dp1 mp1 pp1 vpp1 sharding2 stage1 mbs1 recompute=-"}));
  // mbs "auto": divisors of 8 with 8 % (mbs * 2) == 0, so 1, 2, 4; mbs 4 leaves one micro batch
  // for two pipeline stages (prune_by_mbs comes before prune_by_sharding). The stage varies slower
  // than the mbs (itertools.product(stage, mbs, ...)).
  const char* piped = R"({"sharding_degree": "auto", "sharding_stage": "auto", "pp_degree": 2,
    "micro_batch_size": "auto",
    "model_cfg": {"global_batch_size": 8, "num_layers": 4}, "metric_cfg": {"name": "m"},
    "run_cmd": {}})";
  EXPECT_EQ(Layouts(ParseTunerConfig(piped, "t.json", 1, 4), false),
            (std::vector<std::string>{
                "dp1 mp1 pp2 vpp1 sharding2 stage3 mbs1 recompute=- | sharding stage 3 with pp 2",
                "dp1 mp1 pp2 vpp1 sharding2 stage3 mbs2 recompute=- | sharding stage 3 with pp 2",
                "dp1 mp1 pp2 vpp1 sharding2 stage3 mbs4 recompute=- | acc_steps 1 below pp 2",
                "dp1 mp1 pp2 vpp1 sharding2 stage2 mbs1 recompute=- | sharding stage 2 with pp 2",
                "dp1 mp1 pp2 vpp1 sharding2 stage2 mbs2 recompute=- | sharding stage 2 with pp 2",
                "dp1 mp1 pp2 vpp1 sharding2 stage2 mbs4 recompute=- | acc_steps 1 below pp 2",
                "dp1 mp1 pp2 vpp1 sharding2 stage1 mbs1 recompute=-",
                "dp1 mp1 pp2 vpp1 sharding2 stage1 mbs2 recompute=-",
                "dp1 mp1 pp2 vpp1 sharding2 stage1 mbs4 recompute=- | acc_steps 1 below pp 2"}));
}

TEST(AutoTunerTest, PaddleNlpsLlama7bConfigParsesAndKeepsItsRules) {
  std::ifstream in(std::string(PDLAUNCH_TEST_SOURCE_DIR) +
                   "/unit/plan/fixtures/llama7b_pretrain.json");
  std::stringstream text;
  text << in.rdbuf();
  const TunerConfig config = ParseTunerConfig(text.str(), "autoconfig/llama7b_pretrain.json", 1, 8);
  EXPECT_TRUE(config.maximize);
  EXPECT_EQ(config.max_time_per_task, 400);
  EXPECT_EQ(config.task_limit, 2000);
  // mp: divisors of 8 that divide 5120, 40 and 32000: all of 8, 4, 2, 1.
  EXPECT_EQ(config.mp, (std::vector<long>{8, 4, 2, 1}));
  // pp: divisors of 8 that divide num_layers 40: 8, 4, 2, 1.
  EXPECT_EQ(config.pp, (std::vector<long>{8, 4, 2, 1}));
  const auto space = SearchSpace(config);
  std::vector<TrialConfig> kept;
  for (const auto& [cfg, why] : space) {
    if (!why) kept.push_back(cfg);
  }
  ASSERT_FALSE(kept.empty());
  for (const TrialConfig& c : kept) {
    EXPECT_EQ(c.dp * c.mp * c.pp * c.sharding_degree, 8);
    EXPECT_FALSE(c.sharding_stage == 3 && c.mp > 1) << Describe(c);  // invalid_strategy.
    EXPECT_FALSE(c.pp > 1 && c.sharding_stage != 1 && c.sharding_degree > 1) << Describe(c);
    EXPECT_EQ(8 % (c.mbs * c.dp * c.sharding_degree), 0) << Describe(c);
  }
  // schedule_prior ["mp4"] puts the mp 4 candidates first.
  EXPECT_EQ(space.front().first.mp, 4);
  // The script's parameters go to its JSON file: sharding_stage as "stage<N>".
  std::vector<FileEdit> edits;
  const std::vector<std::string> args =
      TrialArguments({"run_pretrain.py"}, kept.front(), config, false, edits);
  EXPECT_EQ(args, std::vector<std::string>{"run_pretrain.py"});
  bool stage = false, benchmark = false;
  for (const FileEdit& e : edits) {
    EXPECT_EQ(e.file, "./autoconfig/llama7b_pretrain_params.json");
    if (e.dotted_key == "sharding") {
      stage = true;
      EXPECT_EQ(e.value_json, "\"stage" + std::to_string(kept.front().sharding_stage) + "\"");
    }
    if (e.dotted_key == "autotuner_benchmark") {
      benchmark = true;
      EXPECT_EQ(e.value_json, "1");
    }
  }
  EXPECT_TRUE(stage && benchmark);
}

TEST(AutoTunerTest, ArgumentsPerRunCmdStyle) {
  const TunerConfig config = ParseTunerConfig(kSmall, "t.json", 1, 4);
  TrialConfig c;
  c.dp = 2;
  c.mp = 2;
  c.mbs = 2;
  c.global_batch_size = 4;
  c.acc_steps = 1;
  std::vector<FileEdit> edits;
  EXPECT_EQ(
      TrialArguments({"train.py", "x"}, c, config, false, edits),
      (std::vector<std::string>{"train.py", "x", "--dp", "2", "-o", "Distributed.mp_degree=2"}));
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].dotted_key, "train.mbs");
  EXPECT_EQ(edits[0].value_json, "2");
  EXPECT_EQ(TrialDirName(7, c),
            "Job7_GBS4_DP2_MP2_PP1_VPP1_Sharding1_Stage1_MBS2_Recompute_None_Granularity_None_"
            "AccStep1");
}

// search_algo.sharding_overlap of a grid search (utils.py
// gen_sharding_overlap_args_of_grid_search): the layout's shape picks the entry; flags go as
// pairs with str() of the value, -o entries as they are, file keys as edits; after everything
// else gen_new_args appends.
TEST(AutoTunerTest, ShardingOverlapArgumentsByTheLayoutsShape) {
  std::string text = kSmall;
  text.insert(1, R"("search_algo": {"name": "grid", "sharding_overlap": {
      "sharding_mp": ["--sharding_parallel_config", "enable_stage1_overlap", "--level", 2],
      "sharding_pp": ["p.json", "overlap.pp", true],
      "sharding_mp_pp": ["c.yaml", "a.b", 1, "c", "x"],
      "no_overlap": ["-o", "Overlap=False"]}},)");
  const TunerConfig config = ParseTunerConfig(text, "t.json", 1, 8);
  const auto args = [&](long mp, long pp, long sharding, std::vector<FileEdit>& edits) {
    TrialConfig c;
    c.mp = mp;
    c.pp = pp;
    c.sharding_degree = sharding;
    c.global_batch_size = 4;
    return TrialArguments({"t.py"}, c, config, false, edits);
  };
  std::vector<FileEdit> edits;
  EXPECT_EQ(args(2, 1, 2, edits),
            (std::vector<std::string>{"t.py", "--dp", "1", "-o", "Distributed.mp_degree=2",
                                      "--sharding_parallel_config", "enable_stage1_overlap",
                                      "--level", "2"}));
  EXPECT_EQ(args(2, 1, 1, edits),  // No sharding: no_overlap.
            (std::vector<std::string>{"t.py", "--dp", "1", "-o", "Distributed.mp_degree=2", "-o",
                                      "Overlap=False"}));
  edits.clear();
  EXPECT_EQ(args(1, 2, 2, edits).size(), 5u);  // t.py --dp 1 -o Distributed.mp_degree=1.
  ASSERT_EQ(edits.size(), 2u);  // train.mbs of p.json (run_cmd), then the overlap's key.
  EXPECT_EQ((std::vector<std::string>{edits[1].file, edits[1].dotted_key, edits[1].value_json}),
            (std::vector<std::string>{"p.json", "overlap.pp", "true"}));
  edits.clear();
  args(2, 2, 2, edits);
  ASSERT_EQ(edits.size(), 3u);
  EXPECT_EQ(edits[1].dotted_key + "=" + edits[1].value_json, "a.b=1");
  EXPECT_EQ(edits[2].dotted_key + "=" + edits[2].value_json, "c=\"x\"");

  const auto error = [&](const std::string& overlap) {
    std::string bad = kSmall;
    bad.insert(1, R"("search_algo": {"name": "grid", "sharding_overlap": )" + overlap + "},");
    return ErrorOf<UsageError>([&] { ParseTunerConfig(bad, "t.json", 1, 8); });
  };
  EXPECT_EQ(error(R"({"sharding_dp": ["--x", 1]})"),
            "--auto_tuner_json: search_algo.sharding_overlap.sharding_dp: expected sharding_mp, "
            "sharding_pp, sharding_mp_pp or no_overlap");
  EXPECT_EQ(error(R"({"sharding_mp": ["--x", 1, "--y"]})"),
            "--auto_tuner_json: search_algo.sharding_overlap.sharding_mp: expected pairs of a "
            "--flag and its value");
  EXPECT_EQ(error(R"({"sharding_mp": ["p.json", "k"]})"),
            "--auto_tuner_json: search_algo.sharding_overlap.sharding_mp: expected [file.json, "
            "\"key\", value]");
}

TEST(AutoTunerTest, HistoryPrunesChainOutOfMemory) {
  TrialConfig small;
  small.mbs = 1;
  small.global_batch_size = 8;
  TrialConfig big = small;
  big.mbs = 4;
  TrialConfig mid = small;
  mid.mbs = 2;
  bool oom = false;
  std::vector<TrialOutcome> history;
  TrialOutcome ran = Ran(big, 1, 100.0);
  history.push_back(ran);
  EXPECT_EQ(HistoryPrune(mid, history, oom), "mbs 4 ran, a smaller one is slower");
  EXPECT_FALSE(oom);
  history.clear();
  TrialOutcome failed = Ran(small, 1, std::nullopt);
  failed.oom = true;
  history.push_back(failed);
  EXPECT_EQ(HistoryPrune(mid, history, oom), "mbs 1 ran out of memory");
  EXPECT_TRUE(oom);
  TrialConfig stage1 = small, stage2 = small;
  stage2.sharding_stage = 2;
  EXPECT_EQ(HistoryPrune(stage2, {Ran(stage1, 1, 5.0)}, oom),
            "stage 1 ran, a higher one is slower");
  TrialConfig on = small;
  on.use_recompute = true;
  on.recompute_granularity = "full";
  TrialConfig off = small;
  off.use_recompute = false;
  off.recompute_granularity = "full";
  EXPECT_EQ(HistoryPrune(on, {Ran(off, 1, 5.0)}, oom), "less recompute ran, more is slower");
  EXPECT_EQ(HistoryPrune(small, {}, oom), std::nullopt);
}

TEST(AutoTunerTest, TheTrialLineCountsWhatAnOomPrunesAndTheTimeLeft) {
  // issue #28 item 6: "→ OOM (pruned 2 more)" and the time left at most.
  TrialConfig small;
  small.mbs = 1;
  small.global_batch_size = 8;
  TrialConfig mid = small, big = small, other = small;
  mid.mbs = 2;
  big.mbs = 4;
  other.mp = 2;
  TrialOutcome failed = Ran(small, 1, std::nullopt);
  failed.oom = true;
  EXPECT_EQ(NewlyPruned({mid, big, other}, {failed}, TunerConfig{}),
            2u);  // The larger batches of its layout.
  EXPECT_EQ(NewlyPruned({mid, big}, {failed, Ran(other, 2, 5.0)}, TunerConfig{}),
            0u);  // Not the last one's.
  EXPECT_EQ(NewlyPruned({mid}, {}, TunerConfig{}), 0u);
  EXPECT_EQ(TimeLeft(0, 12.0), "");
  EXPECT_EQ(TimeLeft(3, 12.4), "about 37 s left");
  EXPECT_EQ(TimeLeft(2, 0.3), "under 1 s left");
  EXPECT_EQ(TimeLeft(10, 20.0), "about 3 min 20 s left");
  EXPECT_EQ(TimeLeft(40, 1800.0), "about 20 h 0 min left");
}

TEST(AutoTunerTest, MetricByPaddlesRule) {
  const auto log = [](int n, int from) {
    std::string text;
    for (int i = 0; i < n; ++i) text += "step, tokens/s: " + std::to_string(from + i) + "\n";
    return text;
  };
  EXPECT_EQ(ReadMetric("", "tokens/s"), std::nullopt);
  EXPECT_EQ(ReadMetric(log(3, 1), "tokens/s"), 3);                      // < 10: the last.
  EXPECT_EQ(ReadMetric(log(12, 1), "tokens/s"), (10 + 11 + 12) / 3.0);  // 10-19: from the 10th.
  EXPECT_EQ(ReadMetric(log(25, 1), "tokens/s"), (16 + 25) / 2.0);       // >= 20: the last 10.
  EXPECT_EQ(ReadMetric("speed 12.5 tokens/s\n", "tokens/s"), 12.5);
  EXPECT_EQ(ReadMetric("a.b: 7\naxb: 9\n", "a.b"), 7);  // The name is literal, not a regex.
  // The leftmost match, as re.search: the first alternative where both start at one place.
  EXPECT_EQ(ReadMetric("3 ms then ms: 4\n", "ms"), 3);
  EXPECT_EQ(ReadMetric("ms:: 5 and 6 ms\n", "ms"), 5);
  EXPECT_EQ(ReadMetric("took 2. ms\n", "ms"), 2);
  EXPECT_EQ(ReadMetric("ms: none\n", "ms"), std::nullopt);
  // Hostile review #38 item 6: 30 000 digits overflowed std::regex's stack (SIGSEGV); a number
  // too long for a double is no metric, and a long line costs one pass.
  const std::string digits(30000, '7');
  EXPECT_EQ(ReadMetric("tokens/s: " + digits + "\n", "tokens/s"), std::nullopt);
  EXPECT_EQ(ReadMetric(digits + " tokens/s\ntokens/s: 8\n", "tokens/s"), 8);
  EXPECT_EQ(ReadMetric(std::string(60000, '9') + "\n", "tokens/s"), std::nullopt);
  EXPECT_TRUE(HasOutOfMemory("x\nOut of memory error on GPU 0: ...\n"));
  EXPECT_FALSE(HasOutOfMemory("out of memory"));
}

TEST(AutoTunerTest, BestAndTheHistoryCsvRoundTrip) {
  TunerConfig config = ParseTunerConfig(kSmall, "t.json", 1, 4);
  TrialConfig a, b, c;
  a.mbs = 1;
  b.mbs = 2;
  c.mbs = 4;
  std::vector<TrialOutcome> history = {Ran(a, 1, 10.0), Ran(b, 2, 30.0), Ran(c, 3, std::nullopt)};
  history[0].memory_mib = 1000;
  history[1].memory_mib = 39000;
  history[2].oom = true;
  history[2].error = "Out of memory";
  EXPECT_EQ(BestTrial(history, config), 1u);
  config.max_mem_usage = 40960;
  config.buffer = 4096;  // 39000 is past 40960 - 4096: the one that fits wins.
  EXPECT_EQ(BestTrial(history, config), 0u);
  // The final table shows it first, and the faster one marked (issue #42 item 1).
  EXPECT_EQ(RankedTrials(history, config), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(RankedLine(2, history[1], config).substr(RankedLine(2, history[1], config).find("30")),
            "30  39000 MiB (over max_mem_usage 40960 - buffer 4096)  (Job2)");
  const std::string csv = HistoryCsv(history, config);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "job_id,mp_degree,sharding_degree,pp_degree,dp_degree,sharding_stage,"
            "micro_batch_size,vpp_degree,use_recompute,recompute_granularity,acc_steps,"
            "global_batch_size,exec_time,tokens/s,max_mem_usage,error_info");
  const std::vector<TrialOutcome> back = ParseHistoryCsv(csv, config);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[1].cfg, b);
  EXPECT_EQ(back[1].metric, 30.0);
  EXPECT_EQ(back[1].memory_mib, 39000);
  EXPECT_TRUE(back[2].oom);
  EXPECT_EQ(back[2].error, "Out of memory");
  // Hostile review #38 item 6: a `nan` or `inf` made an out-of-memory layout the best. Such a
  // row is no history: the trial runs again.
  std::string forged = csv;
  const size_t at = forged.find(",30,");
  ASSERT_NE(at, std::string::npos) << forged;
  forged.replace(at, 4, ",nan,");
  EXPECT_EQ(ParseHistoryCsv(forged, config).size(), 2u);
  forged.replace(forged.find(",nan,"), 5, ",inf,");
  EXPECT_EQ(ParseHistoryCsv(forged, config).size(), 2u);
}

TEST(AutoTunerTest, CustomizeRunsTheLayoutsOfItsCsvInOrder) {
  // search.py CustomizeSearch and utils.py load_configs_from_csv (issue #28 item 2).
  TunerConfig config = ParseTunerConfig(R"({"model_cfg": {"global_batch_size": 16},
    "metric_cfg": {"name": "m"}, "run_cmd": {}, "search_algo": {"name": "customize"},
    "configs_csv": "layouts.csv"})",
                                        "t.json", 1, 8);
  EXPECT_EQ(config.search_algo, "customize");
  // Inside search_algo too (issue #42 item 9: the docs showed it there), and never both.
  const char* kInside = R"({"model_cfg": {"global_batch_size": 16}, "metric_cfg": {"name": "m"},
    "run_cmd": {}, "search_algo": {"name": "customize", "configs_csv": "layouts.csv"}})";
  EXPECT_EQ(ParseTunerConfig(kInside, "t.json", 1, 8).configs_csv, "layouts.csv");
  EXPECT_EQ(ErrorOf<UsageError>([] {
              ParseTunerConfig(R"({"model_cfg": {"global_batch_size": 16},
                "metric_cfg": {"name": "m"}, "run_cmd": {}, "configs_csv": "b.csv",
                "search_algo": {"name": "customize", "configs_csv": "a.csv"}})",
                               "t.json", 1, 8);
            }),
            "--auto_tuner_json: configs_csv: 'b.csv' here and 'a.csv' in search_algo: give one");
  const std::string csv =
      "dp_degree,mp_degree,pp_degree,vpp_degree,micro_batch_size,sharding_degree,sharding_stage,"
      "use_recompute,recompute_granularity,note\n"
      "4,2,1,1,2,1,1,False,,fast\n"
      "8,1,1,1,1,1,1,true,full,small\n";
  const auto layouts = CustomizedLayouts(csv, config);
  ASSERT_EQ(layouts.size(), 2u);
  EXPECT_EQ(Describe(layouts[0].first), "dp4 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=off");
  EXPECT_EQ(layouts[0].first.acc_steps, 2);  // 16 / 4 / 1 / 2.
  EXPECT_EQ(layouts[1].first.recompute_granularity, "full");
  EXPECT_FALSE(layouts[1].second);  // Nothing pruned: Paddle runs them all.
  const auto error = [&](const std::string& text) {
    return ErrorOf<UsageError>([&] { CustomizedLayouts(text, config); });
  };
  EXPECT_EQ(error("dp_degree,mp_degree\n4,x\n"),
            "configs_csv 'layouts.csv' row 2: mp_degree must be an integer >= 1, got 'x'");
  EXPECT_EQ(error(csv.substr(0, csv.find('\n') + 1) + "4,2,1,1,2,1,1,maybe,,x\n"),
            "configs_csv 'layouts.csv' row 2: use_recompute must be true or false, got 'maybe'");
  EXPECT_EQ(error(csv.substr(0, csv.find('\n') + 1) + "3,2,1,1,2,1,1,false,,x\n"),
            "configs_csv 'layouts.csv' row 2: global_batch_size 16 is not a multiple of dp_degree "
            "3 x sharding_degree 1 x micro_batch_size 2");
}

// custom_search_dim (utils.py search_all, gen_new_args, the log_dir of tuner.py, prune.py
// prune_by_custom_search_dim_history): the product of the values in the file's order (not the
// keys' sorted order), innermost; each key reaches the script through run_cmd as a built-in one.
const char* kCustom = R"({
  "dp_degree": "auto", "micro_batch_size": [1, 2],
  "model_cfg": {"global_batch_size": 4},
  "metric_cfg": {"name": "tokens/s", "OptimizationDirection": "Maximize"},
  "custom_search_dim": {"use_flash_attn": {"value": [true, false], "prune": true},
                        "fuse_attention_qkv": {"value": [1, "off"], "prune": false}},
  "run_cmd": {"dp_degree": ["--dp", ""], "use_flash_attn": ["--use_flash_attn", ""],
              "fuse_attention_qkv": ["p.json", "model.fuse", "x"]}
})";

TEST(AutoTunerTest, CustomSearchDimsInTheFilesOrderInnermost) {
  const TunerConfig config = ParseTunerConfig(kCustom, "/t/tuner.json", 1, 1);
  ASSERT_EQ(config.custom_dims.size(), 2u);
  EXPECT_EQ(config.custom_dims[0].key, "use_flash_attn");  // Not sorted: the file's order.
  const std::vector<std::string> layouts = Layouts(config);
  // One device: dp1 mp1; mbs 1, 2 x flash (true, false) x fuse (1, "off"), fuse fastest.
  ASSERT_EQ(layouts.size(), 8u);
  EXPECT_EQ(layouts[0],
            "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=- use_flash_attn=True "
            "fuse_attention_qkv=1");
  EXPECT_EQ(layouts[1],
            "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=- use_flash_attn=True "
            "fuse_attention_qkv=off");
  EXPECT_EQ(layouts[2],
            "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=- use_flash_attn=False "
            "fuse_attention_qkv=1");
  TrialConfig first = SearchSpace(config)[1].first;
  EXPECT_EQ(TrialDirName(2, first),
            "Job2_GBS4_DP1_MP1_PP1_VPP1_Sharding1_Stage1_MBS1_Recompute_None_Granularity_None_"
            "AccStep4_UseFlashAttnTrue_FuseAttentionQkvoff");
  // Hostile review #38 item 6: a value with '/' put the logs elsewhere; one directory now.
  TrialConfig climbing = first;
  climbing.custom = {{"fuse_attention_qkv", "\"/../../x\""}};
  EXPECT_EQ(TrialDirName(2, climbing),
            "Job2_GBS4_DP1_MP1_PP1_VPP1_Sharding1_Stage1_MBS1_Recompute_None_Granularity_None_"
            "AccStep4_FuseAttentionQkv_.._.._x");
  std::vector<FileEdit> edits;
  EXPECT_EQ(TrialArguments({"train.py"}, first, config, false, edits),
            (std::vector<std::string>{"train.py", "--dp", "1", "--use_flash_attn", "True"}));
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].dotted_key, "model.fuse");
  EXPECT_EQ(edits[0].value_json, "\"xoff\"");  // The prefix, then Python's str() of the value.
  edits.clear();
  TrialArguments({}, SearchSpace(config)[0].first, config, false, edits);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].value_json, "\"x1\"");

  // prune: true on use_flash_attn: True ran, so False of the same layout is not tried; the same
  // layout with another fuse value, or another mbs, still is. fuse (prune false) prunes nothing.
  const TrialConfig flash_on = SearchSpace(config)[0].first;
  const TrialConfig flash_off = SearchSpace(config)[2].first;
  const TrialConfig flash_off_fuse_off = SearchSpace(config)[3].first;
  const TrialConfig fuse_off = SearchSpace(config)[1].first;
  bool oom = false;
  EXPECT_EQ(HistoryPrune(flash_off, {Ran(flash_on, 1, 5.0)}, oom, config),
            "use_flash_attn True ran, a later value is not tried");
  EXPECT_FALSE(oom);
  EXPECT_EQ(HistoryPrune(flash_off_fuse_off, {Ran(flash_on, 1, 5.0)}, oom, config), std::nullopt);
  EXPECT_EQ(HistoryPrune(fuse_off, {Ran(flash_on, 1, 5.0)}, oom, config), std::nullopt);
  EXPECT_EQ(HistoryPrune(flash_on, {Ran(flash_off, 1, 5.0)}, oom, config), std::nullopt);
  TrialOutcome failed = Ran(flash_on, 1, std::nullopt);
  failed.error = "exit code 1";
  EXPECT_EQ(HistoryPrune(flash_off, {failed}, oom, config), std::nullopt);  // It did not run.

  // The history CSV holds the custom columns after recompute_granularity, and reads back.
  std::vector<TrialOutcome> history = {Ran(flash_on, 1, 5.0), Ran(fuse_off, 2, 7.0)};
  const std::string csv = HistoryCsv(history, config);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "job_id,mp_degree,sharding_degree,pp_degree,dp_degree,sharding_stage,"
            "micro_batch_size,vpp_degree,use_recompute,recompute_granularity,use_flash_attn,"
            "fuse_attention_qkv,acc_steps,global_batch_size,exec_time,tokens/s,max_mem_usage,"
            "error_info");
  EXPECT_NE(csv.find("\n2,1,1,1,1,1,1,1,,,True,off,4,4,0,7,,\n"), std::string::npos) << csv;
  const std::vector<TrialOutcome> back = ParseHistoryCsv(csv, config);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].cfg, fuse_off);
  EXPECT_EQ(back[1].metric, 7.0);
}

TEST(AutoTunerTest, BadCustomSearchDimsNameTheKey) {
  const auto error = [](const std::string& dims, const std::string& run = "") {
    return ErrorOf<UsageError>([&] {
      ParseTunerConfig(R"({"model_cfg": {"global_batch_size": 8}, "metric_cfg": {"name": "m"},
        "custom_search_dim": )" +
                           dims + R"(, "run_cmd": {"k": ["--k", ""])" + run + "}}",
                       "t.json", 1, 8);
    });
  };
  EXPECT_EQ(error(R"({"k": {"value": [], "prune": true}})"),
            "--auto_tuner_json: custom_search_dim.k.value: expected a non-empty list");
  EXPECT_EQ(error(R"({"k": {"value": [2, "2"]}})"),
            "--auto_tuner_json: custom_search_dim.k.value: 2 and \"2\" read the same");
  EXPECT_EQ(error(R"({"k": {"value": ["a,b"]}})"),
            "--auto_tuner_json: custom_search_dim.k.value: \"a,b\": empty, or with a comma, a "
            "quote or a line break (the history CSV holds it)");
  EXPECT_EQ(error(R"({"k": {"value": [[1]]}})"),
            "--auto_tuner_json: custom_search_dim.k.value: expected numbers, strings or "
            "booleans, got [1]");
  EXPECT_EQ(error(R"({"k": {"value": [1], "prune": "yes"}})"),
            "--auto_tuner_json: custom_search_dim.k.prune: expected true or false");
  EXPECT_EQ(error(R"({"k": {"values": [1]}})"),
            "--auto_tuner_json: custom_search_dim.k.values: unknown key (value and prune are)");
  EXPECT_EQ(error(R"({"mp_degree": {"value": [1]}})"),
            "--auto_tuner_json: custom_search_dim.mp_degree: a built-in dimension; set it at the "
            "top level");
  EXPECT_EQ(error(R"({"k": {"value": [1]}, "j": {"value": [1]}})"),
            "--auto_tuner_json: custom_search_dim.j: not in run_cmd: the script would never see "
            "it (add \"j\": [\"--j\", \"\"] or the like)");
  EXPECT_EQ(ErrorOf<UsageError>([] {
              ParseTunerConfig(R"({"model_cfg": {"global_batch_size": 8}, "metric_cfg": {"name":
                "m"}, "search_algo": {"name": "customize"}, "configs_csv": "c.csv",
                "custom_search_dim": {"k": {"value": [1]}}, "run_cmd": {"k": ["--k", ""]}})",
                               "t.json", 1, 8);
            }),
            "--auto_tuner_json: custom_search_dim: search_algo customize runs the layouts of "
            "configs_csv only");
  EXPECT_EQ(error(R"({"k": {"value": [1]}})", R"(, "z": ["--z", ""])"),
            "--auto_tuner_json: run_cmd.z: unknown key");
}

// refined_recompute (utils.py search_all, prune.py prune_by_refined_recompute and its history
// rule): 2 devices, pp 2, 4 layers: each operator from 0 to 4 / 2 = 2, the first operator first,
// then the second with the first at 2: [0,0] [1,0] [2,0] [2,1] [2,2] (Paddle's dedup drops the
// second [2,0]).
const char* kRefined = R"({
  "pp_degree": [2], "use_recompute": [true], "recompute_granularity": ["full"],
  "model_cfg": {"global_batch_size": 4, "num_layers": 4},
  "metric_cfg": {"name": "tokens/s", "OptimizationDirection": "Maximize"},
  "refined_recompute": ["mlp_row_ln", "attn"],
  "run_cmd": {"refined_recompute": ["./p.json", "model.refined_recompute"]}
})";

TEST(AutoTunerTest, RefinedRecomputeValuesPrunesAndArguments) {
  TunerConfig config = ParseTunerConfig(kRefined, "/t/tuner.json", 1, 2);
  const std::string head = "dp1 mp1 pp2 vpp1 sharding1 stage1 mbs1 recompute=full ";
  EXPECT_EQ(Layouts(config),
            (std::vector<std::string>{head + "mlp_row_ln=0 attn=0", head + "mlp_row_ln=1 attn=0",
                                      head + "mlp_row_ln=2 attn=0", head + "mlp_row_ln=2 attn=1",
                                      head + "mlp_row_ln=2 attn=2"}));
  const std::vector<std::pair<TrialConfig, std::optional<std::string>>> space = SearchSpace(config);
  const TrialConfig& zero = space[0].first;
  const TrialConfig& one = space[1].first;
  const TrialConfig& two = space[2].first;
  EXPECT_EQ(TrialDirName(3, two),
            "Job3_GBS4_DP1_MP1_PP2_VPP1_Sharding1_Stage1_MBS1_Recompute_True_Granularity_full_"
            "AccStep4_MlpRowLn2_Attn0");
  std::vector<FileEdit> edits;
  EXPECT_EQ(TrialArguments({"x"}, two, config, false, edits), std::vector<std::string>{"x"});
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].dotted_key, "model.refined_recompute");
  EXPECT_EQ(edits[0].value_json, R"({"mlp_row_ln":2,"attn":0})");  // The file's order.

  // History: a larger value ran, a smaller one is slower; a smaller one ran out of memory, a
  // larger one would too.
  bool oom = false;
  EXPECT_EQ(HistoryPrune(one, {Ran(two, 1, 5.0)}, oom, config),
            "mlp_row_ln 2 ran, a smaller one is slower");
  TrialOutcome out_of_memory = Ran(zero, 1, std::nullopt);
  out_of_memory.oom = true;
  EXPECT_EQ(HistoryPrune(one, {out_of_memory}, oom, config), "mlp_row_ln 0 ran out of memory");
  EXPECT_TRUE(oom);
  EXPECT_EQ(HistoryPrune(two, {Ran(one, 1, 5.0)}, oom, config), std::nullopt);

  // The CSV has a column per operator after the custom ones, and reads back.
  const std::string csv = HistoryCsv({Ran(two, 1, 5.0)}, config);
  EXPECT_NE(csv.find(",recompute_granularity,mlp_row_ln,attn,acc_steps,"), std::string::npos);
  const std::vector<TrialOutcome> back = ParseHistoryCsv(csv, config);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].cfg, two);

  // schedule_mode performance: descending; pp 1: only zeros (refining cannot apply).
  std::string text = kRefined;
  text.insert(1, R"("schedule_mode": "performance",)");
  config = ParseTunerConfig(text, "/t/tuner.json", 1, 2);
  EXPECT_EQ(Layouts(config).front(), head + "mlp_row_ln=2 attn=2");
  text = kRefined;
  text.replace(text.find(R"("pp_degree": [2])"), 16, R"("pp_degree": [1])");
  config = ParseTunerConfig(text, "/t/tuner.json", 1, 1);
  EXPECT_EQ(Layouts(config),
            (std::vector<std::string>{"dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=full "
                                      "mlp_row_ln=0 attn=0"}));
}

TEST(AutoTunerTest, BadRefinedRecomputeNamesTheKey) {
  const auto error = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return ErrorOf<UsageError>([&] { ParseTunerConfig(text, "t.json", 1, 2); });
  };
  EXPECT_EQ(error(kRefined, R"("num_layers": 4)", R"("hidden_size": 4)"),
            "--auto_tuner_json: refined_recompute: needs model_cfg.num_layers (its values go to "
            "num_layers / pp)");
  EXPECT_EQ(error(kRefined, R"(["mlp_row_ln", "attn"])", R"(["a", "a"])"),
            "--auto_tuner_json: refined_recompute: 'a' is there twice");
  EXPECT_EQ(error(kRefined, R"(["./p.json", "model.refined_recompute"])", R"(["--rr", ""])"),
            "--auto_tuner_json: run_cmd.refined_recompute: expected [\"file.json\", \"key\"]: the "
            "operators' values go there as one object (as in Paddle, no flag, no -o)");
  EXPECT_EQ(error(kRefined, R"("refined_recompute": ["./p.json", "model.refined_recompute"])",
                  R"("dp_degree": ["--dp", ""])"),
            "--auto_tuner_json: refined_recompute: not in run_cmd: the script would never see it "
            "(add \"refined_recompute\": [\"./params.json\", \"refined_recompute\"])");
}

// memory_estimation_tool (prune.py prune_by_memory_estimation): asked only for the layouts
// the rules before it kept, in prune.py's order; above max_mem_usage (MiB) pruned.
TEST(AutoTunerTest, MemoryEstimatesPruneAfterTheDeviceCount) {
  std::string text = kSmall;
  text.insert(1, R"("memory_estimation_tool": "est.py", "max_mem_usage": 30000,
                    "invalid_strategy": ["mp4"],)");
  const TunerConfig config = ParseTunerConfig(text, "/t/tuner.json", 1, 4);
  std::vector<std::string> asked;
  const auto layouts = SearchSpace(config, [&](const TrialConfig& c) {
    asked.push_back(Describe(c));
    return 20000.0 * static_cast<double>(c.mbs) / static_cast<double>(c.mp);
  });
  std::vector<std::string> kept;
  for (const auto& [c, why] : layouts) {
    kept.push_back(Describe(c) + (why ? " | " + *why : ""));
  }
  EXPECT_EQ(asked.size(), 6u);  // Before invalid_strategy: the mp4 ones are asked too.
  EXPECT_EQ(kept, (std::vector<std::string>{
                      "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs1 recompute=- | invalid_strategy mp4",
                      "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs2 recompute=- | invalid_strategy mp4",
                      "dp1 mp4 pp1 vpp1 sharding1 stage1 mbs4 recompute=- | invalid_strategy mp4",
                      "dp2 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=-",
                      "dp2 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=-",
                      "dp4 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=-"}));
  TrialConfig c;
  c.mbs = 2;
  c.use_recompute = true;
  c.recompute_granularity = "full";
  EXPECT_EQ(MemoryEstimationArguments(c, config),
            (std::vector<std::string>{
                "--dp_degree", "1", "--mp_degree", "1", "--pp_degree", "1", "--vpp_degree", "1",
                "--sharding_degree", "1", "--sharding_stage", "1", "--use_recompute", "True",
                "--micro_batch_size", "2", "--recompute_granularity", "full"}));
  text = kSmall;
  text.insert(1, R"("memory_estimation_tool": "est.py",)");
  EXPECT_EQ(ErrorOf<UsageError>([&] { ParseTunerConfig(text, "t.json", 1, 4); }),
            "--auto_tuner_json: memory_estimation_tool: needs max_mem_usage (MiB), the estimates' "
            "limit");
}

TEST(AutoTunerTest, MemoryEstimatesAboveTheLimitPrune) {
  std::string text = kSmall;
  text.insert(1, R"("memory_estimation_tool": "est.py", "max_mem_usage": 15000,)");
  const TunerConfig config = ParseTunerConfig(text, "/t/tuner.json", 1, 4);
  std::vector<std::optional<std::string>> why;
  for (const auto& [c, reason] : SearchSpace(config, [](const TrialConfig& t) {
         return 20000.0 * static_cast<double>(t.mbs) / static_cast<double>(t.mp);
       })) {
    why.push_back(reason);
  }
  const std::optional<std::string> none;
  const std::optional<std::string> above = "estimated 20000 MB, above max_mem_usage 15000";
  // mp4 mbs 1, 2, 4; mp2 mbs 1, 2; mp1 mbs 1: 5000, 10000, 20000, 10000, 20000, 20000 MB.
  EXPECT_EQ(why, (std::vector<std::optional<std::string>>{none, none, above, none, above, above}));
}

// One node runs rank 0: a second outcome that says so is a record no node of the search wrote.
TEST(AutoTunerTest, TwoOutcomesOfRankZeroAreRefused) {
  NodeOutcome a;
  a.rank0 = true;
  a.metric = 240;
  NodeOutcome forged = a;
  forged.metric = 99999;
  EXPECT_EQ(testutil::ErrorOf<LaunchError>([&] {
              MergeNodeOutcomes({a, forged});
            }),
            "auto tuner: 2 of the 2 nodes' outcomes say they ran rank 0, which one node runs: a "
            "record that no node of this search wrote (docs/master.md, \"Exposure\")");
  forged.skipped = true;  // A node outside a dp_estimation replica is not counted.
  EXPECT_EQ(MergeNodeOutcomes({a, forged}).metric, 240);
}

// Several nodes (docs/auto-tuner.md, "Several nodes"): each node's view of a trial, merged the
// same way on every node.
TEST(AutoTunerTest, NodeOutcomesMergeAsOneTrial) {
  NodeOutcome a;  // Ran rank 0: has the metric; its job failed because b's rank did.
  a.rank0 = true;
  a.metric = 240;
  a.exit_code = 1;
  a.memory_mib = 900;
  a.exec_time = 3;
  a.search_seconds = 10;
  NodeOutcome b;  // Ran out of memory.
  b.oom = true;
  b.exit_code = 1;
  b.memory_mib = 1200;
  b.exec_time = 4;
  b.search_seconds = 12;
  const NodeOutcome merged = MergeNodeOutcomes({b, a});
  EXPECT_TRUE(merged.oom);
  EXPECT_EQ(merged.metric, 240);
  EXPECT_EQ(merged.memory_mib, 1200);
  EXPECT_EQ(merged.exec_time, 4);
  EXPECT_EQ(merged.search_seconds, 12);
  TrialOutcome trial;
  ClassifyOutcome(merged, trial);
  EXPECT_EQ(trial.error, "Out of memory");
  EXPECT_FALSE(trial.metric);

  // No OOM: the metric is rank 0's node's, whichever comes first; a node without rank 0 has
  // no metric and that is not an error.
  a.exit_code = 0;
  b = NodeOutcome{};
  ClassifyOutcome(MergeNodeOutcomes({b, a}), trial);
  EXPECT_EQ(trial.error, "");
  EXPECT_EQ(trial.metric, 240);
  // A node whose job failed fails the trial, with its exit code.
  b.exit_code = 7;
  ClassifyOutcome(MergeNodeOutcomes({a, b}), trial);
  EXPECT_EQ(trial.error, "exit code 7");
  EXPECT_FALSE(trial.metric);
  // A deadline anywhere: the failures it caused are not errors; with the metric, it counts.
  b.timed_out = true;
  a.exit_code = 1;
  ClassifyOutcome(MergeNodeOutcomes({a, b}), trial);
  EXPECT_TRUE(trial.timed_out);
  EXPECT_EQ(trial.error, "");
  EXPECT_EQ(trial.metric, 240);
  a.metric.reset();
  ClassifyOutcome(MergeNodeOutcomes({a, b}), trial);
  EXPECT_EQ(trial.error, "timeout");
  // dp_estimation across nodes: a node that was not among the replica's nodes counts only for
  // the search's time, whatever else its record says.
  NodeOutcome ran;
  ran.rank0 = true;
  ran.metric = 110;
  ran.exec_time = 2;
  ran.search_seconds = 5;
  NodeOutcome waited;
  waited.skipped = true;
  waited.exit_code = 9;
  waited.oom = true;
  waited.exec_time = 30;
  waited.search_seconds = 40;
  const NodeOutcome one = MergeNodeOutcomes({waited, ran});
  EXPECT_EQ(one.search_seconds, 40);
  EXPECT_EQ(one.exec_time, 2);
  ClassifyOutcome(one, trial);
  EXPECT_EQ(trial.error, "");
  EXPECT_EQ(trial.metric, 110);
  EXPECT_EQ(DecodeNodeOutcome(EncodeNodeOutcome(waited)), waited);
}

TEST(AutoTunerTest, NodeOutcomesRoundTripAndPeersAreChecked) {
  NodeOutcome n;
  n.rank0 = true;
  n.metric = 1234.5;
  n.exit_code = 3;
  n.exec_time = 1.5;
  EXPECT_EQ(DecodeNodeOutcome(EncodeNodeOutcome(n)), n);
  n.memory_mib = 4096;
  n.oom = n.timed_out = true;
  EXPECT_EQ(DecodeNodeOutcome(EncodeNodeOutcome(n)), n);
  const std::string good = EncodeNodeOutcome(n);
  for (const std::string& bad :
       {std::string("not json"), std::string("[]"), std::string("{}"),
        std::string(R"({"rank0":1,"metric":null,"memory_mib":null,"oom":false,"timed_out":false,)"
                    R"("exit_code":0,"exec_time":0,"search_seconds":0})"),
        std::string(R"({"rank0":true,"metric":-1,"memory_mib":null,"oom":false,)"
                    R"("timed_out":false,"exit_code":0,"exec_time":0,"search_seconds":0})"),
        std::string(R"({"rank0":true,"metric":null,"memory_mib":null,"oom":false,)"
                    R"("timed_out":false,"exit_code":300,"exec_time":0,"search_seconds":0})"),
        std::string(R"({"rank0":true,"metric":null,"memory_mib":null,"oom":false,)"
                    R"("timed_out":false,"exit_code":0,"exec_time":"1","search_seconds":0})"),
        good + std::string(5000, ' ')}) {
    EXPECT_EQ(DecodeNodeOutcome(bad), std::nullopt) << bad;
  }
}

TEST(AutoTunerTest, BadFilesAreOneLineNamingTheKey) {
  const auto error = [](const std::string& text) {
    return ErrorOf<UsageError>([&] { ParseTunerConfig(text, "t.json", 1, 8); });
  };
  EXPECT_EQ(error("{"),
            "--auto_tuner_json t.json: not JSON ([json.exception.parse_error.101] "
            "parse error at line 1, column 2: syntax error while parsing object key - "
            "unexpected end of input; expected string literal)");
  EXPECT_EQ(error(R"({"model_cfg": {"global_batch_size": 8}, "metric_cfg": {"name": "m"},
    "run_cmd": {}, "dp_degree": "Auto"})"),
            "--auto_tuner_json: dp_degree: a string must be \"auto\"");
  EXPECT_EQ(error(R"({"model_cfg": {"global_batch_size": 8}, "metric_cfg": {"name": "m"},
    "run_cmd": {}, "mp_degree": {"min": 0, "max": 2}})"),
            "--auto_tuner_json: mp_degree.min: expected a positive integer, got 0");
  EXPECT_EQ(error(R"({"model_cfg": {"global_batch_size": 8}, "metric_cfg": {"name": "m"},
    "run_cmd": {}, "search_algo": {"name": "gbs"}})"),
            "--auto_tuner_json: search_algo.name: 'gbs': expected grid, dp_estimation or "
            "customize (gbs is the pre-search that model_cfg.global_batch_size \"auto\" runs "
            "before any of them)");
  EXPECT_EQ(error(R"({"model_cfg": {"global_batch_size": 8}, "metric_cfg": {"name": "m"},
    "run_cmd": {}, "search_algo": {"name": "dp_estimation"}})"),
            "--auto_tuner_json: search_algo.estimated_num_gpus: dp_estimation needs it: the "
            "devices the layouts are estimated for");
  EXPECT_EQ(error(R"({"model_cfg": {"global_batch_size": 8}, "metric_cfg": {"name": "m"},
    "run_cmd": {}, "search_algo": {"name": "customize"}})"),
            "--auto_tuner_json: configs_csv: search_algo customize needs the CSV of its layouts");
  EXPECT_EQ(error(R"({"model_cfg": {"global_batch_size": "all"}, "metric_cfg": {"name": "m"},
    "run_cmd": {}})"),
            "--auto_tuner_json: model_cfg.global_batch_size: a string must be \"auto\"");
  EXPECT_EQ(error(R"({"model_cfg": {"global_batch_size": "auto"}, "metric_cfg": {"name": "m"},
    "run_cmd": {}, "micro_batch_size": [0]})"),
            "--auto_tuner_json: micro_batch_size: expected a positive integer, got 0");
  EXPECT_EQ(error(R"({"model_cfg": {"global_batch_size": 8}, "metric_cfg": {"name": "m"},
    "run_cmd": {"mp_degree": ["cfg.toml", "mp"]}})"),
            "--auto_tuner_json: run_cmd.mp_degree: 'cfg.toml' is neither a --flag, -o nor a .json "
            "or .yaml file");
}

// search_algo dp_estimation, worked by hand from utils.py default_candidates, search_all and
// search_by_dp_estimation: one node of 4 devices, estimated_num_gpus 16 (so 4 estimated nodes),
// gbs 32, 4 layers, mbs 2, dp [1]. Candidates: mp = divisors(4) descending [4, 2, 1]; pp =
// range(5, 0, -1) dividing 4 layers [4, 2, 1]; sharding = divisors(16) descending. Nested
// mp -> sharding -> pp -> dp with the product 16 and dp 1: (mp, sharding, pp) = (4,4,1),
// (4,2,2), (4,1,4), (2,8,1), (2,4,2), (2,2,4), (1,16,1), (1,8,2), (1,4,4); acc_steps =
// 32 / sharding / 2 >= pp for all, so none is pruned statically. As one replica each: dp and
// sharding 1, estimated dp = the sharding degree, gbs 32 / it, devices mp x pp; the three with 8
// or 16 devices need 2 or 4 nodes and this job has one.
TEST(AutoTunerTest, DpEstimationRunsOneReplicaOfEachLayoutByHand) {
  const char* text = R"({
    "search_algo": {"name": "dp_estimation", "estimated_num_gpus": 16,
                    "conversion": {"step_time": "interval_runtime", "comm_bw": [100, 25],
                                   "need_unify": true}},
    "mp_degree": "auto", "pp_degree": "auto", "sharding_degree": "auto", "dp_degree": "auto",
    "micro_batch_size": [2],
    "model_cfg": {"global_batch_size": 32, "num_layers": 4, "hidden_size": 64,
                  "num_attention_heads": 4, "vocab_size": 128},
    "metric_cfg": {"name": "tokens/s", "OptimizationDirection": "Maximize"},
    "run_cmd": {"mp_degree": ["--mp", ""], "global_batch_size": ["--gbs", ""]}
  })";
  const TunerConfig config = ParseTunerConfig(text, "t.json", 1, 4);
  EXPECT_EQ(config.num_gpus, 16);
  EXPECT_EQ(config.nodes, 4);
  EXPECT_EQ(config.given_nodes, 1);
  EXPECT_EQ(config.dp, std::vector<long>{1});  // "auto" set to [1], with Paddle's warning.
  ASSERT_EQ(config.warnings.size(), 1u);
  const std::string tail = " vpp1 sharding1 stage1 mbs2 recompute=-";
  EXPECT_EQ(
      Layouts(config, false),
      (std::vector<std::string>{
          "dp1 mp4 pp1" + tail + " (for dp4, gbs8)",
          "dp1 mp4 pp2" + tail +
              " (for dp2, gbs16) | one replica needs 8 devices, more "
              "than the job's 1 node(s) of 4",
          "dp1 mp4 pp4" + tail +
              " (for dp1, gbs32) | one replica needs 16 devices, more "
              "than the job's 1 node(s) of 4",
          "dp1 mp2 pp1" + tail + " (for dp8, gbs4)", "dp1 mp2 pp2" + tail + " (for dp4, gbs8)",
          "dp1 mp2 pp4" + tail +
              " (for dp2, gbs16) | one replica needs 8 devices, more "
              "than the job's 1 node(s) of 4",
          "dp1 mp1 pp1" + tail + " (for dp16, gbs2)", "dp1 mp1 pp2" + tail + " (for dp8, gbs4)",
          "dp1 mp1 pp4" + tail + " (for dp4, gbs8)"}));
  const TrialConfig first = SearchSpace(config)[0].first;
  EXPECT_EQ(first.trial_gpus, 4);
  EXPECT_EQ(first.trial_nodes, 1);
  EXPECT_EQ(first.acc_steps, 4);  // 8 / mbs 2.
  std::vector<FileEdit> edits;
  EXPECT_EQ(TrialArguments({"train.py"}, first, config, false, edits),
            (std::vector<std::string>{"train.py", "--mp", "4", "--gbs", "8"}));

  // main.py's conversion: comm_time = 7 (model_size_b) x 4 / bw: 0.28 s at 100, 1.12 s at 25;
  // step 1 s and 100 tokens/s give 100 / 1.28 = 78.125 and 100 / 2.12 = 47.16981; need_unify
  // divides by the trial's 4 devices, rounded to 2 places.
  EXPECT_EQ(
      ConversionColumns(config),
      (std::vector<std::string>{"unified_tokens/s", "bw_100_tokens/s", "unified_bw_100_tokens/s",
                                "bw_25_tokens/s", "unified_bw_25_tokens/s"}));
  TrialOutcome ran = Ran(first, 1, 100.0);
  ConvertOutcome(ran, config, 1.0);
  ASSERT_EQ(ran.converted.size(), 5u);
  EXPECT_EQ(ran.converted[0].second, 25.0);
  EXPECT_DOUBLE_EQ(*ran.converted[1].second, 78.125);
  EXPECT_DOUBLE_EQ(*ran.converted[2].second, 19.53);
  EXPECT_DOUBLE_EQ(*ran.converted[3].second, 47.16981);
  EXPECT_DOUBLE_EQ(*ran.converted[4].second, 11.79);
  TrialOutcome tie = Ran(first, 1, 100.5);  // 100.5 / 4 = 25.125: Python's round gives 25.12.
  ConvertOutcome(tie, config, 1.0);
  EXPECT_EQ(tie.converted[0].second, 25.12);
  TrialOutcome no_step = Ran(SearchSpace(config)[3].first, 2, 300.0);
  ConvertOutcome(no_step, config, std::nullopt);  // No step time: nothing to convert.
  EXPECT_EQ(no_step.converted[1].second, std::nullopt);
  TrialOutcome faster = Ran(SearchSpace(config)[4].first, 3, 200.0);
  ConvertOutcome(faster, config, 3.0);  // 3 / 3.28 x 200 = 182.92683, 3 / 4.12 x 200 = 145.63107.
  TrialOutcome oom = Ran(SearchSpace(config)[6].first, 4, std::nullopt);
  oom.oom = true;
  oom.error = "Out of memory";
  ConvertOutcome(oom, config, std::nullopt);
  const std::vector<TrialOutcome> history = {ran, no_step, faster, oom};
  const std::string csv = HistoryCsv(history, config);
  const std::string header =
      "job_id,mp_degree,sharding_degree,pp_degree,dp_degree,sharding_stage,micro_batch_size,"
      "vpp_degree,use_recompute,recompute_granularity,acc_steps,global_batch_size,"
      "estimated_dp_degree,num_gpus,nodes,exec_time,tokens/s,unified_tokens/s,bw_100_tokens/s,"
      "unified_bw_100_tokens/s,bw_25_tokens/s,unified_bw_25_tokens/s,max_mem_usage,error_info\n";
  EXPECT_EQ(csv, header +
                     "1,4,1,1,1,1,2,1,,,4,8,4,4,1,0,100,25,78.125,19.53,47.16981,11.79,,\n"
                     "2,2,1,1,1,1,2,1,,,2,4,8,2,1,0,300,150,,,,,,\n"
                     "3,2,1,2,1,1,2,1,,,4,8,4,4,1,0,200,50,182.92683,45.73,145.63107,36.41,,\n"
                     "4,1,1,1,1,1,2,1,,,1,2,16,1,1,0,,,,,,,OOM,['Out of memory']\n");
  // recorder.py's enhanced history: no error, by the first bandwidth's unified value, highest
  // first, those without one last.
  EXPECT_EQ(EnhancedHistoryCsv(history, config),
            header +
                "3,2,1,2,1,1,2,1,,,4,8,4,4,1,0,200,50,182.92683,45.73,145.63107,36.41,,\n"
                "1,4,1,1,1,1,2,1,,,4,8,4,4,1,0,100,25,78.125,19.53,47.16981,11.79,,\n"
                "2,2,1,1,1,1,2,1,,,2,4,8,2,1,0,300,150,,,,,,\n");
  // A trial interrupted before its conversion still fills every column (empty cells).
  TrialOutcome unconverted = Ran(first, 5, std::nullopt);
  EXPECT_EQ(HistoryCsv({unconverted}, config), header + "5,4,1,1,1,1,2,1,,,4,8,4,4,1,0,,,,,,,,\n");
  // Resume reads it all back.
  const std::vector<TrialOutcome> back = ParseHistoryCsv(csv, config);
  ASSERT_EQ(back.size(), 4u);
  for (size_t k = 0; k < back.size(); ++k) {
    EXPECT_EQ(back[k].cfg, history[k].cfg) << k;
    EXPECT_EQ(back[k].converted, history[k].converted) << k;
  }
}

// dp_estimation with sharding_overlap (utils.py search_by_dp_estimation, gen_sharding_overlap_args,
// add_overlap_performance): one node of 4 devices, 16 estimated, mp 2, pp 1: the replica of
// mp 2 (for dp 8, gbs 32 / 8 = 4), then that replica widened by sharding 4 / 2 = 2 to the node's
// devices (gbs 8) without and with the overlap; the YAML entry's two values go to the two.
TEST(AutoTunerTest, DpEstimationShardingOverlapVariantsAndTheirGain) {
  const char* text = R"({
    "search_algo": {"name": "dp_estimation", "estimated_num_gpus": 16,
                    "conversion": {"step_time": "t"},
                    "sharding_overlap": {"sharding_mp": ["c.yaml", "overlap", true, false]}},
    "mp_degree": [2], "sharding_degree": "auto", "micro_batch_size": [2],
    "model_cfg": {"global_batch_size": 32, "num_layers": 4},
    "metric_cfg": {"name": "m", "OptimizationDirection": "Maximize"},
    "run_cmd": {"mp_degree": ["--mp", ""]}
  })";
  const TunerConfig config = ParseTunerConfig(text, "t.json", 1, 4);
  EXPECT_EQ(Layouts(config),
            (std::vector<std::string>{
                "dp1 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=- (for dp8, gbs4)",
                "dp1 mp2 pp1 vpp1 sharding2 stage1 mbs2 recompute=- overlap=off",
                "dp1 mp2 pp1 vpp1 sharding2 stage1 mbs2 recompute=- overlap=on"}));
  const auto space = SearchSpace(config);
  const TrialConfig& off = space[1].first;
  const TrialConfig& on = space[2].first;
  EXPECT_EQ((std::vector<long>{off.trial_gpus, off.global_batch_size, off.acc_steps}),
            (std::vector<long>{4, 8, 2}));
  EXPECT_EQ(TrialDirName(3, on),
            "Job3_GBS8_DP1_MP2_PP1_VPP1_Sharding2_Stage1_MBS2_Recompute_None_Granularity_None_"
            "AccStep2_Overlap_True");
  std::vector<FileEdit> edits;
  EXPECT_EQ(TrialArguments({"t.py"}, on, config, false, edits),
            (std::vector<std::string>{"t.py", "--mp", "2"}));
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].dotted_key + "=" + edits[0].value_json, "overlap=true");
  edits.clear();
  TrialArguments({"t.py"}, off, config, false, edits);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].value_json, "false");
  // The replica converts (100 at step 1 s: 100 / 1.28 = 78.125 at comm_bw 100); the widened
  // runs do not. The overlap's gain, 250 against 200 (+25 %), goes onto the replica's row:
  // 78.125 x 1.25 = 97.65625.
  std::vector<TrialOutcome> history = {Ran(space[0].first, 1, 100.0), Ran(off, 2, 200.0)};
  ConvertOutcome(history[0], config, 1.0);
  ConvertOutcome(history[1], config, 1.0);
  EXPECT_TRUE(history[1].converted.empty());
  history.push_back(Ran(on, 3, 250.0));
  AddOverlapPerformance(history, config);
  const std::string csv = HistoryCsv(history, config);
  EXPECT_EQ(csv,
            "job_id,mp_degree,sharding_degree,pp_degree,dp_degree,sharding_stage,micro_batch_size,"
            "vpp_degree,use_recompute,recompute_granularity,acc_steps,global_batch_size,"
            "estimated_dp_degree,num_gpus,nodes,sharding_overlap,exec_time,m,unified_m,bw_100_m,"
            "unified_bw_100_m,overlap_bw_100_m,max_mem_usage,error_info\n"
            "1,2,1,1,1,1,2,1,,,2,4,8,2,1,,0,100,100,78.125,78.125,97.65625,,\n"
            "2,2,2,1,1,1,2,1,,,2,8,,4,1,False,0,200,,,,,,\n"
            "3,2,2,1,1,1,2,1,,,2,8,,4,1,True,0,250,,,,,,\n");
  // The enhanced history: the replica alone.
  const std::string enhanced = EnhancedHistoryCsv(history, config);
  EXPECT_EQ(enhanced.substr(enhanced.find('\n') + 1),
            "1,2,1,1,1,1,2,1,,,2,4,8,2,1,,0,100,100,78.125,78.125,97.65625,,\n");
  // Resume reads the variants and the gain back.
  const std::vector<TrialOutcome> back = ParseHistoryCsv(csv, config);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].cfg, on);
  EXPECT_EQ(back[1].cfg, off);
  EXPECT_EQ(back[0].converted[3].second, 97.65625);
}

TEST(AutoTunerTest, BadDpEstimationFilesNameTheKey) {
  const auto error = [](const std::string& algo, long nodes = 1, const std::string& gbs = "8") {
    return ErrorOf<UsageError>([&] {
      ParseTunerConfig(R"({"model_cfg": {"global_batch_size": )" + gbs +
                           R"(}, "metric_cfg": {"name": "m"}, "run_cmd": {}, "search_algo": )" +
                           algo + "}",
                       "t.json", nodes, 8);
    });
  };
  EXPECT_EQ(error(R"({"name": "dp_estimation", "estimated_num_gpus": 12})"),
            "--auto_tuner_json: search_algo.estimated_num_gpus: expected a multiple of this "
            "node's 8 devices (up to 1048576)");
  EXPECT_EQ(error(R"({"name": "grid", "estimated_num_gpus": 64})"),
            "--auto_tuner_json: search_algo.estimated_num_gpus: only with dp_estimation");
  EXPECT_EQ(error(R"({"name": "dp_estimation", "estimated_num_gpus": 64,
                      "sharding_overlap": {"no_overlap": ["--x"]}})"),
            "--auto_tuner_json: search_algo.sharding_overlap.no_overlap: expected sharding_mp, "
            "sharding_pp or sharding_mp_pp");
  EXPECT_EQ(error(R"({"name": "dp_estimation", "estimated_num_gpus": 64,
                      "sharding_overlap": {"sharding_mp": ["c.yaml", "k", true]}})"),
            "--auto_tuner_json: search_algo.sharding_overlap.sharding_mp: expected [file.yaml, "
            "\"key\", value with overlap, value without]");
  EXPECT_EQ(error(R"({"name": "dp_estimation", "estimated_num_gpus": 64,
                      "conversion": {"comm_bw": [100]}})"),
            "--auto_tuner_json: search_algo.conversion.step_time: required by conversion");
  EXPECT_EQ(error(R"({"name": "dp_estimation", "estimated_num_gpus": 64,
                      "conversion": {"step_time": "t", "comm_bw": [0]}})"),
            "--auto_tuner_json: search_algo.conversion.comm_bw: 0: expected a positive number");
  EXPECT_EQ(error(R"({"name": "dp_estimation", "estimated_num_gpus": 64,
                      "conversion": {"step_time": "t", "bw": 1}})"),
            "--auto_tuner_json: search_algo.conversion.bw: unknown key");
  EXPECT_EQ(error(R"({"name": "dp_estimation", "estimated_num_gpus": 64})", 1, R"("auto")"),
            "--auto_tuner_json: model_cfg.global_batch_size: dp_estimation needs the estimated "
            "cluster's batch: the GBS pre-search would find this node's");
}

// The GBS pre-search (global_batch_size "auto"), by hand from utils.py gbs_dp_mp_pp_candidates:
// 8 devices: round(8^(1/3)) = 2 divides 8, so sharding 2; the rest 4: round(sqrt 4) = 2, so mp 2,
// pp 2. 16 devices: round(16^(1/3)) = 3 does not divide 16, so 2; the rest 8: round(sqrt 8) = 3
// does not divide it, so mp 2, pp 4. The global batch is pp x sharding x mbs for mbs 2^0..2^9,
// acc_steps pp (gbs_default_candidates; gbs_search_all's pp x dp x mbs with dp 1 would put
// acc_steps at 1 or pp / sharding, below pp, and prune.py's own rule would drop every one).
TEST(AutoTunerTest, GbsPreSearchLayoutsAndTheSettledBatch) {
  const char* text = R"({"model_cfg": {"global_batch_size": "auto", "num_layers": 4},
    "metric_cfg": {"name": "m"}, "run_cmd": {}, "micro_batch_size": "auto"})";
  TunerConfig config = ParseTunerConfig(text, "t.json", 1, 8);
  EXPECT_TRUE(config.gbs_auto);
  const auto space = GbsSearchSpace(config);
  ASSERT_EQ(space.size(), 10u);
  for (size_t k = 0; k < space.size(); ++k) {
    const TrialConfig& c = space[k].first;
    EXPECT_EQ(space[k].second, std::nullopt) << Describe(c);
    EXPECT_EQ(Describe(c),
              fmt::format("dp1 mp2 pp2 vpp1 sharding2 stage1 mbs{} recompute=off", 1L << k));
    EXPECT_EQ(c.global_batch_size, 4L << k);
    EXPECT_EQ(c.acc_steps, 2);
  }
  EXPECT_EQ(GbsTrialDirName(1, space[2].first),
            "Job1_GBSSearch/GBS16_DP1_MP2_PP2_Sharding_degree_2_stage_1_MBS4_Recompute_False_"
            "granularity_None");
  const auto sixteen = GbsSearchSpace(ParseTunerConfig(text, "t.json", 2, 8));
  EXPECT_EQ(Describe(sixteen.front().first),
            "dp1 mp2 pp4 vpp1 sharding2 stage1 mbs1 recompute=off");
  EXPECT_EQ(sixteen.front().first.global_batch_size, 8);
  // Its layouts meet the static rules too: 3 layers do not split over pp 2.
  const auto odd = GbsSearchSpace(ParseTunerConfig(
      R"({"model_cfg": {"num_layers": 3}, "metric_cfg": {"name": "m"}, "run_cmd": {}})", "t.json",
      1, 8));
  EXPECT_EQ(odd.front().second, std::optional<std::string>("num_layers 3 not divisible by pp 2"));
  // Found: the micro-batch sizes become the divisors of it the file allows, as for a given one.
  SettleGlobalBatchSize(config, 16);
  EXPECT_EQ(config.global_batch_size, std::optional<long>(16));
  EXPECT_EQ(config.mbs, (std::vector<long>{1, 2, 4, 8, 16}));
  EXPECT_EQ(
      Layouts(config).size(),
      Layouts(
          ParseTunerConfig(
              R"({"model_cfg": {"global_batch_size": 16, "num_layers": 4}, "metric_cfg": {"name": "m"},
      "run_cmd": {}, "micro_batch_size": "auto"})",
              "t.json", 1, 8))
          .size());
}

}  // namespace
}  // namespace pdlaunch

namespace pdlaunch {
namespace {

// Issue #42: a degree the config lists that the model's sizes rule out is named, not dropped
// without a word (Paddle drops it too, silently).
TEST(AutoTunerConfigTest, ADegreeTheModelRulesOutIsNamed) {
  const char* text = R"({
    "mp_degree": [1, 2, 3], "pp_degree": [1, 3], "micro_batch_size": [1],
    "model_cfg": {"global_batch_size": 8, "num_layers": 4, "hidden_size": 64,
                  "num_attention_heads": 6, "vocab_size": 128},
    "metric_cfg": {"name": "tokens/s", "OptimizationDirection": "Maximize"},
    "run_cmd": {"mp_degree": ["--mp", ""]}
  })";
  const TunerConfig config = ParseTunerConfig(text, "t.json", 1, 6);
  EXPECT_EQ(config.mp, (std::vector<long>{2, 1}));  // Paddle's order.
  EXPECT_EQ(config.warnings,
            (std::vector<std::string>{
                "mp_degree 3 is left out of the search: it does not divide model_cfg.hidden_size",
                "pp_degree 3 is left out of the search: it does not divide model_cfg.num_layers"}));
}

}  // namespace
}  // namespace pdlaunch
