#include "pdlaunch/coord/elastic_policy.h"

#include <gtest/gtest.h>

namespace pdlaunch {
namespace {

using Kind = ElasticStep::Kind;

ElasticConfig Config(int np_min, int np_max, int max_restart = 3, int level = 1) {
  ElasticConfig config;
  config.level = level;
  config.server = "127.0.0.1:2379";
  config.job_id = "job1";
  config.np_min = np_min;
  config.np_max = np_max;
  config.max_restart = max_restart;
  return config;
}

// Node "a" is at 10.0.0.1, "b" at 10.0.0.2, and so on.
NodeRecord Record(const std::string& id) {
  const int n = id[0] - 'a' + 1;
  return NodeRecord{"10.0.0." + std::to_string(n), {6170}, 6171, 100 + n};
}

/// A job whose registered nodes are `live`, in this join order.
JobState Live(const std::vector<std::string>& live) {
  JobState state;
  int64_t revision = 10;
  for (const std::string& id : live) state.nodes.push_back({id, Record(id), revision++});
  return state;
}

WorldRecord World(int64_t generation, const std::vector<std::string>& members, int restarts = 0) {
  WorldRecord world;
  world.generation = generation;
  world.restarts = restarts;
  world.members = members;
  for (const std::string& id : members) world.nodes.push_back(Record(id));
  return world;
}

JobState WithWorld(JobState state, const WorldRecord& world) {
  state.world = world;
  state.world_mod_revision = 42;
  return state;
}

FailureRecord Failure(int64_t generation, const std::string& node, int rank, int code) {
  FailureRecord failure;
  failure.generation = generation;
  failure.node = node;
  failure.host = Record(node).host;
  failure.rank = rank;
  failure.exit_code = code;
  return failure;
}

TEST(ElasticPolicyTest, LoneNodeWaitsWithPaddlesLine) {
  const ElasticStep step = DecideElasticStep(Live({"a"}), "a", 0, Config(2, 2), false);
  EXPECT_EQ(step.kind, Kind::kWait);
  EXPECT_EQ(step.status,
            "not ready for np 2 with hosts [10.0.0.1]: 1 registered, waiting for 1 more");
}

TEST(ElasticPolicyTest, RangeJobWaitsForTheMaximumUntilTheTimeout) {
  const JobState state = Live({"a", "b", "c"});
  const ElasticStep early = DecideElasticStep(state, "a", 0, Config(2, 4), false);
  EXPECT_EQ(early.kind, Kind::kWait);
  EXPECT_EQ(early.status,
            "not ready for np 2:4 with hosts [10.0.0.1, 10.0.0.2, 10.0.0.3]: 3 registered, "
            "waiting for 1 more (or 120 s in all, then starting with 3)");
  EXPECT_EQ(DecideElasticStep(Live({"a"}), "a", 0, Config(2, 4), false).status,
            "not ready for np 2:4 with hosts [10.0.0.1]: 1 registered, waiting for 1 more");
  const ElasticStep late = DecideElasticStep(state, "a", 0, Config(2, 4), true);
  EXPECT_EQ(late.kind, Kind::kPropose);
  EXPECT_EQ(late.world, World(1, {"a", "b", "c"}));
}

TEST(ElasticPolicyTest, FirstWorldIsProposedInJoinOrder) {
  const ElasticStep step = DecideElasticStep(Live({"b", "a"}), "a", 0, Config(2, 2), false);
  EXPECT_EQ(step.kind, Kind::kPropose);
  EXPECT_EQ(step.world, World(1, {"b", "a"}));
}

TEST(ElasticPolicyTest, NewHealthyWorldWithSelfIsRun) {
  const JobState state = WithWorld(Live({"a", "b"}), World(1, {"a", "b"}));
  const ElasticStep step = DecideElasticStep(state, "b", 0, Config(2, 2), false);
  EXPECT_EQ(step.kind, Kind::kRun);
  EXPECT_EQ(step.world, World(1, {"a", "b"}));
}

TEST(ElasticPolicyTest, NodeDoneWithItsWorldWaitsForTheOthers) {
  JobState state = WithWorld(Live({"a", "b"}), World(1, {"a", "b"}));
  state.done[1] = {"a"};
  const ElasticStep step = DecideElasticStep(state, "a", 1, Config(2, 2), false);
  EXPECT_EQ(step.kind, Kind::kWait);
  EXPECT_EQ(step.status, "waiting for the other nodes to finish");
}

// Found by the ASan run of ElasticTest (2026-11-26): node c's lease expired under load while
// generation 1 ran, every node stopped its ranks ("node 127.0.0.4 left the job"), c registered
// again, and all three then waited for each other's done keys for ever. A node that ran the
// world and is not done forms the next world.
TEST(ElasticPolicyTest, StoppedWorldWhoseMembersCameBackIsReformed) {
  JobState state = WithWorld(Live({"a", "b", "c"}), World(1, {"a", "b", "c"}));
  const ElasticStep step = DecideElasticStep(state, "a", 1, Config(2, 4), false);
  EXPECT_EQ(step.kind, Kind::kPropose);
  EXPECT_EQ(step.world, World(2, {"a", "b", "c"}));
  // Its ranks finished (done key): it waits for the others instead.
  state.done[1] = {"a"};
  EXPECT_EQ(DecideElasticStep(state, "a", 1, Config(2, 4), false).kind, Kind::kWait);
}

TEST(ElasticPolicyTest, EveryMemberDoneCompletesTheJob) {
  JobState state = WithWorld(Live({"a", "b"}), World(1, {"a", "b"}));
  state.done[1] = {"a", "b"};
  EXPECT_EQ(DecideElasticStep(state, "a", 1, Config(2, 2), false).kind, Kind::kComplete);
  // Done keys of an older generation do not count.
  state.world = World(2, {"a", "b"});
  state.done[2] = {"a"};
  EXPECT_EQ(DecideElasticStep(state, "a", 2, Config(2, 2), false).kind, Kind::kWait);
}

TEST(ElasticPolicyTest, FailureWithBudgetLeftProposesARestartCountedOnce) {
  JobState state = WithWorld(Live({"a", "b"}), World(1, {"a", "b"}));
  state.failures[1] = Failure(1, "b", 1, 7);
  const ElasticStep step = DecideElasticStep(state, "a", 1, Config(2, 2, 3), false);
  EXPECT_EQ(step.kind, Kind::kPropose);
  EXPECT_EQ(step.world, World(2, {"a", "b"}, /*restarts=*/1));
}

TEST(ElasticPolicyTest, FailureWithBudgetSpentFailsWithTheLevelsCode) {
  JobState state = WithWorld(Live({"a", "b"}), World(3, {"a", "b"}, /*restarts=*/2));
  state.failures[3] = Failure(3, "b", 1, 7);
  const ElasticStep tolerant = DecideElasticStep(state, "a", 3, Config(2, 2, 2), false);
  EXPECT_EQ(tolerant.kind, Kind::kFail);
  EXPECT_EQ(tolerant.exit_code, 101);
  EXPECT_EQ(tolerant.failure, Failure(3, "b", 1, 7));
  const ElasticStep elastic = DecideElasticStep(state, "a", 3, Config(1, 2, 2), false);
  EXPECT_EQ(elastic.kind, Kind::kFail);
  EXPECT_EQ(elastic.exit_code, 3);
}

// Paddle's elastic levels (docs/elastic.md, "Elastic levels"; issue #29 item 9).
TEST(ElasticLevelTest, MinusOneEndsTheJobOnAFailureWhateverTheBudget) {
  JobState state = WithWorld(Live({"a", "b"}), World(1, {"a", "b"}));
  state.failures[1] = Failure(1, "b", 1, 7);
  const ElasticStep step = DecideElasticStep(state, "a", 1, Config(2, 2, 3, -1), false);
  EXPECT_EQ(step.kind, Kind::kFail);
  EXPECT_EQ(step.exit_code, 7);  // The rank's code, on every node.
  EXPECT_EQ(step.cause, "rank 1 on node 10.0.0.2 exited with code 7");
}

TEST(ElasticLevelTest, MinusOneEndsTheJobWhenAMemberLeaves) {
  const JobState state = WithWorld(Live({"a", "c"}), World(1, {"a", "b"}));
  const ElasticStep step = DecideElasticStep(state, "a", 1, Config(2, 2, 3, -1), false);
  EXPECT_EQ(step.kind, Kind::kFail);
  EXPECT_EQ(step.exit_code, 1);
  EXPECT_EQ(step.cause, "node 10.0.0.2 left the job");
  // Levels 0 and 1: the spare takes the free position.
  for (int level : {0, 1}) {
    EXPECT_EQ(DecideElasticStep(state, "a", 1, Config(2, 2, 3, level), false).kind, Kind::kPropose);
  }
  // A node that is not a member (the spare) does not fail with them.
  EXPECT_NE(DecideElasticStep(state, "c", 0, Config(2, 2, 3, -1), false).kind, Kind::kFail);
}

TEST(ElasticLevelTest, MinusOneDoesNotReformAStoppedWorld) {
  // Stopped (a member left and came back, or a node joined a range): at -1 the job ends.
  const JobState state = WithWorld(Live({"a", "b"}), World(1, {"a", "b"}));
  const ElasticStep step = DecideElasticStep(state, "a", 1, Config(2, 2, 3, -1), false);
  EXPECT_EQ(step.kind, Kind::kFail);
  EXPECT_EQ(step.exit_code, 1);
  EXPECT_EQ(DecideElasticStep(state, "a", 1, Config(2, 2, 3, 1), false).kind, Kind::kPropose);
}

TEST(ElasticPolicyTest, FailedWorldIsNeverRunEvenIfNew) {
  JobState state = WithWorld(Live({"a", "b"}), World(1, {"a", "b"}));
  state.failures[1] = Failure(1, "b", 1, 7);
  EXPECT_EQ(DecideElasticStep(state, "a", 0, Config(2, 2, 0), false).kind, Kind::kFail);
}

TEST(ElasticPolicyTest, ReplacementTakesTheFreePositionWithoutARestart) {
  const JobState state = WithWorld(Live({"a", "c"}), World(1, {"a", "b"}, /*restarts=*/1));
  const ElasticStep step = DecideElasticStep(state, "a", 1, Config(2, 2), false);
  EXPECT_EQ(step.kind, Kind::kPropose);
  EXPECT_EQ(step.world, World(2, {"a", "c"}, /*restarts=*/1));
}

TEST(ElasticPolicyTest, SurvivorWaitsWhileTooFewNodesAreLeft) {
  const JobState state = WithWorld(Live({"a"}), World(1, {"a", "b"}));
  const ElasticStep step = DecideElasticStep(state, "a", 1, Config(2, 2), false);
  EXPECT_EQ(step.kind, Kind::kWait);
  EXPECT_EQ(step.status,
            "not ready for np 2 with hosts [10.0.0.1]: 1 registered, waiting for 1 more; gone: "
            "10.0.0.2");
}

TEST(ElasticPolicyTest, NodeBeyondAFullWorldWaitsAsASpare) {
  const JobState state = WithWorld(Live({"a", "b", "c"}), World(1, {"a", "b"}));
  const ElasticStep step = DecideElasticStep(state, "c", 0, Config(2, 2), false);
  EXPECT_EQ(step.kind, Kind::kWait);
  EXPECT_EQ(step.status, "the job runs with 2 nodes (np 2); waiting as a spare");
}

TEST(ElasticPolicyTest, ElasticWorldGrowsWithANewcomer) {
  const JobState state = WithWorld(Live({"a", "b", "c"}), World(1, {"a", "b"}));
  const ElasticStep step = DecideElasticStep(state, "c", 0, Config(1, 3), false);
  EXPECT_EQ(step.kind, Kind::kPropose);
  EXPECT_EQ(step.world, World(2, {"a", "b", "c"}));
}

TEST(ElasticPolicyTest, WorldDoesNotGrowOnceANodeIsDone) {
  JobState state = WithWorld(Live({"a", "b", "c"}), World(1, {"a", "b"}));
  state.done[1] = {"a"};
  EXPECT_EQ(DecideElasticStep(state, "c", 0, Config(1, 3), false).kind, Kind::kWait);
}

TEST(ElasticPolicyTest, WorldOfAnEarlierRunIsHistory) {
  JobState state = WithWorld(Live({"a", "b"}), World(4, {"x", "y"}, /*restarts=*/3));
  state.failures[4] = Failure(4, "y", 1, 7);
  const ElasticStep step = DecideElasticStep(state, "a", 0, Config(2, 2, 3), false);
  EXPECT_EQ(step.kind, Kind::kPropose);
  EXPECT_EQ(step.world, World(5, {"a", "b"}, /*restarts=*/0));
}

TEST(ElasticPolicyTest, HealthyRunningWorldKeepsRunning) {
  const JobState state = WithWorld(Live({"a", "b"}), World(1, {"a", "b"}));
  EXPECT_EQ(ReasonToStop(state, World(1, {"a", "b"}), Config(2, 2)), std::nullopt);
}

TEST(ElasticPolicyTest, ReasonsToStopName) {
  const WorldRecord running = World(1, {"a", "b"});
  EXPECT_EQ(ReasonToStop(WithWorld(Live({"a", "b"}), World(2, {"a", "b"})), running, Config(2, 2)),
            "the job formed a new world (generation 2)");
  JobState failed = WithWorld(Live({"a", "b"}), running);
  failed.failures[1] = Failure(1, "b", 1, 7);
  EXPECT_EQ(ReasonToStop(failed, running, Config(2, 2)), DescribeFailure(Failure(1, "b", 1, 7)));
  EXPECT_EQ(ReasonToStop(WithWorld(Live({"a"}), running), running, Config(2, 2)),
            "node 10.0.0.2 left the job");
  EXPECT_EQ(ReasonToStop(WithWorld(Live({"a", "b", "c"}), running), running, Config(1, 3)),
            "node 10.0.0.3 joined the job");
  // A full fault-tolerant world ignores newcomers: they are spares.
  EXPECT_EQ(ReasonToStop(WithWorld(Live({"a", "b", "c"}), running), running, Config(2, 2)),
            std::nullopt);
}

TEST(ElasticPolicyTest, HostsAreListedInJoinOrder) {
  EXPECT_EQ(FormatHosts(Live({"c", "a"})), "[10.0.0.3, 10.0.0.1]");
  EXPECT_EQ(FormatHosts(JobState{}), "[]");
}

}  // namespace
}  // namespace pdlaunch
