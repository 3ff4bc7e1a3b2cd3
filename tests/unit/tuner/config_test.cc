// The tuner file's rules (tuner/config.cc): what Paddle's auto tuner reads and how a bad key is
// named. Fixture: PaddleNLP's tests/test_tipc/auto_tuner/autoconfig/llama7b_pretrain.json (commit
// fa7b9934), as stored in tests/unit/plan/fixtures/.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "support/test_util.h"
#include "unit/tuner/tuner_fixtures.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;
using tuner_fixtures::kRefined;

TEST(TunerConfigTest, PaddleNlpsLlama7bConfigParsesAndKeepsItsRules) {
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

TEST(TunerConfigTest, CustomizeRunsTheLayoutsOfItsCsvInOrder) {
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

TEST(TunerConfigTest, BadCustomSearchDimsNameTheKey) {
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

TEST(TunerConfigTest, BadRefinedRecomputeNamesTheKey) {
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

TEST(TunerConfigTest, BadFilesAreOneLineNamingTheKey) {
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

TEST(TunerConfigTest, BadDpEstimationFilesNameTheKey) {
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

// Issue #42: a degree the config lists that the model's sizes rule out is named, not dropped
// without a word (Paddle drops it too, silently).
TEST(TunerConfigTest, ADegreeTheModelRulesOutIsNamed) {
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
