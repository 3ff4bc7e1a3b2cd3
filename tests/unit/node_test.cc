#include "pdlaunch/node.h"

#include <gtest/gtest.h>

#include "pdlaunch/errors.h"

namespace pdlaunch {
namespace {

using Strings = std::vector<std::string>;

const NodeEnv kLocal{std::nullopt, {"127.0.0.1", "10.0.0.3"}};

NodeEnv WithPodIp(const std::string& pod_ip) { return NodeEnv{pod_ip, kLocal.local_addresses}; }

// The message of the LaunchError thrown by ResolveNode, checking it is (or is not) a UsageError.
std::string ErrorOf(const std::string& ips, const std::optional<std::string>& host,
                    const NodeEnv& env, int exit_code) {
  try {
    ResolveNode(ips, host, env);
  } catch (const LaunchError& error) {
    EXPECT_EQ(error.exit_code(), exit_code);
    return error.what();
  }
  ADD_FAILURE() << "nothing thrown";
  return "";
}

TEST(NodeTest, SingleEntryIsThisNodeWithoutCheck) {
  const NodeIdentity node = ResolveNode(" 10.0.0.9 ", std::nullopt, kLocal);
  EXPECT_EQ(node.node_ips, Strings{"10.0.0.9"});
  EXPECT_EQ(node.node_index, 0);
  EXPECT_EQ(node.how, "single entry");
}

TEST(NodeTest, SingleEntryBeatsHost) {
  const NodeIdentity node = ResolveNode("10.0.0.9", "10.0.0.1", kLocal);
  EXPECT_EQ(node.node_index, 0);
  EXPECT_EQ(node.how, "single entry");
}

TEST(NodeTest, HostPicksItsEntry) {
  const NodeIdentity node = ResolveNode("10.0.0.1, 10.0.0.2", "10.0.0.2", kLocal);
  EXPECT_EQ(node.node_ips, (Strings{"10.0.0.1", "10.0.0.2"}));
  EXPECT_EQ(node.node_index, 1);
  EXPECT_EQ(node.how, "--host");
}

TEST(NodeTest, HostBeatsPodIp) {
  const NodeIdentity node = ResolveNode("10.0.0.1,10.0.0.2", "10.0.0.1", WithPodIp("10.0.0.2"));
  EXPECT_EQ(node.node_index, 0);
  EXPECT_EQ(node.how, "--host");
}

TEST(NodeTest, HostNotInIpsIsLaunchError) {
  EXPECT_EQ(ErrorOf("10.0.0.1,10.0.0.2", "10.0.0.5", kLocal, kExitSetupError),
            "--host 10.0.0.5 is not in --ips=10.0.0.1,10.0.0.2: local addresses are "
            "[127.0.0.1, 10.0.0.3]");
}

TEST(NodeTest, PodIpPicksItsEntry) {
  const NodeIdentity node =
      ResolveNode("10.0.0.1,10.0.0.2,10.0.0.7", std::nullopt, WithPodIp("10.0.0.7"));
  EXPECT_EQ(node.node_index, 2);
  EXPECT_EQ(node.how, "POD_IP");
}

TEST(NodeTest, PodIpNotInIpsIsLaunchError) {
  EXPECT_EQ(ErrorOf("10.0.0.1,10.0.0.2", std::nullopt, WithPodIp("10.0.0.9"), kExitSetupError),
            "POD_IP=10.0.0.9 is not in --ips=10.0.0.1,10.0.0.2: local addresses are "
            "[127.0.0.1, 10.0.0.3]");
}

TEST(NodeTest, EmptyPodIpIsIgnored) {
  const NodeIdentity node = ResolveNode("10.0.0.3,10.0.0.2", std::nullopt, WithPodIp(""));
  EXPECT_EQ(node.node_index, 0);
  EXPECT_EQ(node.how, "local interface");
}

TEST(NodeTest, LocalInterfaceAddressPicksItsEntry) {
  const NodeIdentity node = ResolveNode("10.0.0.1,10.0.0.2,10.0.0.3", std::nullopt, kLocal);
  EXPECT_EQ(node.node_index, 2);
  EXPECT_EQ(node.how, "local interface");
}

TEST(NodeTest, NoLocalAddressInIpsIsLaunchError) {
  EXPECT_EQ(ErrorOf("10.0.0.1,10.0.0.2", std::nullopt, kLocal, kExitSetupError),
            "this node is not in --ips=10.0.0.1,10.0.0.2: local addresses are "
            "[127.0.0.1, 10.0.0.3]; pass --host or set POD_IP");
}

TEST(NodeTest, SeveralLocalAddressesInIpsIsLaunchError) {
  EXPECT_EQ(ErrorOf("127.0.0.1,10.0.0.3", std::nullopt, kLocal, kExitSetupError),
            "several entries of --ips=127.0.0.1,10.0.0.3 are addresses of this node: "
            "[127.0.0.1, 10.0.0.3] (local addresses are [127.0.0.1, 10.0.0.3]); pass --host or "
            "set POD_IP");
}

TEST(NodeTest, HostNamesAreNeverResolved) {
  EXPECT_EQ(ErrorOf("localhost,node-b", std::nullopt, kLocal, kExitSetupError),
            "this node is not in --ips=localhost,node-b: local addresses are "
            "[127.0.0.1, 10.0.0.3]; pass --host or set POD_IP");
  EXPECT_EQ(ResolveNode("node-a,node-b", "node-b", kLocal).node_index, 1);
}

TEST(NodeTest, Ipv6LiteralsMatchInCanonicalForm) {
  const NodeEnv env{std::nullopt, {"::1", "fd00::2"}};
  const NodeIdentity node = ResolveNode("fd00::1,fd00:0:0::2", std::nullopt, env);
  EXPECT_EQ(node.node_index, 1);
  EXPECT_EQ(node.node_ips, (Strings{"fd00::1", "fd00:0:0::2"}));
}

TEST(NodeTest, DuplicateEntryIsUsageError) {
  EXPECT_EQ(ErrorOf("10.0.0.1,10.0.0.2,10.0.0.1", "10.0.0.1", kLocal, kExitUsageError),
            "--ips=10.0.0.1,10.0.0.2,10.0.0.1: '10.0.0.1' is listed twice");
  EXPECT_EQ(ErrorOf("fd00::1,fd00:0::1", std::nullopt, kLocal, kExitUsageError),
            "--ips=fd00::1,fd00:0::1: 'fd00:0::1' is listed twice");
}

TEST(NodeTest, EmptyEntryIsUsageError) {
  EXPECT_EQ(ErrorOf("10.0.0.1,,10.0.0.2", std::nullopt, kLocal, kExitUsageError),
            "--ips=10.0.0.1,,10.0.0.2: empty entry");
  EXPECT_EQ(ErrorOf("", std::nullopt, kLocal, kExitUsageError), "--ips=: empty entry");
}

}  // namespace
}  // namespace pdlaunch
