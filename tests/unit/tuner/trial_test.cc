// A trial's arguments (tuner/trial.cc): each layout reaches the training script through
// run_cmd, as Paddle's utils.py gen_new_args.
#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "support/test_util.h"
#include "unit/tuner/tuner_fixtures.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;
using tuner_fixtures::kSmall;

TEST(TunerTrialTest, ArgumentsPerRunCmdStyle) {
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
TEST(TunerTrialTest, ShardingOverlapArgumentsByTheLayoutsShape) {
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

}  // namespace
}  // namespace pdlaunch
