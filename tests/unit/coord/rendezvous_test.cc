#include "pdlaunch/coord/rendezvous.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/plan/master_config.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/ps_master.h"
#include "pdlaunch/plan/trainer_env.h"

namespace pdlaunch {
namespace {

PeerInfo Peer(const std::string& name, int rank, const std::string& ip, int first_port,
              int replicas) {
  PeerInfo peer;
  peer.name = name;
  peer.rank = rank;
  peer.replicas = replicas;
  peer.candidate = ip + ":" + std::to_string(first_port + replicas);
  for (int i = 0; i < replicas; ++i) {
    peer.endpoints += (i ? "," : "") + ip + ":" + std::to_string(first_port + i);
  }
  return peer;
}

TEST(PeerInfoTest, EncodesPaddlesJsonAndRoundTrips) {
  const PeerInfo peer = Peer("qhzkbw", -1, "10.0.0.1", 6000, 2);
  EXPECT_EQ(EncodePeerInfo(peer),
            R"({"name": "qhzkbw", "rank": -1, "replicas": 2, "dtype": "cpu", )"
            R"("candidate": "10.0.0.1:6002", "endpoints": "10.0.0.1:6000,10.0.0.1:6001"})");
  EXPECT_EQ(DecodePeerInfo("/k", EncodePeerInfo(peer)), peer);
}

TEST(PeerInfoTest, RefusesMalformedPeers) {
  EXPECT_THROW(DecodePeerInfo("/k", "nope"), LaunchError);
  EXPECT_THROW(DecodePeerInfo("/k", R"({"name": "a"})"), LaunchError);
  PeerInfo peer = Peer("a", -1, "10.0.0.1", 6000, 2);
  peer.replicas = 3;
  EXPECT_THROW(DecodePeerInfo("/k", EncodePeerInfo(peer)), LaunchError);
  peer = Peer("a", -1, "10.0.0.1", 6000, 1);
  peer.candidate = "10.0.0.1";
  EXPECT_THROW(DecodePeerInfo("/k", EncodePeerInfo(peer)), LaunchError);
}

// Numbers are integers in range, never cast: a float such as 1e300 (undefined behaviour as an
// int) or an integer past INT_MAX is malformed; so is a name that is not printable ASCII.
TEST(PeerInfoTest, RefusesNumbersThatAreNotIntegersInRangeAndUnprintableNames) {
  const std::string tail =
      R"("dtype": "cpu", "candidate": "10.0.0.1:6002", "endpoints": "10.0.0.1:6000"})";
  const auto decode = [&](const std::string& name, const std::string& rank,
                          const std::string& replicas) {
    return DecodePeerInfo("/k", R"({"name": )" + name + R"(, "rank": )" + rank +
                                    R"(, "replicas": )" + replicas + ", " + tail);
  };
  EXPECT_EQ(decode(R"("a")", "-1", "1").rank, -1);
  EXPECT_EQ(decode(R"("a")", "7", "1").rank, 7);
  for (const std::string rank : {"1e300", "1.5", "2147483648", "-2147483649",
                                 "18446744073709551615", "true", R"("1")", "null"}) {
    EXPECT_THROW(decode(R"("a")", rank, "1"), LaunchError) << rank;
  }
  EXPECT_THROW(decode(R"("a")", "0", "1e300"), LaunchError);
  for (const std::string name : {R"("")", R"("a b")", R"("\u001b[2J")", R"("\u009b")", "5"}) {
    EXPECT_THROW(decode(name, "0", "1"), LaunchError) << name;
  }
  const PeerInfo long_name = Peer(std::string(254, 'a'), -1, "10.0.0.1", 6000, 1);
  EXPECT_THROW(DecodePeerInfo("/k", EncodePeerInfo(long_name)), LaunchError);
}

// Two jobs on one master: the host of job A leaves when A is done, so a node of job B is refused
// at its first contact (issue #26 item 7); Paddle's master serves any number of jobs.
TEST(ForeignJobTest, OnePdlaunchMasterServesOneJob) {
  const std::string master = "10.0.0.1:8090";
  EXPECT_EQ(ForeignJobError(master, "pdlaunch/1.0", "B", "B"), std::nullopt);
  EXPECT_EQ(ForeignJobError(master, "pdlaunch/1.0", "", "B"), std::nullopt);
  EXPECT_EQ(ForeignJobError(master, "Python/3.10 aiohttp", "A", "B"), std::nullopt);
  EXPECT_EQ(ForeignJobError(master, "", "A", "B"), std::nullopt);
  EXPECT_EQ(ForeignJobError(master, "pdlaunch/1.0", "A", "B"),
            "the master at 10.0.0.1:8090 serves job A, not this node's job B: give each job its "
            "own --master address or port");
  EXPECT_EQ(ForeignJobError(master, "pdlaunch/1.0", "A", "b\nc\x1b"),
            "the master at 10.0.0.1:8090 serves job A, not this node's job b\\nc\\x1b: give "
            "each job its own --master address or port");
}

// A node whose --nnodes or run mode differs from the host's formed a world of its own and
// trained as "rank 1 of 2" of a 3-node job; the terms say so before any rank starts.
TEST(JobTermsTest, MismatchNamesBothValuesAndRecordsRoundTrip) {
  const JobTerms job{3, "collective", ""};
  EXPECT_EQ(TermsMismatch(job, job), std::nullopt);
  EXPECT_EQ(TermsMismatch(job, JobTerms{2, "collective", ""}), "--nnodes 2 where the job's is 3");
  EXPECT_EQ(TermsMismatch(job, JobTerms{3, "ps", ""}), "run mode ps where the job's is collective");
  EXPECT_EQ(EncodeJobTerms(job), R"({"nnodes": 3, "mode": "collective", "node": ""})");
  EXPECT_EQ(DecodeJobTerms(EncodeJobTerms(job)), job);
  const JobTerms named{2, "ps", "10.0.0.2"};
  EXPECT_EQ(DecodeJobTerms(EncodeJobTerms(named)), named);
  // A legacy --ips node's terms are read too: a node of today's interface is refused by them.
  const JobTerms legacy{2, "legacy-collective", "10.0.0.3"};
  EXPECT_EQ(DecodeJobTerms(EncodeJobTerms(legacy)), legacy);
  EXPECT_EQ(TermsMismatch(JobTerms{2, "collective", ""}, legacy),
            "run mode legacy-collective where the job's is collective");
  EXPECT_EQ(DecodeJobTerms(R"({"nnodes": 2, "mode": "ps", "node": "\u001b[2J"})")->node,
            "\\x1b[2J");
  for (const std::string bad : {"", "[]", R"({"nnodes": 3})", R"({"nnodes": 1e300, "mode": "ps"})",
                                R"({"nnodes": 0, "mode": "ps"})", R"({"nnodes": 2, "mode": "x"})",
                                R"({"nnodes": "2", "mode": "ps"})"}) {
    EXPECT_EQ(DecodeJobTerms(bad), std::nullopt) << bad;
  }
}

TEST(JobNewsTest, ReadsTheTermsAndThisNodesRefusal) {
  const MasterKeys keys("job");
  const std::map<std::string, std::string> kvs = {
      {keys.terms(), EncodeJobTerms({3, "collective", ""})},
      {keys.refused("abcdef"), "--nnodes 2 where the job's is 3\x1b"},
      {keys.refused("other"), "not ours"}};
  const JobNews news = ParseNews(keys, "abcdef", kvs);
  EXPECT_EQ(news.terms, (JobTerms{3, "collective", ""}));
  EXPECT_EQ(news.refused, "--nnodes 2 where the job's is 3\\x1b");
  EXPECT_EQ(ParseNews(keys, "zzzzzz", kvs).refused, std::nullopt);
}

TEST(JobNewsTest, NewsKeysAreOutsideWhatJoinsAndHeartbeatsTouch) {
  const MasterKeys keys("j");
  for (const std::string& key :
       {keys.terms(), keys.refused("p"), keys.formed(), keys.failure(), keys.complete()}) {
    EXPECT_TRUE(key.starts_with(keys.news_prefix())) << key;
  }
  for (const std::string& key :
       {keys.info("p", -1), keys.alive("p"), keys.done("p"), keys.node_terms("p"), keys.world()}) {
    EXPECT_FALSE(key.starts_with(keys.news_prefix())) << key;
  }
}

TEST(DecideNodeStepTest, Rules) {
  using K = NodeStep::Kind;
  const JobTerms mine{3, "collective", "10.0.0.2"};
  JobNews news;
  EXPECT_EQ(DecideNodeStep(news, mine, false).kind, K::kWait);
  news.terms = JobTerms{3, "collective", ""};
  EXPECT_EQ(DecideNodeStep(news, mine, false).kind, K::kWait);
  // The node sees the mismatch itself, before the host refuses it.
  NodeStep step = DecideNodeStep(news, {2, "collective", ""}, false);
  EXPECT_EQ(step.kind, K::kRefused);
  EXPECT_EQ(step.reason, "--nnodes 2 where the job's is 3");
  news.refused = "run mode ps where the job's is collective";
  EXPECT_EQ(DecideNodeStep(news, mine, false).reason, *news.refused);
  news.refused.reset();
  news.formed = WorldFormed{3, ""};
  EXPECT_EQ(DecideNodeStep(news, mine, false).kind, K::kReadWorld);
  // Once the world is read, only a failure or the end count.
  EXPECT_EQ(DecideNodeStep(news, mine, true).kind, K::kWait);
  news.complete = true;
  EXPECT_EQ(DecideNodeStep(news, mine, true).kind, K::kComplete);
  news.formed = WorldFormed{0, "nodes a and b both have --rank 1"};
  step = DecideNodeStep(news, mine, false);
  EXPECT_EQ(step.kind, K::kCannotForm);
  EXPECT_EQ(step.reason, "nodes a and b both have --rank 1");
  // A failure wins over everything, before or after the world.
  news.failure = JobFailure{"n", "a", "cause", 9};
  EXPECT_EQ(DecideNodeStep(news, mine, false).kind, K::kJobFailed);
  step = DecideNodeStep(news, mine, true);
  EXPECT_EQ(step.kind, K::kJobFailed);
  EXPECT_EQ(step.failure.exit_code, 9);
}

TEST(WorldRecordTest, RoundTripsAnyBytes) {
  const WorldEntries world = {{"/j/info/aaaaaa/-1", R"({"name": "x"})"},
                              {"/j/info/b,c:d/-1", std::string("1:,\n\0\xff", 7)},
                              {"/j/info/e/-1", ""}};
  const std::string text = EncodeWorld(world);
  EXPECT_TRUE(text.starts_with("3\n17:/j/info/aaaaaa/-1,"));
  EXPECT_EQ(DecodeWorld(text, 3), world);
  EXPECT_EQ(DecodeWorld(EncodeWorld({}), 0), WorldEntries{});
}

TEST(WorldRecordTest, APeerInPaddlesLayoutTravelsAsItsFields) {
  const std::string peer =
      EncodePeerInfo({"abcdef", -1, 2, "gpu", "10.0.0.1:6000", "10.0.0.1:6001,10.0.0.1:6002"});
  const std::string spaced = R"({"name": "abcdef", "rank": -1})";  // Not a peer: as it is.
  const WorldEntries world = {{"/j/info/abcdef/-1", peer}, {"/j/info/x/-1", spaced}};
  const std::string text = EncodeWorld(world);
  EXPECT_NE(text.find("~abcdef -1 2 gpu 10.0.0.1:6000 10.0.0.1:6001,10.0.0.1:6002,"),
            std::string::npos)
      << text;
  EXPECT_LT(EncodeWorld({world[0]}).size(), peer.size());
  EXPECT_EQ(DecodeWorld(text, 2), world);
  for (const std::string bad : {"~a 1 1 cpu", "~a x 1 cpu c e", "~a 1 1 cpu c e f", "~"}) {
    EXPECT_THROW(DecodeWorld(fmt::format("1\n1:k,{}:{},", bad.size(), bad), 1), LaunchError) << bad;
  }
}

TEST(WorldRecordTest, RefusesMalformedRecords) {
  const std::string good = EncodeWorld({{"/j/info/a/-1", "v"}, {"/j/info/b/-1", "w"}});
  EXPECT_NO_THROW(DecodeWorld(good, 2));
  EXPECT_THROW(DecodeWorld(good, 1), LaunchError);  // More members than the job's nodes.
  for (const std::string& bad :
       {std::string(""), std::string("x\n"), std::string("1\n"), std::string("1\n3:ab,1:v,"),
        std::string("1\n99999999999:a,"), std::string("1\n2:ab;1:v,"), good + "x",
        good.substr(0, good.size() - 1), std::string("-1\n")}) {
    EXPECT_THROW(DecodeWorld(bad, 2), LaunchError) << bad;
  }
  EXPECT_THROW(DecodeWorld(EncodeWorld({{"/k", "v"}, {"/k", "w"}}), 2), LaunchError);
}

TEST(WorldFormedTest, RoundTripsAndEscapes) {
  EXPECT_EQ(DecodeFormed(EncodeFormed({4, ""})), (WorldFormed{4, ""}));
  EXPECT_EQ(DecodeFormed(EncodeFormed({0, "two nodes\x1b"}))->error, "two nodes\\x1b");
  for (const std::string bad : {"", "{}", R"({"nodes": 0})", R"({"nodes": "3"})", "[]"}) {
    EXPECT_EQ(DecodeFormed(bad), std::nullopt) << bad;
  }
}

TEST(PeersInOrderTest, KeepsTheHostsOrderAndFindsThisNode) {
  const auto peer = [](const std::string& name, const std::string& ip) {
    return EncodePeerInfo({name, -1, 1, "cpu", ip + ":6000", ip + ":6001"});
  };
  const WorldEntries world = {{"/j/info/zzz/-1", peer("zzz", "10.0.0.9")},
                              {"/j/info/aaa/-1", peer("aaa", "10.0.0.1")}};
  const PeerOrder order = PeersInOrder(world, "/j/info/aaa/-1");
  EXPECT_EQ(order.own_index, 1);
  EXPECT_EQ(order.peers[0].name, "zzz");
  EXPECT_EQ(order.keys, (std::vector<std::string>{"/j/info/zzz/-1", "/j/info/aaa/-1"}));
  try {
    PeersInOrder(world, "/j/info/late/-1");
    FAIL() << "a node outside the world was taken in";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("the world formed with 2 nodes without this node"),
              std::string::npos)
        << e.what();
  }
}

TEST(DecodePeerInfoTest, TheFastPathAgreesWithTheFullParser) {
  // The canonical layout is read without nlohmann; any other layout by it. Both must agree.
  const PeerInfo peer{"abcdef", 3, 2, "gpu", "10.0.0.1:6000", "10.0.0.1:6001,10.0.0.1:6002"};
  const std::string canonical = EncodePeerInfo(peer);
  EXPECT_EQ(DecodePeerInfo("k", canonical), peer);
  const std::string spaced =
      R"({ "name":"abcdef","rank":3,"replicas":2,"dtype":"gpu","candidate":"10.0.0.1:6000",)"
      R"("endpoints":"10.0.0.1:6001,10.0.0.1:6002" })";
  EXPECT_EQ(DecodePeerInfo("k", spaced), peer);
  const std::string escaped =
      R"({"name": "abcdef", "rank": 3, "replicas": 2, "dtype": "g\u0070u", )"
      R"("candidate": "10.0.0.1:6000", "endpoints": )"
      R"("10.0.0.1:6001,10.0.0.1:6002"})";
  EXPECT_EQ(DecodePeerInfo("k", escaped), peer);
  PeerInfo negative = peer;
  negative.rank = -1;
  EXPECT_EQ(DecodePeerInfo("k", EncodePeerInfo(negative)), negative);
  // What JSON forbids, the fast path must not accept either.
  for (const std::string rank : {"03", "-03", "3.0", "3e0", "+3", "-", "2147483648", "0x3"}) {
    std::string text = canonical;
    text.replace(text.find("\"rank\": 3") + 9, 1, rank);
    EXPECT_THROW(DecodePeerInfo("k", text), LaunchError) << text;
  }
  EXPECT_THROW(DecodePeerInfo("k", canonical + " x"), LaunchError);
  EXPECT_THROW(DecodePeerInfo("k", canonical.substr(0, canonical.size() - 1)), LaunchError);
}

TEST(MasterKeysTest, TheInfoPrefixEndsInASlash) {
  const MasterKeys keys("job");
  EXPECT_EQ(keys.info_prefix(), "/job/info/");
  EXPECT_EQ(keys.info("abc", 2), "/job/info/abc/2");
  EXPECT_FALSE(std::string("/job/infoX/abc/2").starts_with(keys.info_prefix()));
}

// A failure record is written by any client of the master: what it shows is escaped (no byte
// that acts on a terminal reaches the console) and bounded; a bad exit code is 1.
TEST(JobFailureTest, WhatARecordShowsIsEscapedAndBounded) {
  const JobFailure hostile = DecodeFailure(
      R"({"node": "\u001b]0;owned\u0007", "pod": 5, "cause": "x\u001b[2J\rfake line\u009b",)"
      R"( "exit_code": 1e300})");
  EXPECT_EQ(hostile.node, "\\x1b]0;owned\\x07");
  EXPECT_EQ(hostile.pod, "");
  EXPECT_EQ(hostile.cause, "x\\x1b[2J\\rfake line\\xc2\\x9b");
  EXPECT_EQ(hostile.exit_code, 1);
  EXPECT_EQ(DecodeFailure(R"({"cause": "c", "exit_code": 300})").exit_code, 1);
  EXPECT_EQ(DecodeFailure(R"({"cause": "c", "exit_code": 7})").exit_code, 7);
  // A launcher stopped by a signal says which (a sequence of jobs stops there); bounded.
  const JobFailure stopped{"10.0.0.3", "abcdef", "the launcher on node 10.0.0.3 received SIGINT",
                           130, 2};
  EXPECT_EQ(DecodeFailure(EncodeFailure(stopped)), stopped);
  EXPECT_EQ(DecodeFailure(R"({"cause": "c", "exit_code": 7})").signal, 0);
  EXPECT_EQ(DecodeFailure(R"({"cause": "c", "signal": 99})").signal, 0);
  EXPECT_EQ(DecodeFailure(R"({"cause": "c", "signal": "2"})").signal, 0);
  EXPECT_EQ(DecodeFailure("\x1b[2J").cause, "\\x1b[2J");
  const JobFailure huge = DecodeFailure(R"({"cause": ")" + std::string(100000, 'c') + R"("})");
  EXPECT_EQ(huge.cause.size(), 2048u + 3);
}

TEST(OrderPeersTest, HostKeySortsFirstThenPodNames) {
  const MasterKeys keys("job");
  const std::map<std::string, std::string> entries = {
      {keys.info("zzzzzz", -1), EncodePeerInfo(Peer("zzzzzz", -1, "10.0.0.3", 6000, 1))},
      {keys.info("aaaaaa", -1), EncodePeerInfo(Peer("hostpd", -1, "10.0.0.9", 6000, 1))},
      {keys.info("mmmmmm", -1), EncodePeerInfo(Peer("mmmmmm", -1, "10.0.0.2", 6000, 1))},
  };
  const PeerOrder order = OrderPeers(entries, keys.info("mmmmmm", -1), false);
  ASSERT_EQ(order.peers.size(), 3u);
  EXPECT_EQ(order.peers[0].name, "hostpd");
  EXPECT_EQ(order.peers[1].name, "mmmmmm");
  EXPECT_EQ(order.peers[2].name, "zzzzzz");
  EXPECT_EQ(order.own_index, 1);
  // --sort_ip orders by address instead.
  const PeerOrder by_ip = OrderPeers(entries, keys.info("mmmmmm", -1), true);
  EXPECT_EQ(by_ip.peers[0].name, "mmmmmm");
  EXPECT_EQ(by_ip.peers[2].name, "hostpd");
  EXPECT_EQ(by_ip.own_index, 0);
}

TEST(OrderPeersTest, ExplicitRanksPlaceNodes) {
  const MasterKeys keys("j");
  const std::map<std::string, std::string> entries = {
      {keys.info("aaaaab", 1), EncodePeerInfo(Peer("aaaaab", 1, "10.0.0.1", 6000, 1))},
      {keys.info("zzzzzz", 0), EncodePeerInfo(Peer("zzzzzz", 0, "10.0.0.2", 6000, 1))},
  };
  const PeerOrder order = OrderPeers(entries, keys.info("aaaaab", 1), false);
  EXPECT_EQ(order.peers[0].name, "zzzzzz");
  EXPECT_EQ(order.own_index, 1);
}

TEST(OrderPeersTest, BadExplicitRanksAreNamed) {
  const MasterKeys keys("j");
  const auto error = [&](std::map<std::string, std::string> entries, const std::string& own) {
    try {
      OrderPeers(entries, own, false);
    } catch (const LaunchError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string a = EncodePeerInfo(Peer("a", 0, "10.0.0.1", 6000, 1));
  const std::string b = EncodePeerInfo(Peer("b", 0, "10.0.0.2", 6000, 1));
  EXPECT_EQ(error({{keys.info("a", 0), a}, {keys.info("b", 0), b}}, keys.info("a", 0)),
            "nodes 10.0.0.1:6001 and 10.0.0.2:6001 both have --rank 0");
  EXPECT_EQ(error({{keys.info("a", 0), a}, {keys.info("b", 5), b}}, keys.info("a", 0)),
            "node 10.0.0.2:6001 has --rank 5 but the job has 2 nodes (0..1)");
  EXPECT_EQ(error({{keys.info("a", 0), a}, {keys.info("b", -1), b}}, keys.info("a", 0)),
            "1 of 2 nodes gave --rank (10.0.0.1:6001 rank 0) and 1 did not (10.0.0.2:6001): give "
            "every node its rank or none");
}

TEST(BuildMasterClusterTest, NodesMayRunDifferentNumbersOfProcesses) {
  PeerOrder order;
  order.peers = {Peer("host", -1, "10.0.0.1", 6000, 3), Peer("b", -1, "10.0.0.2", 7000, 2)};
  order.own_index = 1;
  DevicePlan devices;
  devices.family = GpuFamily();
  devices.mode = DeviceMode::kGpu;
  devices.backend = "nccl";
  devices.devices_per_proc = {{0}, {1}};
  const Cluster cluster = BuildMasterCluster(order, devices);
  EXPECT_EQ(cluster.world_size(), 5);
  EXPECT_EQ(cluster.master.ToString(), "10.0.0.1:6003");
  EXPECT_EQ(cluster.local_pod().ip, "10.0.0.2");
  ASSERT_EQ(cluster.local_pod().trainers.size(), 2u);
  EXPECT_EQ(cluster.local_pod().trainers[0].global_rank, 3);
  EXPECT_EQ(cluster.local_pod().trainers[1].global_rank, 4);
  EXPECT_EQ(cluster.local_pod().trainers[1].devices, std::vector<int>{1});
  EXPECT_EQ(cluster.local_pod().trainers[1].endpoint.ToString(), "10.0.0.2:7001");
  EXPECT_TRUE(cluster.pods[0].trainers[0].devices.empty());
}

TEST(JobFailureTest, MalformedRecordsStillStopTheJob) {
  const JobFailure failure = DecodeFailure(EncodeFailure({"10.0.0.2", "b", "rank 3 ended", 7}));
  EXPECT_EQ(failure.exit_code, 7);
  EXPECT_EQ(failure.cause, "rank 3 ended");
  EXPECT_EQ(DecodeFailure("garbage").cause, "garbage");
  EXPECT_EQ(DecodeFailure("garbage").exit_code, 1);
}

LaunchOptions Options(std::function<void(LaunchOptions&)> set) {
  LaunchOptions options;
  set(options);
  return options;
}

TEST(SelectLaunchPathTest, MasterPathAndItsSettings) {
  LaunchOptions o = Options([](LaunchOptions& x) {
    x.master = "10.0.0.1:8090";
    x.nnodes = "2";
    x.given = {"master", "nnodes"};
  });
  LaunchPath path = SelectLaunchPath(o, {});
  ASSERT_EQ(path.kind, LaunchPath::Kind::kMaster);
  EXPECT_EQ(path.master->master_host, "10.0.0.1");
  EXPECT_EQ(path.master->master_port, 8090);
  EXPECT_EQ(path.master->nnodes, 2);
  EXPECT_EQ(path.master->rank, -1);
  EXPECT_EQ(path.master->job_id, "default");
  // PADDLE_TRAINER_ID sets the rank, except in a nested launch.
  EXPECT_EQ(SelectLaunchPath(o, {{"PADDLE_TRAINER_ID", "1"}}).master->rank, 1);
  EXPECT_EQ(
      SelectLaunchPath(o, {{"PADDLE_TRAINER_ID", "1"}, {"PDLAUNCH_PARENT", "9"}}).master->rank, -1);
  // http:// is allowed; POD_IP is this node's address.
  o.master = "http://master-0:36543";
  path = SelectLaunchPath(o, {{"POD_IP", "10.1.2.3"}});
  EXPECT_EQ(path.master->master_host, "master-0");
  EXPECT_EQ(path.master->host, "10.1.2.3");
  // No master with nnodes >= 2: this node hosts one.
  o.master.reset();
  o.given = {"nnodes"};
  path = SelectLaunchPath(o, {});
  ASSERT_EQ(path.kind, LaunchPath::Kind::kMaster);
  EXPECT_FALSE(path.master->master_given);
}

TEST(SelectLaunchPathTest, OtherPaths) {
  LaunchOptions o;
  EXPECT_EQ(SelectLaunchPath(o, {}).kind, LaunchPath::Kind::kDefault);
  o.master = "127.0.0.1:8090";  // One node: no master contacted, as Paddle.
  o.given = {"master"};
  EXPECT_EQ(SelectLaunchPath(o, {}).kind, LaunchPath::Kind::kDefault);
  o.master = "etcd://127.0.0.1:2379";
  o.nnodes = "2:4";
  const LaunchPath etcd = SelectLaunchPath(o, {});
  EXPECT_EQ(etcd.kind, LaunchPath::Kind::kEtcd);
  EXPECT_EQ(etcd.etcd_server, "127.0.0.1:2379");
  EXPECT_EQ(etcd.etcd_np, "2:4");
  LaunchOptions ips;
  ips.ips = "10.0.0.1,10.0.0.2";
  ips.nnodes = "2";
  ips.given = {"ips", "nnodes"};
  EXPECT_EQ(SelectLaunchPath(ips, {}).kind, LaunchPath::Kind::kMaster);  // The nodes meet.
  ips.nodes_meet = false;  // As Paddle 2: the list alone decides.
  EXPECT_EQ(SelectLaunchPath(ips, {}).kind, LaunchPath::Kind::kDefault);
}

// Paddle 3's update_by_ips (context/__init__.py), with its intent where its code differs.
TEST(SelectLaunchPathTest, IpsOfTodaysInterfaceMeetAtTheFirstNode) {
  LaunchOptions o;
  o.ips = "10.0.0.1,10.0.0.2,10.0.0.3";
  o.given = {"ips", "gpus"};
  o.new_flags = {"devices"};
  LaunchPath path = SelectLaunchPath(o, {});
  ASSERT_EQ(path.kind, LaunchPath::Kind::kMaster);
  MasterSettings m = *path.master;
  EXPECT_EQ(m.ips, (std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.3"}));
  EXPECT_EQ(m.nnodes, 3);
  EXPECT_EQ(m.master_host, "10.0.0.1");
  EXPECT_EQ(m.master_index, 0u);
  EXPECT_TRUE(m.handshake);  // No port anywhere: 6768..6778.
  EXPECT_TRUE(path.warnings.empty());
  // PADDLE_PORT puts it on ips[0] at that port (Paddle's code would run the handshake anyway).
  m = *SelectLaunchPath(o, {{"PADDLE_PORT", "36000"}}).master;
  EXPECT_FALSE(m.handshake);
  EXPECT_EQ(m.master_port, 36000);
  // :PORT, then an ip of the list keeps it, another ip is reset to ips[0] with Paddle's line.
  o.master = ":8090";
  m = *SelectLaunchPath(o, {}).master;
  EXPECT_EQ(m.master_host, "10.0.0.1");
  EXPECT_EQ(m.master_port, 8090);
  o.master = "10.0.0.2:8090";
  m = *SelectLaunchPath(o, {}).master;
  EXPECT_EQ(m.master_host, "10.0.0.2");
  EXPECT_EQ(m.master_index, 1u);
  o.master = "10.0.0.9:8090";
  path = SelectLaunchPath(o, {});
  EXPECT_EQ(path.master->master_host, "10.0.0.1");
  EXPECT_EQ(path.master->master_port, 8090);
  EXPECT_EQ(path.warnings,
            (std::vector<std::string>{"master 10.0.0.9:8090 will be reset when master not in "
                                      "ip_list ['10.0.0.1', '10.0.0.2', '10.0.0.3']."}));
  // A bare ip: its port from PADDLE_PORT, else the handshake.
  o.master = "10.0.0.2";
  m = *SelectLaunchPath(o, {}).master;
  EXPECT_EQ(m.master_index, 1u);
  EXPECT_TRUE(m.handshake);
  EXPECT_EQ(SelectLaunchPath(o, {{"PADDLE_PORT", "7000"}}).master->master_port, 7000);
  try {
    SelectLaunchPath(o, {{"PADDLE_PORT", "http"}});
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "PADDLE_PORT: 'http' is not an integer");
  }
}

TEST(SelectLaunchPathTest, MasterFormsWithoutIps) {
  LaunchOptions o;
  o.nnodes = "2";
  o.given = {"nnodes", "master"};
  o.master = ":8090";
  MasterSettings m = *SelectLaunchPath(o, {{"PADDLE_TRAINERS", "10.0.0.5,10.0.0.6"}}).master;
  EXPECT_EQ(m.master_host, "10.0.0.5");
  EXPECT_EQ(m.master_port, 8090);
  o.master = "10.0.0.7";
  m = *SelectLaunchPath(o, {{"PADDLE_PORT", "8091"}}).master;
  EXPECT_EQ(m.master_host, "10.0.0.7");
  EXPECT_EQ(m.master_port, 8091);
}

TEST(IpsRulesTest, HostfileTakesTheFirstTokenOfEachLine) {
  EXPECT_EQ(ParseHostfile("10.0.0.1 slots=8\n\n  10.0.0.2\tgpu\r\nnode-c\n"),
            (std::vector<std::string>{"10.0.0.1", "10.0.0.2", "node-c"}));
  EXPECT_TRUE(ParseHostfile("\n \n").empty());
}

TEST(IpsRulesTest, NnodesCutsTheListWithPaddlesWarning) {
  const std::vector<std::string> ips = {"a", "b", "c"};
  std::string warning;
  EXPECT_EQ(CutIpsToNnodes(ips, 3, &warning), ips);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(CutIpsToNnodes(ips, 2, &warning), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(warning,
            "only the first 2 nnodes in ip_list will be retained when nnodes 2 < len(ip_list)");
  try {
    CutIpsToNnodes(ips, 4, &warning);
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "LAUNCH ERROR the nnodes 4 > len(ip_list) (--ips lists 3)");
  }
}

TEST(SelectLaunchPathTest, UsageErrorsNameTheToken) {
  const auto error = [](std::function<void(LaunchOptions&)> set) {
    try {
      SelectLaunchPath(Options(set), {});
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error([](LaunchOptions& o) { o.nnodes = "2:4"; }),
            "argument --nnodes: '2:4' is a range, which needs an etcd master (--master "
            "etcd://host:port); the HTTP master needs a fixed node count");
  EXPECT_EQ(error([](LaunchOptions& o) {
              o.nnodes = "2";
              o.rank = 5;
              o.given = {"rank"};
            }),
            "argument --rank: 5 is not below --nnodes 2 (ranks 0..1)");
  EXPECT_EQ(error([](LaunchOptions& o) {
              o.nnodes = "2";
              o.master = "10.0.0.1";
            }),
            "argument --master: '10.0.0.1' needs host:port (a bare address takes its port from "
            "PADDLE_PORT, or with --ips from Paddle's handshake)");
  EXPECT_NE(error([](LaunchOptions& o) {
              o.nnodes = "2";
              o.master = "host:notaport";
            }).find("argument --master: "),
            std::string::npos);
  EXPECT_EQ(error([](LaunchOptions& o) {
              o.nnodes = "3";
              o.ips = "10.0.0.1,10.0.0.2";
              o.given = {"ips", "nnodes"};
            }),
            "argument --nnodes: 3 but --ips lists 2 nodes");
}

TEST(UsesNewInterfaceTest, FlagsOfTodaysLauncherOrItsEnvironment) {
  LaunchOptions o;
  EXPECT_FALSE(UsesNewInterface(o));
  o.new_flags = {"--devices"};
  EXPECT_TRUE(UsesNewInterface(o));
  o.legacy = true;
  EXPECT_FALSE(UsesNewInterface(o));
  LaunchOptions env;
  env.given = {"nnodes"};  // PADDLE_NNODES
  EXPECT_TRUE(UsesNewInterface(env));
  // --job_id alone on the command line is today's job id; with --elastic_server it is the
  // legacy elastic mode's, and PADDLE_JOB_ID alone decides nothing.
  LaunchOptions job;
  job.given = {"job_id"};
  EXPECT_TRUE(UsesNewInterface(job));
  job.given.insert("elastic_server");
  EXPECT_FALSE(UsesNewInterface(job));
  LaunchOptions job_env;
  job_env.given = {"job_id"};
  job_env.from_env = {"job_id"};
  EXPECT_FALSE(UsesNewInterface(job_env));
}

std::string EnvOf(const EnvList& env, const std::string& name) {
  for (const auto& [key, value] : env) {
    if (key == name) return value;
  }
  return "<unset>";
}

TEST(PsPeerTest, EncodesPaddlesJsonAndRoundTrips) {
  PsPeerInfo peer{"abcdef", -1, {"10.0.0.1:1", "10.0.0.1:2"}, {"10.0.0.1:3"}, "cpu", 4};
  EXPECT_EQ(EncodePsPeer(peer),
            R"({"name": "abcdef", "rank": -1, "servers": ["10.0.0.1:1", "10.0.0.1:2"], )"
            R"("trainers": ["10.0.0.1:3"], "dtype": "cpu", "gloo_port": 4})");
  EXPECT_EQ(DecodePsPeer("/k", EncodePsPeer(peer)), peer);
  EXPECT_THROW(DecodePsPeer("/k", R"({"name": "a"})"), LaunchError);
  EXPECT_THROW(DecodePsPeer("/k", R"({"name": "a", "rank": 0, "servers": ["x"], )"
                                  R"("trainers": [], "gloo_port": 1})"),
               LaunchError);
}

TEST(PsPeerTest, CountsDefaultToOne) {
  LaunchOptions options;
  EXPECT_EQ(PsMasterCounts(options), std::make_pair(1, 1));
  options.server_num = 2;
  options.worker_num = 0;
  EXPECT_EQ(PsMasterCounts(options), std::make_pair(2, 1));
}

TEST(PlanPsFromPeersTest, ListsConcatenateInNodeOrder) {
  const std::vector<PsPeerInfo> peers = {
      {"host", -1, {"10.0.0.1:1"}, {"10.0.0.1:2", "10.0.0.1:3"}, "cpu", 9},
      {"other", -1, {"10.0.0.2:1", "10.0.0.2:2"}, {"10.0.0.2:3"}, "cpu", 7}};
  const JobEnv job{"/tmp/gloo", "1", "/abs/log"};
  const std::vector<PsProcess> ps = PlanPsFromPeers(peers, 1, "10.0.0.2", "other", job);
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_EQ(ps[0].log_name, "serverlog.0");
  EXPECT_EQ(ps[1].log_name, "serverlog.1");
  EXPECT_EQ(ps[2].log_name, "workerlog.0");
  EXPECT_EQ(ps[1].global_id, 2);
  EXPECT_EQ(EnvOf(ps[0].env, "PADDLE_PSERVERS_IP_PORT_LIST"), "10.0.0.1:1,10.0.0.2:1,10.0.0.2:2");
  EXPECT_EQ(EnvOf(ps[0].env, "PADDLE_TRAINER_ENDPOINTS"), "10.0.0.1:2,10.0.0.1:3,10.0.0.2:3");
  EXPECT_EQ(EnvOf(ps[0].env, "PADDLE_ROLE"), "PSERVER");
  EXPECT_EQ(EnvOf(ps[0].env, "PADDLE_TRAINER_ID"), "<unset>");
  EXPECT_EQ(EnvOf(ps[2].env, "PADDLE_ROLE"), "TRAINER");
  EXPECT_EQ(EnvOf(ps[2].env, "TRAINING_ROLE"), "TRAINER");
  EXPECT_EQ(EnvOf(ps[2].env, "PADDLE_TRAINER_ID"), "2");
  EXPECT_EQ(EnvOf(ps[2].env, "PADDLE_TRAINERS_NUM"), "3");
  EXPECT_EQ(EnvOf(ps[2].env, "PADDLE_PORT"), "3");
  EXPECT_EQ(EnvOf(ps[2].env, "PADDLE_NNODES"), "2");
  EXPECT_EQ(EnvOf(ps[2].env, "PADDLE_GLOO_HTTP_ENDPOINT"), "10.0.0.1:9");  // Peer 0's port.
  EXPECT_EQ(EnvOf(ps[2].env, "POD_IP"), "10.0.0.2");
  EXPECT_EQ(EnvOf(ps[2].env, "POD_NAME"), "other");
  EXPECT_EQ(EnvOf(ps[2].env, "PADDLE_MASTER"), "<unset>");
}

TEST(MasterTrainerVariablesTest, ExactlyTodaysLaunchersNames) {
  PeerOrder order;
  order.peers = {Peer("host", -1, "10.0.0.1", 6000, 1), Peer("b", -1, "10.0.0.2", 7000, 2)};
  order.own_index = 1;
  DevicePlan devices;
  devices.family = GpuFamily();
  devices.mode = DeviceMode::kGpu;
  devices.devices_per_proc = {{0, 1}, {2, 3}};
  const Cluster cluster = BuildMasterCluster(order, devices);
  const EnvList env = MasterTrainerVariables(cluster, cluster.local_pod().trainers[1],
                                             MasterJobEnv{"b", "/abs/log", std::nullopt});
  std::vector<std::string> names;
  for (const auto& [name, value] : env) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"PADDLE_MASTER",
                                             "PADDLE_GLOBAL_SIZE",
                                             "PADDLE_LOCAL_SIZE",
                                             "PADDLE_GLOBAL_RANK",
                                             "PADDLE_LOCAL_RANK",
                                             "PADDLE_NNODES",
                                             "PADDLE_CURRENT_ENDPOINT",
                                             "PADDLE_TRAINER_ID",
                                             "PADDLE_TRAINERS_NUM",
                                             "PADDLE_RANK_IN_NODE",
                                             "PADDLE_TRAINER_ENDPOINTS",
                                             "FLAGS_selected_gpus",
                                             "POD_NAME",
                                             "PADDLE_LOG_DIR",
                                             "RANK",
                                             "WORLD_SIZE",
                                             "LOCAL_RANK",
                                             "LOCAL_WORLD_SIZE",
                                             "MASTER_ADDR",
                                             "MASTER_PORT"}));
  EXPECT_EQ(EnvOf(env, "PADDLE_MASTER"), "10.0.0.1:6001");
  EXPECT_EQ(EnvOf(env, "PADDLE_GLOBAL_RANK"), "2");
  EXPECT_EQ(EnvOf(env, "FLAGS_selected_gpus"), "2,3");
  EXPECT_EQ(EnvOf(env, "MASTER_PORT"), "6001");
  const EnvList rpc = RpcVariables(cluster, cluster.local_pod().trainers[0],
                                   MasterJobEnv{"b", "/abs/log", std::nullopt});
  EXPECT_EQ(EnvOf(rpc, "PADDLE_MASTER_ENDPOINT"), "10.0.0.1:6001");
  EXPECT_EQ(EnvOf(rpc, "PADDLE_SERVER_ENDPOINT"), "10.0.0.2:7000");
  EXPECT_EQ(EnvOf(rpc, "PADDLE_TRAINER_ID"), "1");
}

}  // namespace
}  // namespace pdlaunch
