#include "pdlaunch/plan/cloud.h"

#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/plan/trainer_env.h"
#include "support/device_plans.h"

namespace pdlaunch {
namespace {

using testutil::GpuPlan;

using Strings = std::vector<std::string>;

// The cloud variables of Paddle's test_fleet_launch_cloud.sh (docs/design.md, "Paddle's own
// launcher tests").
EnvMap CloudTestEnv() {
  return {{"PADDLE_TRAINERS_NUM", "2"},
          {"POD_IP", "127.0.0.1"},
          {"PADDLE_TRAINERS", "127.0.0.1,127.0.0.2"},
          {"PADDLE_TRAINER_ID", "0"},
          {"PADDLE_PORT", "35789"},
          {"TRAINER_PORTS_NUM", "2"}};
}

// The cloud variables of Paddle's test_fleet_launch_async.sh (docs/design.md, "Paddle's own
// launcher tests").
EnvMap AbortTestEnv() {
  return {{"DISTRIBUTED_TRAINER_ENDPOINTS",
           "127.0.0.1:6170,127.0.0.1:6171,127.0.0.2:6170,127.0.0.2:6171"},
          {"PADDLE_TRAINERS_NUM", "2"},
          {"POD_IP", "127.0.0.1"},
          {"PADDLE_TRAINERS", "127.0.0.1,127.0.0.2"},
          {"PADDLE_TRAINER_ID", "0"},
          {"TRAINER_PORTS_NUM", "2"}};
}

CloudCluster Build(const EnvMap& env, const std::string& ips = "127.0.0.1,127.0.0.2", int gpus = 2,
                   int start_port = kDefaultCloudStartPort) {
  const std::optional<CloudEnv> cloud = DetectCloud(env);
  if (!cloud) throw std::logic_error("cloud not detected");
  return BuildCloudCluster(*cloud, ips, GpuPlan(gpus), start_port);
}

// The line Paddle's multi_process.py helper prints, from the variables the trainer receives.
std::string MultiProcessLine(const Cluster& cluster, const Trainer& trainer) {
  EnvMap env;
  for (const auto& [name, value] : TrainerTable(cluster, trainer)) env[name] = value;
  return "selected_gpus:" + env["FLAGS_selected_gpus"] +
         " worker_endpoints:" + env["PADDLE_TRAINER_ENDPOINTS"] +
         " trainers_num:" + env["PADDLE_TRAINERS_NUM"] +
         " current_endpoint:" + env["PADDLE_CURRENT_ENDPOINT"] +
         " trainer_id:" + env["PADDLE_TRAINER_ID"];
}

std::string LineOf(const Cluster& cluster, size_t local) {
  return MultiProcessLine(cluster, cluster.local_pod().trainers.at(local));
}

template <typename Error>
std::string ErrorOf(const EnvMap& env, const std::string& ips = "127.0.0.1,127.0.0.2") {
  try {
    Build(env, ips);
  } catch (const Error& error) {
    return error.what();
  }
  return "nothing thrown";
}

TEST(CloudTest, DetectionNeedsAllFourVariables) {
  for (const char* name : {"PADDLE_TRAINERS", "POD_IP", "PADDLE_TRAINER_ID", "TRAINER_PORTS_NUM"}) {
    EnvMap env = CloudTestEnv();
    env.erase(name);
    EXPECT_FALSE(DetectCloud(env).has_value()) << name;
  }
  EXPECT_FALSE(DetectCloud({}).has_value());
}

TEST(CloudTest, EmptyValuesCountAsSet) {
  const EnvMap env = {{"PADDLE_TRAINERS", ""},
                      {"POD_IP", ""},
                      {"PADDLE_TRAINER_ID", ""},
                      {"TRAINER_PORTS_NUM", ""},
                      {"PADDLE_PORT", ""}};
  const std::optional<CloudEnv> cloud = DetectCloud(env);
  ASSERT_TRUE(cloud.has_value());
  EXPECT_EQ(cloud->trainers, "");
  EXPECT_FALSE(cloud->trainers_num.has_value());
  EXPECT_FALSE(cloud->trainer_endpoints.has_value());
  EXPECT_FALSE(cloud->paddle_port.has_value());
}

TEST(CloudTest, DetectionKeepsTheRawValues) {
  const std::optional<CloudEnv> cloud = DetectCloud(AbortTestEnv());
  ASSERT_TRUE(cloud.has_value());
  EXPECT_EQ(cloud->trainers, "127.0.0.1,127.0.0.2");
  EXPECT_EQ(cloud->pod_ip, "127.0.0.1");
  EXPECT_EQ(cloud->trainer_id, "0");
  EXPECT_EQ(cloud->trainer_ports_num, "2");
  EXPECT_EQ(cloud->trainers_num, "2");
  EXPECT_EQ(cloud->trainer_endpoints,
            "127.0.0.1:6170,127.0.0.1:6171,127.0.0.2:6170,127.0.0.2:6171");
  EXPECT_FALSE(cloud->paddle_port.has_value());
}

TEST(CloudTest, CloudClusterOnlyWhenTrainersNumIsNotOne) {
  CloudEnv cloud = *DetectCloud(CloudTestEnv());
  EXPECT_TRUE(UsesCloudCluster(cloud));
  cloud.trainers_num = " 1 ";
  EXPECT_FALSE(UsesCloudCluster(cloud));
  cloud.trainers_num.reset();
  EXPECT_FALSE(UsesCloudCluster(cloud));
  cloud.trainers_num = "0";
  EXPECT_TRUE(UsesCloudCluster(cloud));
  cloud.trainers_num = "two";
  try {
    UsesCloudCluster(cloud);
    ADD_FAILURE() << "nothing thrown";
  } catch (const UsageError& error) {
    EXPECT_STREQ(error.what(), "PADDLE_TRAINERS_NUM: 'two' is not an integer");
  }
}

TEST(CloudTest, PaddleCloudTestStringsComeOutExactly) {
  const CloudCluster result = Build(CloudTestEnv());
  EXPECT_EQ(result.warnings, Strings{"Use Cloud specified port:35789."});
  EXPECT_EQ(LineOf(result.cluster, 0),
            "selected_gpus:0 worker_endpoints:127.0.0.1:35789,127.0.0.1:35790,127.0.0.2:35789,"
            "127.0.0.2:35790 trainers_num:4 current_endpoint:127.0.0.1:35789 trainer_id:0");
  EXPECT_EQ(LineOf(result.cluster, 1),
            "selected_gpus:1 worker_endpoints:127.0.0.1:35789,127.0.0.1:35790,127.0.0.2:35789,"
            "127.0.0.2:35790 trainers_num:4 current_endpoint:127.0.0.1:35790 trainer_id:1");
  EXPECT_EQ(result.cluster.master, (Endpoint{"127.0.0.1", 35791}));
}

TEST(CloudTest, AbortTestStringsComeOutExactly) {
  const CloudCluster result = Build(AbortTestEnv());
  EXPECT_EQ(result.warnings, Strings{});
  EXPECT_EQ(LineOf(result.cluster, 0),
            "selected_gpus:0 worker_endpoints:127.0.0.1:6170,127.0.0.1:6171,127.0.0.2:6170,"
            "127.0.0.2:6171 trainers_num:4 current_endpoint:127.0.0.1:6170 trainer_id:0");
  EXPECT_EQ(result.cluster.master, (Endpoint{"127.0.0.1", 6172}));
}

TEST(CloudTest, SecondNodeTakesItsPodByTrainerId) {
  EnvMap env = CloudTestEnv();
  env["PADDLE_TRAINER_ID"] = "1";
  env["POD_IP"] = "127.0.0.2";
  const CloudCluster result = Build(env);
  EXPECT_EQ(result.cluster.local_index, 1);
  EXPECT_EQ(LineOf(result.cluster, 1),
            "selected_gpus:1 worker_endpoints:127.0.0.1:35789,127.0.0.1:35790,127.0.0.2:35789,"
            "127.0.0.2:35790 trainers_num:4 current_endpoint:127.0.0.2:35790 trainer_id:3");
  EXPECT_EQ(result.cluster.master, (Endpoint{"127.0.0.1", 35791}));
}

TEST(CloudTest, IpsThatDifferFromPaddleTrainersGiveTheNoteWarning) {
  const CloudCluster result = Build(CloudTestEnv(), "10.0.0.1,10.0.0.2");
  ASSERT_EQ(result.warnings.size(), 2u);
  EXPECT_EQ(result.warnings[0],
            "Please NOTE: When using paddlecloud, cluster_node_ips is automatically got from "
            "PADDLE_TRAINERS(multi nodes) or POD_IP(single node).Your input cluster_node_ips: "
            "10.0.0.1,10.0.0.2 doesn't equals to IPs: ['127.0.0.1', '127.0.0.2'] from "
            "paddlecloud environment.");
  EXPECT_EQ(result.warnings[1], "Use Cloud specified port:35789.");
  EXPECT_EQ(Build(CloudTestEnv(), "127.0.0.1").warnings,
            Strings{"Use Cloud specified port:35789."});
}

TEST(CloudTest, StartPortWithoutPaddlePort) {
  EnvMap env = CloudTestEnv();
  env.erase("PADDLE_PORT");
  const CloudCluster result = Build(env, "127.0.0.1,127.0.0.2", 2, 7000);
  EXPECT_EQ(result.warnings, Strings{});
  EXPECT_EQ(JoinEndpoints(result.cluster.world_endpoints()),
            "127.0.0.1:7000,127.0.0.1:7001,127.0.0.2:7000,127.0.0.2:7001");
  EXPECT_EQ(result.cluster.master, (Endpoint{"127.0.0.1", 7002}));
}

TEST(CloudTest, PaddlePortIgnoredWhenEqualTooFewPortsOrOneNode) {
  EnvMap env = CloudTestEnv();
  EXPECT_EQ(Build(env, "127.0.0.1,127.0.0.2", 2, 35789).warnings, Strings{});
  env["TRAINER_PORTS_NUM"] = "1";
  const CloudCluster few = Build(env);
  EXPECT_EQ(few.warnings, Strings{});
  EXPECT_EQ(few.cluster.local_pod().trainers.at(1).endpoint, (Endpoint{"127.0.0.1", 6171}));
  env = CloudTestEnv();
  env["PADDLE_TRAINERS"] = "127.0.0.1";
  const CloudCluster one = Build(env, "127.0.0.1");
  EXPECT_EQ(one.warnings, Strings{});
  EXPECT_EQ(JoinEndpoints(one.cluster.world_endpoints()), "127.0.0.1:6170,127.0.0.1:6171");
}

TEST(CloudTest, MalformedPaddlePortIsIgnoredWithAWarning) {
  EnvMap env = CloudTestEnv();
  env["PADDLE_PORT"] = "port";
  const CloudCluster result = Build(env);
  EXPECT_EQ(result.warnings,
            Strings{"PADDLE_PORT: 'port' is not an integer; ignored, the start port is 6170"});
  EXPECT_EQ(result.cluster.local_pod().trainers.at(0).endpoint, (Endpoint{"127.0.0.1", 6170}));
}

TEST(CloudTest, DistributedEndpointsMayGiveEachNodeOtherPorts) {
  EnvMap env = AbortTestEnv();
  env["TRAINER_PORTS_NUM"] = "3";
  env["DISTRIBUTED_TRAINER_ENDPOINTS"] =
      "127.0.0.1:35000,127.0.0.1:35001,127.0.0.1:35002,127.0.0.2:41000,127.0.0.2:41007,"
      "127.0.0.2:41009";
  env["PADDLE_PORT"] = "50000";  // Not used with DISTRIBUTED_TRAINER_ENDPOINTS.
  const CloudCluster result = Build(env);
  EXPECT_EQ(result.warnings, Strings{});
  EXPECT_EQ(JoinEndpoints(result.cluster.world_endpoints()),
            "127.0.0.1:35000,127.0.0.1:35001,127.0.0.2:41000,127.0.0.2:41007");
  EXPECT_EQ(result.cluster.master, (Endpoint{"127.0.0.1", 35002}));
}

TEST(CloudTest, PodIpNotInPaddleTrainersIsLaunchError) {
  EnvMap env = CloudTestEnv();
  env["POD_IP"] = "10.0.0.9";
  EXPECT_EQ(ErrorOf<LaunchError>(env),
            "POD_IP=10.0.0.9 is not in PADDLE_TRAINERS=127.0.0.1,127.0.0.2");
}

TEST(CloudTest, PodIpOfAnotherEntryThanTrainerIdIsAWarning) {
  EnvMap env = CloudTestEnv();
  env["PADDLE_TRAINER_ID"] = "1";
  const CloudCluster result = Build(env);
  EXPECT_EQ(result.cluster.local_index, 1);
  EXPECT_EQ(result.warnings[0],
            "POD_IP=127.0.0.1 is not entry 1 of PADDLE_TRAINERS=127.0.0.1,127.0.0.2 "
            "(PADDLE_TRAINER_ID=1): this node runs the trainers of node 1 (127.0.0.2)");
}

TEST(CloudTest, BadValuesAreUsageErrorsNamingTheVariable) {
  EnvMap env = CloudTestEnv();
  env["PADDLE_TRAINER_ID"] = "2";
  EXPECT_EQ(ErrorOf<UsageError>(env), "PADDLE_TRAINER_ID: '2' must be between 0 and 1");
  env = CloudTestEnv();
  env["TRAINER_PORTS_NUM"] = "x";
  EXPECT_EQ(ErrorOf<UsageError>(env), "TRAINER_PORTS_NUM: 'x' is not an integer");
  env = CloudTestEnv();
  env["PADDLE_TRAINERS"] = "127.0.0.1,,127.0.0.2";
  EXPECT_EQ(ErrorOf<UsageError>(env), "PADDLE_TRAINERS=127.0.0.1,,127.0.0.2: empty entry");
  env = CloudTestEnv();
  env["PADDLE_PORT"] = "65535";
  EXPECT_EQ(ErrorOf<UsageError>(env), "3 ports from the start port 65535 go beyond 65535");
}

TEST(CloudTest, WrongDistributedEndpointsAreUsageErrors) {
  EnvMap env = AbortTestEnv();
  env["DISTRIBUTED_TRAINER_ENDPOINTS"] = "127.0.0.1:6170,127.0.0.1:6171,127.0.0.2:6170";
  EXPECT_EQ(ErrorOf<UsageError>(env),
            "DISTRIBUTED_TRAINER_ENDPOINTS has 3 endpoints, expected 4 (2 nodes in "
            "PADDLE_TRAINERS × TRAINER_PORTS_NUM=2)");
  env = AbortTestEnv();
  env["TRAINER_PORTS_NUM"] = "1";
  env["DISTRIBUTED_TRAINER_ENDPOINTS"] = "127.0.0.1:6170,127.0.0.2:6170";
  EXPECT_EQ(ErrorOf<UsageError>(env),
            "TRAINER_PORTS_NUM=1 gives each node fewer endpoints of DISTRIBUTED_TRAINER_ENDPOINTS "
            "than its 2 trainers");
  env = AbortTestEnv();
  env["DISTRIBUTED_TRAINER_ENDPOINTS"] = "127.0.0.1:6170,127.0.0.1,127.0.0.2:6170,127.0.0.2:6171";
  EXPECT_EQ(ErrorOf<UsageError>(env),
            "DISTRIBUTED_TRAINER_ENDPOINTS: '127.0.0.1' is not an endpoint (expected host:port)");
  env = AbortTestEnv();
  env["DISTRIBUTED_TRAINER_ENDPOINTS"] =
      "127.0.0.1:6170,127.0.0.1:6171,127.0.0.2:6170,127.0.0.1:6170";
  EXPECT_EQ(ErrorOf<UsageError>(env),
            "DISTRIBUTED_TRAINER_ENDPOINTS: '127.0.0.1:6170' is listed twice");
}

TEST(CloudTest, AHostListedTwiceNeedsDistributedEndpoints) {
  EnvMap env = CloudTestEnv();
  env["PADDLE_TRAINERS"] = "127.0.0.1,127.0.0.1";
  EXPECT_EQ(ErrorOf<UsageError>(env, "127.0.0.1,127.0.0.1"),
            "PADDLE_TRAINERS=127.0.0.1,127.0.0.1: '127.0.0.1' is listed twice, and without "
            "DISTRIBUTED_TRAINER_ENDPOINTS both would get the same ports");
  // Two nodes on one host, placed apart by the cloud's endpoints: fine.
  env = AbortTestEnv();
  env["PADDLE_TRAINERS"] = "127.0.0.1,127.0.0.1";
  env["DISTRIBUTED_TRAINER_ENDPOINTS"] =
      "127.0.0.1:6170,127.0.0.1:6171,127.0.0.1:6180,127.0.0.1:6181";
  EXPECT_EQ(JoinEndpoints(Build(env, "127.0.0.1,127.0.0.1").cluster.world_endpoints()),
            "127.0.0.1:6170,127.0.0.1:6171,127.0.0.1:6180,127.0.0.1:6181");
}

// Checked here, where PaddleCloud is known; the syntax is address_syntax.h's (its test name kept).
TEST(AddressSyntaxTest, KubernetesAndPaddleCloudVariablesAreCheckedUnderTheirNames) {
  auto error = [](const EnvMap& env, std::optional<std::string> host = std::nullopt) {
    LaunchOptions options;
    options.host = std::move(host);
    try {
      CheckAddressVariables(options, env);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // PaddleCloud is present when all four of these are (cloud.h).
  const auto cloud = [](EnvMap env) {
    env.try_emplace("POD_IP", "10.0.0.1");
    env.try_emplace("PADDLE_TRAINERS", "10.0.0.1,10.0.0.2");
    env.try_emplace("PADDLE_TRAINER_ID", "0");
    env.try_emplace("TRAINER_PORTS_NUM", "1");
    return env;
  };
  EXPECT_EQ(error(cloud({{"POD_IP", "10.0.0.7"}, {"PADDLE_TRAINERS", "10.0.0.7,node-b"}})), "");
  EXPECT_EQ(error({{"POD_IP", ""}, {"PADDLE_TRAINERS", " "}}), "");  // Empty is unset.
  EXPECT_EQ(error({{"POD_IP", "1.2.3"}}),
            "POD_IP: '1.2.3' is not an IPv4 address (four numbers 0-255, a.b.c.d)");
  EXPECT_EQ(error({{"POD_IP", "::gg"}}), "POD_IP: '::gg' is not an IPv6 address");
  EXPECT_EQ(error({{"POD_IP", "1.2.3"}}, "10.0.0.1"), "");  // --host wins: POD_IP is not read.
  EXPECT_EQ(error(cloud({{"PADDLE_TRAINERS", "10.0.0.1,10.0.0.300"}})),
            "PADDLE_TRAINERS: '10.0.0.300' is not an IPv4 address (four numbers 0-255, a.b.c.d)");
  EXPECT_EQ(error({{"PADDLE_TRAINERS", "10.0.0.1,10.0.0.300"}}), "");  // Not PaddleCloud: unread.
  EXPECT_EQ(error(cloud({{"DISTRIBUTED_TRAINER_ENDPOINTS", "1.2.3:80,10.0.0.2:6170"}})),
            "DISTRIBUTED_TRAINER_ENDPOINTS: '1.2.3' is not an IPv4 address (four numbers 0-255, "
            "a.b.c.d)");
}

}  // namespace
}  // namespace pdlaunch
