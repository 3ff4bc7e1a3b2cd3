// The history CSV (tuner/history.cc): written, read back, and the best of it.
#include <gtest/gtest.h>

#include "pdlaunch/tuner/auto_tuner.h"
#include "unit/tuner/tuner_fixtures.h"

namespace pdlaunch {
namespace {

using tuner_fixtures::kSmall;
using tuner_fixtures::Ran;

TEST(TunerHistoryTest, BestAndTheHistoryCsvRoundTrip) {
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

}  // namespace
}  // namespace pdlaunch
