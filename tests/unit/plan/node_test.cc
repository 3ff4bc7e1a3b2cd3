#include "pdlaunch/plan/node.h"

#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

using Strings = std::vector<std::string>;

const NodeEnv kLocal{std::nullopt, {"127.0.0.1", "10.0.0.3"}, {}};

NodeEnv WithPodIp(const std::string& pod_ip) { return NodeEnv{pod_ip, kLocal.local_addresses, {}}; }

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

TEST(NodeTest, HostNamesWithoutResolvedAddressesMatchOnlyTheSameString) {
  EXPECT_EQ(ErrorOf("localhost,node-b", std::nullopt, kLocal, kExitSetupError),
            "this node is not in --ips=localhost,node-b: local addresses are "
            "[127.0.0.1, 10.0.0.3]; pass --host or set POD_IP");
  EXPECT_EQ(ResolveNode("node-a,node-b", "node-b", kLocal).node_index, 1);
}

NodeEnv Resolved(std::optional<std::string> pod_ip = std::nullopt) {
  NodeEnv env{std::move(pod_ip), kLocal.local_addresses, {}};
  env.resolved["node-a"] = {"10.0.0.1"};
  env.resolved["node-b"] = {"10.0.0.3", "fd00::3"};
  return env;
}

TEST(NodeTest, ResolvedHostNameMatchesALocalAddressAndIsKeptAsGiven) {
  const NodeIdentity node = ResolveNode("node-a, node-b", std::nullopt, Resolved());
  EXPECT_EQ(node.node_ips, (Strings{"node-a", "node-b"}));
  EXPECT_EQ(node.node_index, 1);
  EXPECT_EQ(node.how, "local interface");
}

TEST(NodeTest, HostAddressMatchesAResolvedHostName) {
  EXPECT_EQ(ResolveNode("node-a,node-b", "10.0.0.1", Resolved()).node_index, 0);
  EXPECT_EQ(ResolveNode("node-a,node-b", "fd00:0::3", Resolved()).node_index, 1);
  EXPECT_EQ(ResolveNode("node-a,node-b", std::nullopt, Resolved("10.0.0.1")).node_index, 0);
}

TEST(NodeTest, MixedNamesAndLiteralsMatchEitherWay) {
  NodeEnv env = Resolved();
  env.resolved.erase("node-b");
  const NodeIdentity node = ResolveNode("node-a,10.0.0.3", std::nullopt, env);
  EXPECT_EQ(node.node_index, 1);
  EXPECT_EQ(node.node_ips, (Strings{"node-a", "10.0.0.3"}));
}

TEST(NodeTest, ErrorsListWhatTheHostNamesResolvedTo) {
  EXPECT_EQ(ErrorOf("node-a,node-b", "10.0.0.9", Resolved(), kExitSetupError),
            "--host 10.0.0.9 is not in --ips=node-a,node-b: local addresses are "
            "[127.0.0.1, 10.0.0.3]; host names resolve to node-a=[10.0.0.1], "
            "node-b=[10.0.0.3, fd00::3]");
  NodeEnv both = Resolved();
  both.resolved["node-a"] = {"127.0.0.1"};
  EXPECT_EQ(ErrorOf("node-a,node-b", std::nullopt, both, kExitSetupError),
            "several entries of --ips=node-a,node-b are addresses of this node: "
            "[node-a, node-b] (local addresses are [127.0.0.1, 10.0.0.3]; host names resolve to "
            "node-a=[127.0.0.1], node-b=[10.0.0.3, fd00::3]); pass --host or set POD_IP");
}

TEST(NodeTest, NothingToResolveForASingleEntry) {
  EXPECT_EQ(HostNamesToResolve("node-a", std::nullopt, std::nullopt), Strings{});
}

TEST(NodeTest, NothingToResolveWhenHostOrPodIpIsLiterallyAnEntry) {
  EXPECT_EQ(HostNamesToResolve("node-a,node-b", "node-b", std::nullopt), Strings{});
  EXPECT_EQ(HostNamesToResolve("node-a,10.0.0.2", std::nullopt, "10.0.0.2"), Strings{});
  EXPECT_EQ(HostNamesToResolve("node-a,fd00::2", "fd00:0::2", std::nullopt), Strings{});
}

TEST(NodeTest, NamesThatAreNotIpLiteralsAreResolvedInListOrder) {
  EXPECT_EQ(HostNamesToResolve("node-b,10.0.0.1,node-a,::1", std::nullopt, std::nullopt),
            (Strings{"node-b", "node-a"}));
  EXPECT_EQ(HostNamesToResolve("node-a,node-b", "10.0.0.1", std::nullopt),
            (Strings{"node-a", "node-b"}));
  EXPECT_EQ(HostNamesToResolve("node-a,node-b", std::nullopt, ""), (Strings{"node-a", "node-b"}));
  EXPECT_EQ(HostNamesToResolve("node-a,node-b", "10.0.0.1", "node-a"),
            (Strings{"node-a", "node-b"}));
}

TEST(NodeTest, HostNamesToResolveRefusesABadList) {
  try {
    HostNamesToResolve("node-a,node-a", std::nullopt, std::nullopt);
    ADD_FAILURE() << "nothing thrown";
  } catch (const UsageError& error) {
    EXPECT_STREQ(error.what(), "--ips=node-a,node-a: 'node-a' is listed twice");
  }
}

TEST(NodeTest, IpLiteralsAreDottedQuadsAndIpv6) {
  EXPECT_TRUE(IsIpLiteral("10.0.0.1"));
  EXPECT_TRUE(IsIpLiteral("fd00::1"));
  EXPECT_TRUE(IsIpLiteral("::ffff:10.0.0.1"));
  EXPECT_FALSE(IsIpLiteral("10.1"));
  EXPECT_FALSE(IsIpLiteral("node-a"));
  EXPECT_FALSE(IsIpLiteral("10.0.0.1:6070"));
  EXPECT_FALSE(IsIpLiteral(""));
}

TEST(NodeTest, Ipv6LiteralsMatchInCanonicalForm) {
  const NodeEnv env{std::nullopt, {"::1", "fd00::2"}, {}};
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
