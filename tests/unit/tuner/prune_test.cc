// The prunes (tuner/space.cc): by the history (a layout that ran out of memory takes its larger
// batches with it) and by a memory estimation tool, as Paddle's prune.py.
#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "support/test_util.h"
#include "unit/tuner/tuner_fixtures.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;
using tuner_fixtures::kSmall;
using tuner_fixtures::Ran;

TEST(TunerPruneTest, HistoryPrunesChainOutOfMemory) {
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

TEST(TunerPruneTest, TheTrialLineCountsWhatAnOomPrunesAndTheTimeLeft) {
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

// memory_estimation_tool (prune.py prune_by_memory_estimation): asked only for the layouts
// the rules before it kept, in prune.py's order; above max_mem_usage (MiB) pruned.
TEST(TunerPruneTest, MemoryEstimatesPruneAfterTheDeviceCount) {
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

TEST(TunerPruneTest, MemoryEstimatesAboveTheLimitPrune) {
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

}  // namespace
}  // namespace pdlaunch
