#include "pdlaunch/plan/topology.h"

#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

using Endpoints = std::vector<Endpoint>;

NodeIdentity Nodes(std::vector<std::string> ips, int index) {
  return NodeIdentity{std::move(ips), index, "test"};
}

DevicePlan GpuPlan(std::vector<std::vector<int>> devices) {
  DevicePlan plan;
  plan.family = GpuFamily();
  plan.mode = DeviceMode::kGpu;
  plan.backend = "nccl";
  plan.devices_per_proc = std::move(devices);
  return plan;
}

DevicePlan CpuPlan(int processes) {
  DevicePlan plan;
  plan.backend = "gloo";
  plan.devices_per_proc.assign(static_cast<size_t>(processes), {});
  return plan;
}

TEST(TopologyTest, SingleNodeFourGpusHasOneTrainerPerGpu) {
  const Cluster cluster = BuildCollectiveCluster(
      Nodes({"127.0.0.1"}, 0), GpuPlan({{0}, {1}, {2}, {3}}), {41000, 41001, 41002, 41003}, 41004);
  ASSERT_EQ(cluster.pods.size(), 1u);
  EXPECT_EQ(cluster.world_size(), 4);
  EXPECT_EQ(cluster.local_index, 0);
  EXPECT_EQ(cluster.mode, DeviceMode::kGpu);
  EXPECT_EQ(cluster.backend, "nccl");
  const Trainer& trainer = cluster.local_pod().trainers.at(2);
  EXPECT_EQ(trainer.global_rank, 2);
  EXPECT_EQ(trainer.local_rank, 2);
  EXPECT_EQ(trainer.endpoint, (Endpoint{"127.0.0.1", 41002}));
  EXPECT_EQ(trainer.devices, std::vector<int>{2});
  EXPECT_EQ(cluster.world_device_ids(), "0,1,2,3");
}

TEST(TopologyTest, RanksAreNodeMajorWithTheSamePortsOnEveryNode) {
  const Cluster cluster = BuildCollectiveCluster(Nodes({"10.0.0.1", "10.0.0.2"}, 1),
                                                 GpuPlan({{0}, {1}}), {6070, 6071}, 6072);
  EXPECT_EQ(cluster.world_size(), 4);
  EXPECT_EQ(
      cluster.world_endpoints(),
      (Endpoints{{"10.0.0.1", 6070}, {"10.0.0.1", 6071}, {"10.0.0.2", 6070}, {"10.0.0.2", 6071}}));
  EXPECT_EQ(cluster.local_index, 1);
  EXPECT_EQ(cluster.local_pod().ip, "10.0.0.2");
  EXPECT_EQ(cluster.local_pod().node_index, 1);
  const Trainer& first = cluster.local_pod().trainers.at(0);
  EXPECT_EQ(first.global_rank, 2);
  EXPECT_EQ(first.local_rank, 0);
  EXPECT_EQ(first.endpoint, (Endpoint{"10.0.0.2", 6070}));
  EXPECT_EQ(cluster.world_device_ids(), "0,1,0,1");
}

TEST(TopologyTest, MasterIsNodeZeroOnMasterPort) {
  const Cluster cluster = BuildCollectiveCluster(Nodes({"10.0.0.1", "10.0.0.2"}, 1),
                                                 GpuPlan({{0}, {1}}), {7000, 7001}, 7002);
  EXPECT_EQ(cluster.master, (Endpoint{"10.0.0.1", 7002}));
}

TEST(TopologyTest, ChunkedDevicesJoinWithColons) {
  const Cluster cluster = BuildCollectiveCluster(Nodes({"127.0.0.1"}, 0), GpuPlan({{0, 1}, {2, 3}}),
                                                 {6070, 6071}, 6072);
  EXPECT_EQ(cluster.world_size(), 2);
  EXPECT_EQ(cluster.local_pod().trainers.at(1).devices, (std::vector<int>{2, 3}));
  EXPECT_EQ(cluster.world_device_ids(), "0:1,2:3");
}

TEST(TopologyTest, CpuTrainersCarryNoDevices) {
  const Cluster cluster =
      BuildCollectiveCluster(Nodes({"127.0.0.1"}, 0), CpuPlan(2), {6070, 6071}, 6072);
  EXPECT_EQ(cluster.mode, DeviceMode::kCpu);
  EXPECT_EQ(cluster.backend, "gloo");
  EXPECT_TRUE(cluster.local_pod().trainers.at(0).devices.empty());
  EXPECT_EQ(cluster.world_device_ids(), ",");
}

TEST(TopologyTest, SingleCpuTrainerHasEmptyWorldDeviceIds) {
  const Cluster cluster = BuildCollectiveCluster(Nodes({"127.0.0.1"}, 0), CpuPlan(1), {6070}, 6071);
  EXPECT_EQ(cluster.world_size(), 1);
  EXPECT_EQ(cluster.world_device_ids(), "");
}

TEST(TopologyTest, DevicesOfNonGpuPlanAreDropped) {
  DevicePlan plan = CpuPlan(1);
  plan.devices_per_proc = {{5}};
  const Cluster cluster = BuildCollectiveCluster(Nodes({"127.0.0.1"}, 0), plan, {6070}, 6071);
  EXPECT_TRUE(cluster.local_pod().trainers.at(0).devices.empty());
}

TEST(TopologyTest, ExtraPortsAreNotUsed) {
  const Cluster cluster =
      BuildCollectiveCluster(Nodes({"127.0.0.1"}, 0), GpuPlan({{0}}), {6070, 6071, 6072}, 6073);
  EXPECT_EQ(cluster.world_endpoints(), (Endpoints{{"127.0.0.1", 6070}}));
}

TEST(TopologyTest, TooFewPortsIsLaunchError) {
  try {
    BuildCollectiveCluster(Nodes({"127.0.0.1"}, 0), GpuPlan({{0}, {1}, {2}}), {6070, 6071}, 6072);
    FAIL() << "nothing thrown";
  } catch (const LaunchError& error) {
    EXPECT_EQ(error.exit_code(), kExitSetupError);
    EXPECT_STREQ(error.what(), "3 trainers per node need 3 ports, got 2");
  }
}

TEST(TopologyTest, NodeIndexOutsideIpsIsLaunchError) {
  try {
    BuildCollectiveCluster(Nodes({"10.0.0.1"}, 1), GpuPlan({{0}}), {6070}, 6071);
    FAIL() << "nothing thrown";
  } catch (const LaunchError& error) {
    EXPECT_STREQ(error.what(), "node index 1 is not an entry of --ips=10.0.0.1");
  }
}

TEST(TopologyTest, ExplicitEndpointsMayDifferPerNode) {
  const std::vector<std::vector<Endpoint>> endpoints = {
      {{"10.0.0.1", 35000}, {"10.0.0.1", 35001}, {"10.0.0.1", 35002}},
      {{"10.0.0.2", 41000}, {"10.0.0.2", 41005}, {"10.0.0.2", 41006}}};
  const Cluster cluster = BuildClusterFromEndpoints({"10.0.0.1", "10.0.0.2"}, 1, endpoints,
                                                    GpuPlan({{0}, {1}}), {"10.0.0.1", 35002});
  EXPECT_EQ(
      cluster.world_endpoints(),
      (Endpoints{
          {"10.0.0.1", 35000}, {"10.0.0.1", 35001}, {"10.0.0.2", 41000}, {"10.0.0.2", 41005}}));
  EXPECT_EQ(cluster.local_index, 1);
  EXPECT_EQ(cluster.local_pod().ip, "10.0.0.2");
  EXPECT_EQ(cluster.local_pod().trainers.at(1).global_rank, 3);
  EXPECT_EQ(cluster.local_pod().trainers.at(1).devices, std::vector<int>{1});
  EXPECT_EQ(cluster.master, (Endpoint{"10.0.0.1", 35002}));
  EXPECT_EQ(cluster.world_device_ids(), "0,1,0,1");
}

TEST(TopologyTest, ExplicitEndpointsErrorsAreLaunchErrors) {
  const std::vector<std::string> ips = {"10.0.0.1", "10.0.0.2"};
  const std::vector<std::vector<Endpoint>> short_node = {{{"10.0.0.1", 1}, {"10.0.0.1", 2}},
                                                         {{"10.0.0.2", 1}}};
  const auto error = [&](int index, const std::vector<std::vector<Endpoint>>& endpoints) {
    try {
      BuildClusterFromEndpoints(ips, index, endpoints, GpuPlan({{0}, {1}}), {"10.0.0.1", 3});
    } catch (const LaunchError& e) {
      return std::string(e.what());
    }
    return std::string("nothing thrown");
  };
  EXPECT_EQ(error(0, short_node), "node 1 (10.0.0.2) has 1 endpoints for 2 trainers per node");
  EXPECT_EQ(error(0, {short_node[0]}), "2 nodes need 2 endpoint lists, got 1");
  EXPECT_EQ(error(2, {short_node[0], short_node[0]}),
            "node index 2 is not an entry of [10.0.0.1, 10.0.0.2]");
}

}  // namespace
}  // namespace pdlaunch
