#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/coord/elastic.h"
#include "support/device_plans.h"

namespace pdlaunch {
namespace {

using testutil::CpuPlan;
using testutil::GpuPlan;

using Ids = std::vector<std::string>;
using World = std::optional<Ids>;

WorldRecord TwoNodeWorld() {
  return WorldRecord{3,
                     2,
                     {"a", "b"},
                     {NodeRecord{"10.0.0.1", {6170, 6171, 6172}, 6180, 11},
                      NodeRecord{"10.0.0.2", {7000, 7001}, 7002, 22}}};
}

TEST(ElasticWorldTest, FirstWorldIsJoinOrder) {
  EXPECT_EQ(FormWorld({}, {"c", "a", "b"}, 3, 3, false), World(Ids{"c", "a", "b"}));
}

TEST(ElasticWorldTest, FaultToleranceReplacesDeadMemberInPlace) {
  EXPECT_EQ(FormWorld({"a", "b"}, {"b", "c"}, 2, 2, false), World(Ids{"c", "b"}));
  EXPECT_EQ(FormWorld({"a", "b"}, {"a", "c"}, 2, 2, false), World(Ids{"a", "c"}));
}

TEST(ElasticWorldTest, TooFewLiveNodesFormNoWorld) {
  EXPECT_EQ(FormWorld({"a", "b"}, {"b"}, 2, 2, true), std::nullopt);
  EXPECT_EQ(FormWorld({}, {}, 1, 1, true), std::nullopt);
  EXPECT_EQ(FormWorld({}, {"a"}, 2, 4, true), std::nullopt);
}

TEST(ElasticWorldTest, ElasticRangeWaitsForMaxUntilTimeout) {
  const Ids live = {"a", "b", "c"};
  EXPECT_EQ(FormWorld({}, live, 2, 4, false), std::nullopt);
  EXPECT_EQ(FormWorld({}, live, 2, 4, true), World(live));
  EXPECT_EQ(FormWorld({}, {"a", "b", "c", "d"}, 2, 4, false), World(Ids{"a", "b", "c", "d"}));
}

TEST(ElasticWorldTest, LiveNodesBeyondMaxAreLeftOut) {
  EXPECT_EQ(FormWorld({}, {"a", "b", "c", "d", "e"}, 2, 4, false), World(Ids{"a", "b", "c", "d"}));
  // Previous members keep their seats before newcomers that joined earlier.
  EXPECT_EQ(FormWorld({"d", "e"}, {"a", "b", "c", "d", "e"}, 2, 4, false),
            World(Ids{"d", "e", "a", "b"}));
}

TEST(ElasticWorldTest, ScaleOutAppendsNewcomers) {
  EXPECT_EQ(FormWorld({"a", "b"}, {"c", "a", "b"}, 2, 4, true), World(Ids{"a", "b", "c"}));
}

// Paddle's test_fleet_elastic_manager.py (docs/design.md, "Paddle's own launcher tests"):
// hosts 10.10.10.0..3, 10.10.10.0 leaves → 3, 1, 2.
TEST(ElasticWorldTest, ScaleInMovesLastMemberIntoGap) {
  EXPECT_EQ(FormWorld({"h0", "h1", "h2", "h3"}, {"h1", "h2", "h3"}, 2, 4, true),
            World(Ids{"h3", "h1", "h2"}));
}

TEST(ElasticWorldTest, MembersBeyondNewSizeFillGapsLowestFirst) {
  EXPECT_EQ(FormWorld({"a", "b", "c", "d", "e", "f"}, {"b", "e", "f", "c"}, 1, 6, true),
            World(Ids{"e", "b", "c", "f"}));
  // A smaller maximum (scaled in through /np) displaces the last members.
  EXPECT_EQ(FormWorld({"a", "b", "c", "d"}, {"a", "b", "c", "d"}, 1, 2, true),
            World(Ids{"a", "b"}));
  EXPECT_EQ(FormWorld({"a", "b", "c", "d"}, {"b", "c", "d", "x"}, 1, 3, false),
            World(Ids{"d", "b", "c"}));
}

TEST(ElasticWorldTest, BuildElasticClusterUsesPublishedPorts) {
  const Cluster cluster = BuildElasticCluster(TwoNodeWorld(), "b", GpuPlan(2));
  EXPECT_EQ(cluster.local_index, 1);
  EXPECT_EQ(cluster.mode, DeviceMode::kGpu);
  EXPECT_EQ(cluster.backend, "nccl");
  EXPECT_EQ(cluster.master, (Endpoint{"10.0.0.1", 6180}));
  EXPECT_EQ(JoinEndpoints(cluster.world_endpoints()),
            "10.0.0.1:6170,10.0.0.1:6171,10.0.0.2:7000,10.0.0.2:7001");
  ASSERT_EQ(cluster.pods.size(), 2u);
  EXPECT_EQ(cluster.pods[1].ip, "10.0.0.2");
  EXPECT_EQ(cluster.pods[1].trainers[1].global_rank, 3);
  EXPECT_EQ(cluster.pods[1].trainers[1].local_rank, 1);
  EXPECT_EQ(cluster.pods[1].trainers[1].devices, (std::vector<int>{1}));
  EXPECT_EQ(cluster.world_device_ids(), "0,1,0,1");
}

TEST(ElasticWorldTest, BuildElasticClusterRefusesTooFewPorts) {
  try {
    BuildElasticCluster(TwoNodeWorld(), "a", CpuPlan(3));
    FAIL() << "no error";
  } catch (const LaunchError& error) {
    EXPECT_STREQ(error.what(), "node 10.0.0.2 offers 2 ports for 3 processes");
    EXPECT_EQ(error.exit_code(), 1);
  }
}

TEST(ElasticWorldTest, BuildElasticClusterRefusesNonMember) {
  try {
    BuildElasticCluster(TwoNodeWorld(), "z", CpuPlan(1));
    FAIL() << "no error";
  } catch (const LaunchError& error) {
    EXPECT_STREQ(error.what(), "node z is not a member of world 3");
  }
}

TEST(ElasticWorldTest, ElasticVariablesDescribeWorld) {
  const WorldRecord world = TwoNodeWorld();
  const Cluster cluster = BuildElasticCluster(world, "a", CpuPlan(2));
  const EnvList expected = {
      {"PADDLE_TRAINERS", "10.0.0.1,10.0.0.2"},
      {"DISTRIBUTED_TRAINER_ENDPOINTS", "10.0.0.1:6170,10.0.0.1:6171,10.0.0.2:7000,10.0.0.2:7001"},
      {"PADDLE_ELASTIC_JOB_ID", "job1"},
      {"PADDLE_ELASTIC_GENERATION", "3"},
      {"TORCHELASTIC_RESTART_COUNT", "2"},
  };
  EXPECT_EQ(ElasticVariables(world, cluster, "job1"), expected);
}

TEST(ElasticWorldTest, EndpointsValueJoinsEndpointsAndHosts) {
  const Cluster cluster = BuildElasticCluster(TwoNodeWorld(), "a", CpuPlan(1));
  EXPECT_EQ(FormatEndpointsValue(cluster), "10.0.0.1:6170,10.0.0.2:7000|10.0.0.1,10.0.0.2");
}

}  // namespace
}  // namespace pdlaunch
