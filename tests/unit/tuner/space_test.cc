// The search space (tuner/space.cc): the layouts and their order, worked out by hand below from
// Paddle's utils.py (dist_degree, search_all) and prune.py's static rules.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "pdlaunch/tuner/auto_tuner.h"
#include "unit/tuner/tuner_fixtures.h"

namespace pdlaunch {
namespace {

using tuner_fixtures::kCustom;
using tuner_fixtures::kRefined;
using tuner_fixtures::kSmall;
using tuner_fixtures::Layouts;
using tuner_fixtures::Ran;

// 4 devices on one node: dp from divisors(4) ascending, mp from divisors(4) descending (memory
// mode); the degrees nested mp → sharding → pp → dp with dp * mp = 4; mbs from divisors(gbs 4)
// ascending with gbs % (mbs * dp) == 0. By hand: mp4/dp1 with mbs 1, 2, 4; mp2/dp2 with mbs 1,
// 2; mp1/dp4 with mbs 1: six layouts, none pruned.
TEST(TunerSpaceTest, MemoryModeOrderOfASmallSpace) {
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

TEST(TunerSpaceTest, PerformanceModeReversesTheOrders) {
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

TEST(TunerSpaceTest, InvalidStrategiesAllApplyWithWholeNumbers) {
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
TEST(TunerSpaceTest, RecomputeOffKeepsOneGranularity) {
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
TEST(TunerSpaceTest, ShardingStagesAndPipelines) {
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

TEST(TunerSpaceTest, CustomSearchDimsInTheFilesOrderInnermost) {
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

TEST(TunerSpaceTest, RefinedRecomputeValuesPrunesAndArguments) {
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

// search_algo dp_estimation, worked by hand from utils.py default_candidates, search_all and
// search_by_dp_estimation: one node of 4 devices, estimated_num_gpus 16 (so 4 estimated nodes),
// gbs 32, 4 layers, mbs 2, dp [1]. Candidates: mp = divisors(4) descending [4, 2, 1]; pp =
// range(5, 0, -1) dividing 4 layers [4, 2, 1]; sharding = divisors(16) descending. Nested
// mp -> sharding -> pp -> dp with the product 16 and dp 1: (mp, sharding, pp) = (4,4,1),
// (4,2,2), (4,1,4), (2,8,1), (2,4,2), (2,2,4), (1,16,1), (1,8,2), (1,4,4); acc_steps =
// 32 / sharding / 2 >= pp for all, so none is pruned statically. As one replica each: dp and
// sharding 1, estimated dp = the sharding degree, gbs 32 / it, devices mp x pp; the three with 8
// or 16 devices need 2 or 4 nodes and this job has one.
TEST(TunerSpaceTest, DpEstimationRunsOneReplicaOfEachLayoutByHand) {
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
TEST(TunerSpaceTest, DpEstimationShardingOverlapVariantsAndTheirGain) {
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

// The GBS pre-search (global_batch_size "auto"), by hand from utils.py gbs_dp_mp_pp_candidates:
// 8 devices: round(8^(1/3)) = 2 divides 8, so sharding 2; the rest 4: round(sqrt 4) = 2, so mp 2,
// pp 2. 16 devices: round(16^(1/3)) = 3 does not divide 16, so 2; the rest 8: round(sqrt 8) = 3
// does not divide it, so mp 2, pp 4. The global batch is pp x sharding x mbs for mbs 2^0..2^9,
// acc_steps pp (gbs_default_candidates; gbs_search_all's pp x dp x mbs with dp 1 would put
// acc_steps at 1 or pp / sharding, below pp, and prune.py's own rule would drop every one).
TEST(TunerSpaceTest, GbsPreSearchLayoutsAndTheSettledBatch) {
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
