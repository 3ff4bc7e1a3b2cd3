#include <gtest/gtest.h>

#include "pdlaunch/coord/elastic.h"

namespace pdlaunch {
namespace {

NodeRecord Node(const std::string& host, std::vector<int> ports = {6170, 6171},
                int master_port = 6172, int pid = 123) {
  return NodeRecord{host, std::move(ports), master_port, pid};
}

WorldRecord World() {
  return WorldRecord{2, 1, {"a", "b"}, {Node("10.0.0.1"), Node("10.0.0.2", {7000}, 7001, 9)}};
}

FailureRecord ExitFailure() {
  FailureRecord failure;
  failure.generation = 2;
  failure.node = "b";
  failure.host = "10.0.0.2";
  failure.rank = 3;
  failure.exit_code = 7;
  return failure;
}

FailureRecord SignalFailure() {
  FailureRecord failure = ExitFailure();
  failure.exit_code.reset();
  failure.signal = 9;
  return failure;
}

KeyValue Kv(const std::string& key, const std::string& value, int64_t create_revision = 1,
            int64_t mod_revision = 1) {
  return KeyValue{key, value, create_revision, mod_revision, 0};
}

TEST(ElasticStateTest, NodeRecordEncodesInDocumentedOrder) {
  EXPECT_EQ(EncodeNodeRecord(Node("10.0.0.1")),
            R"({"host":"10.0.0.1","ports":[6170,6171],"master_port":6172,"pid":123})");
}

TEST(ElasticStateTest, NodeRecordRoundTrips) {
  for (const NodeRecord& record :
       {Node("10.0.0.1"), Node("h", {}, 0, 0), Node("h", {65535}, 1, 1)}) {
    EXPECT_EQ(DecodeNodeRecord(EncodeNodeRecord(record)), record);
  }
}

TEST(ElasticStateTest, NodeRecordDecodeAcceptsWhitespaceAndKeyOrder) {
  EXPECT_EQ(DecodeNodeRecord(R"( {"pid":5, "master_port":2, "ports":[1], "host":"h", "x":0} )"),
            Node("h", {1}, 2, 5));
}

TEST(ElasticStateTest, MalformedNodeRecordIsNullopt) {
  const std::vector<std::string> malformed = {
      "",
      "10.0.0.1",
      "[]",
      R"({"host":"h","ports":[1],"master_port":2})",
      R"({"host":"h","ports":[1],"master_port":2,"pid":1} trailing)",
      R"({"host":"h","ports":[1],"master_port":2,"pid":1}{})",
      R"({"host":5,"ports":[1],"master_port":2,"pid":1})",
      R"({"host":"","ports":[1],"master_port":2,"pid":1})",
      R"({"host":"h","ports":"1","master_port":2,"pid":1})",
      R"({"host":"h","ports":[-1],"master_port":2,"pid":1})",
      R"({"host":"h","ports":[0],"master_port":2,"pid":1})",
      R"({"host":"h","ports":[65536],"master_port":2,"pid":1})",
      R"({"host":"h","ports":[1.5],"master_port":2,"pid":1})",
      R"({"host":"h","ports":["1"],"master_port":2,"pid":1})",
      R"({"host":"h","ports":[1],"master_port":-2,"pid":1})",
      R"({"host":"h","ports":[1],"master_port":true,"pid":1})",
      R"({"host":"h","ports":[1],"master_port":2,"pid":-1})",
      R"({"host":"h","ports":[1],"master_port":2,"pid":99999999999})",
      R"({"host":"h","ports":[1],"master_port":2,"pid":18446744073709551615})",
  };
  for (const std::string& text : malformed) {
    EXPECT_EQ(DecodeNodeRecord(text), std::nullopt) << text;
  }
}

TEST(ElasticStateTest, WorldRecordEncodesInDocumentedOrder) {
  EXPECT_EQ(EncodeWorldRecord(World()),
            R"({"generation":2,"restarts":1,"members":["a","b"],"nodes":[)"
            R"({"host":"10.0.0.1","ports":[6170,6171],"master_port":6172,"pid":123},)"
            R"({"host":"10.0.0.2","ports":[7000],"master_port":7001,"pid":9}]})");
}

TEST(ElasticStateTest, WorldRecordRoundTrips) {
  EXPECT_EQ(DecodeWorldRecord(EncodeWorldRecord(World())), World());
  const WorldRecord big{int64_t{1} << 40, 0, {"x"}, {Node("h")}};
  EXPECT_EQ(DecodeWorldRecord(EncodeWorldRecord(big)), big);
}

TEST(ElasticStateTest, MalformedWorldRecordIsNullopt) {
  const std::string node = R"({"host":"h","ports":[1],"master_port":2,"pid":1})";
  const std::vector<std::string> malformed = {
      "{}",
      R"({"generation":1,"restarts":0,"members":["a"]})",
      R"({"generation":0,"restarts":0,"members":["a"],"nodes":[)" + node + "]}",
      R"({"generation":"1","restarts":0,"members":["a"],"nodes":[)" + node + "]}",
      R"({"generation":1,"restarts":-1,"members":["a"],"nodes":[)" + node + "]}",
      R"({"generation":1,"restarts":0,"members":["a","b"],"nodes":[)" + node + "]}",
      R"({"generation":1,"restarts":0,"members":[1],"nodes":[)" + node + "]}",
      R"({"generation":1,"restarts":0,"members":[""],"nodes":[)" + node + "]}",
      R"({"generation":1,"restarts":0,"members":["a","a"],"nodes":[)" + node + "," + node + "]}",
      R"({"generation":1,"restarts":0,"members":["a"],"nodes":[{"host":"h"}]})",
      R"({"generation":1,"restarts":0,"members":["a"],"nodes":[)" + node + "]},",
  };
  for (const std::string& text : malformed) {
    EXPECT_EQ(DecodeWorldRecord(text), std::nullopt) << text;
  }
}

TEST(ElasticStateTest, FailureRecordEncodesExitCodeOrSignal) {
  EXPECT_EQ(EncodeFailureRecord(ExitFailure()),
            R"({"generation":2,"node":"b","host":"10.0.0.2","rank":3,"exit_code":7})");
  EXPECT_EQ(EncodeFailureRecord(SignalFailure()),
            R"({"generation":2,"node":"b","host":"10.0.0.2","rank":3,"signal":9})");
}

TEST(ElasticStateTest, FailureRecordRoundTrips) {
  EXPECT_EQ(DecodeFailureRecord(EncodeFailureRecord(ExitFailure())), ExitFailure());
  EXPECT_EQ(DecodeFailureRecord(EncodeFailureRecord(SignalFailure())), SignalFailure());
  FailureRecord negative = ExitFailure();
  negative.exit_code = -1;
  EXPECT_EQ(DecodeFailureRecord(EncodeFailureRecord(negative)), negative);
}

TEST(ElasticStateTest, MalformedFailureRecordIsNullopt) {
  const std::vector<std::string> malformed = {
      R"({"generation":2,"node":"b","host":"h","rank":3})",
      R"({"generation":2,"node":"b","host":"h","rank":3,"exit_code":7,"signal":9})",
      R"({"generation":2,"node":"b","host":"h","rank":-3,"exit_code":7})",
      R"({"generation":0,"node":"b","host":"h","rank":3,"exit_code":7})",
      R"({"generation":2,"node":"b","host":"h","rank":3,"signal":0})",
      R"({"generation":2,"node":"b","host":"h","rank":3,"signal":"9"})",
      R"({"generation":2,"node":"b","host":"h","rank":3,"exit_code":null})",
      R"({"generation":2,"node":null,"host":"h","rank":3,"exit_code":7})",
      R"({"generation":2,"node":"b","rank":3,"exit_code":7})",
      R"({"generation":2,"node":"b","host":"h","rank":3,"exit_code":7} x)",
      "not json",
  };
  for (const std::string& text : malformed) {
    EXPECT_EQ(DecodeFailureRecord(text), std::nullopt) << text;
  }
}

TEST(ElasticStateTest, DescribeFailureNamesRankNodeAndCause) {
  EXPECT_EQ(DescribeFailure(ExitFailure(), 77),
            "rank 3 on node 10.0.0.2 (launcher pid 77) exited with code 7");
  EXPECT_EQ(DescribeFailure(SignalFailure(), 77),
            "rank 3 on node 10.0.0.2 (launcher pid 77) was killed by signal 9 (SIGKILL)");
  EXPECT_EQ(DescribeFailure(ExitFailure()), "rank 3 on node 10.0.0.2 exited with code 7");
  FailureRecord unknown = ExitFailure();
  unknown.exit_code.reset();
  EXPECT_EQ(DescribeFailure(unknown), "rank 3 on node 10.0.0.2 failed");
}

TEST(ElasticStateTest, KeysFollowPaddleLayout) {
  const ElasticKeys keys("job1");
  EXPECT_EQ(keys.job, "job1");
  EXPECT_EQ(keys.status(), "/paddle/job1");
  EXPECT_EQ(keys.prefix(), "/paddle/job1/");
  EXPECT_EQ(keys.nodes(), "/paddle/job1/nodes/");
  EXPECT_EQ(keys.node("abc"), "/paddle/job1/nodes/abc");
  EXPECT_EQ(keys.np(), "/paddle/job1/np");
  EXPECT_EQ(keys.endpoints(), "/paddle/job1/endpoints");
  EXPECT_EQ(keys.world(), "/paddle/job1/world");
  EXPECT_EQ(keys.failure(12), "/paddle/job1/failure/12");
  EXPECT_EQ(keys.done(3, "abc"), "/paddle/job1/done/3/abc");
}

TEST(ElasticStateTest, ParseJobStateReadsEveryKey) {
  const ElasticKeys keys("job1");
  const std::vector<KeyValue> kvs = {
      Kv("/paddle/job1", "0"),
      Kv("/paddle/job1/done/2/a", ""),
      Kv("/paddle/job1/done/2/b", "1"),
      Kv("/paddle/job1/done/3/a", ""),
      Kv("/paddle/job1/endpoints", "10.0.0.1:6170|10.0.0.1"),
      Kv("/paddle/job1/failure/2", EncodeFailureRecord(ExitFailure())),
      Kv("/paddle/job1/nodes/a", EncodeNodeRecord(Node("10.0.0.1")), 9),
      Kv("/paddle/job1/nodes/b", EncodeNodeRecord(Node("10.0.0.2")), 5),
      Kv("/paddle/job1/np", "4"),
      Kv("/paddle/job1/world", EncodeWorldRecord(World()), 7, 11),
  };
  const JobState state = ParseJobState(keys, kvs);
  EXPECT_EQ(state.status, std::optional<std::string>("0"));
  EXPECT_EQ(state.np, std::optional<int>(4));
  ASSERT_EQ(state.nodes.size(), 2u);
  EXPECT_EQ(state.nodes[0], (ElasticNode{"b", Node("10.0.0.2"), 5}));
  EXPECT_EQ(state.nodes[1], (ElasticNode{"a", Node("10.0.0.1"), 9}));
  EXPECT_EQ(state.world, World());
  EXPECT_EQ(state.world_mod_revision, 11);
  EXPECT_EQ(state.failures, (std::map<int64_t, FailureRecord>{{2, ExitFailure()}}));
  EXPECT_EQ(state.done, (std::map<int64_t, std::set<std::string>>{{2, {"a", "b"}}, {3, {"a"}}}));
  EXPECT_TRUE(state.HasNode("a"));
  EXPECT_FALSE(state.HasNode("c"));
}

TEST(ElasticStateTest, ParseJobStateIgnoresOtherJobsWithSamePrefix) {
  const ElasticKeys keys("job1");
  const JobState state = ParseJobState(
      keys, {Kv("/paddle/job1x", "1"), Kv("/paddle/job1x/np", "3"),
             Kv("/paddle/job1x/nodes/a", EncodeNodeRecord(Node("h"))), Kv("/paddle/job", "1")});
  EXPECT_EQ(state.status, std::nullopt);
  EXPECT_EQ(state.np, std::nullopt);
  EXPECT_TRUE(state.nodes.empty());
  EXPECT_FALSE(state.HasNode("a"));
}

TEST(ElasticStateTest, ParseJobStateSkipsMalformedValues) {
  const ElasticKeys keys("j");
  const JobState state =
      ParseJobState(keys, {Kv("/paddle/j/np", "four"), Kv("/paddle/j/nodes/a", "10.0.0.1"),
                           Kv("/paddle/j/nodes/", EncodeNodeRecord(Node("h"))),
                           Kv("/paddle/j/nodes/x/y", EncodeNodeRecord(Node("h"))),
                           Kv("/paddle/j/failure/x", EncodeFailureRecord(ExitFailure())),
                           Kv("/paddle/j/failure/3", EncodeFailureRecord(ExitFailure())),
                           Kv("/paddle/j/done/2", ""), Kv("/paddle/j/done/x/a", ""),
                           Kv("/paddle/j/done/2/", ""), Kv("/paddle/j/world", "{", 4, 8)});
  EXPECT_EQ(state.np, std::nullopt);
  EXPECT_TRUE(state.nodes.empty());
  EXPECT_TRUE(state.failures.empty());
  EXPECT_TRUE(state.done.empty());
  EXPECT_EQ(state.world, std::nullopt);
  // A world key that exists still guards PutIf, even when its value is unreadable.
  EXPECT_EQ(state.world_mod_revision, 8);
}

TEST(ElasticStateTest, ParseJobStateWithoutWorldHasRevisionZero) {
  const JobState state = ParseJobState(ElasticKeys("j"), {Kv("/paddle/j/np", "0")});
  EXPECT_EQ(state.world, std::nullopt);
  EXPECT_EQ(state.world_mod_revision, 0);
  EXPECT_EQ(state.np, std::nullopt);
}

}  // namespace
}  // namespace pdlaunch
