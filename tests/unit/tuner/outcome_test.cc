// A trial's outcome (tuner/outcome.cc): the metric read from its log, and the outcomes of
// several nodes merged into one, the same way on every node.
#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/tuner/auto_tuner.h"
#include "support/test_util.h"
#include "unit/tuner/tuner_fixtures.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;
using tuner_fixtures::Ran;

TEST(TunerOutcomeTest, MetricByPaddlesRule) {
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

// One node runs rank 0: a second outcome that says so is a record no node of the search wrote.
TEST(TunerOutcomeTest, TwoOutcomesOfRankZeroAreRefused) {
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
TEST(TunerOutcomeTest, NodeOutcomesMergeAsOneTrial) {
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

TEST(TunerOutcomeTest, NodeOutcomesRoundTripAndPeersAreChecked) {
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

}  // namespace
}  // namespace pdlaunch
