#include "pdlaunch/coord/job_ledger.h"

#include <gtest/gtest.h>

namespace pdlaunch {
namespace {

using K = MasterStep::Kind;

class JobLedgerTest : public testing::Test {
 protected:
  void Put(const std::string& key, const std::string& value) { ledger.Update(key, &value); }
  void Delete(const std::string& key) { ledger.Update(key, nullptr); }
  // A pdlaunch participant registers as it does on the wire: heartbeat, terms, then info.
  void Join(const std::string& pod, int nnodes = 3, const std::string& mode = "collective") {
    Put(keys.alive(pod), "1");
    Put(keys.node_terms(pod), EncodeJobTerms({nnodes, mode, "10.0.0." + pod}));
    Put(keys.info(pod, -1), "peer of " + pod);
  }

  MasterKeys keys{"job"};
  JobLedger ledger{keys, JobTerms{3, "collective", ""}, "host"};
};

TEST_F(JobLedgerTest, CountsNodesAsTheyJoin) {
  Put(keys.alive("host"), "1");
  Put(keys.info("aaaaaa", -1), "host's");
  Join("b");
  EXPECT_EQ(ledger.counted().size(), 2u);
  // A Paddle node publishes its info key alone: it counts.
  Put(keys.info("paddle", -1), "paddle's");
  EXPECT_EQ(ledger.counted().size(), 3u);
  EXPECT_EQ(ledger.counted().at(keys.info("paddle", -1)), "paddle's");
  // Keys of other jobs, and of this job that it does not read, change nothing.
  Put("/other/info/x/-1", "x");
  Put("/job/infox/y", "y");
  EXPECT_EQ(ledger.counted().size(), 3u);
  EXPECT_TRUE(ledger.TakeRefusals().empty());
  EXPECT_TRUE(ledger.TakeStaleInfo().empty());
}

TEST_F(JobLedgerTest, RefusesAMismatchedNodeOnceAndDropsItsInfo) {
  Join("b", /*nnodes=*/2);
  std::vector<JobLedger::Refusal> refused = ledger.TakeRefusals();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].pod, "b");
  EXPECT_EQ(refused[0].node, "10.0.0.b (b)");
  EXPECT_EQ(refused[0].why, "--nnodes 2 where the job's is 3");
  EXPECT_TRUE(ledger.counted().empty());
  // Its info key arrived after its terms: to be deleted, never counted.
  EXPECT_EQ(ledger.TakeStaleInfo(), std::vector<std::string>{keys.info("b", -1)});
  // The refusal record the host writes changes nothing more; a second look does not refuse again.
  Put(keys.refused("b"), refused[0].why);
  Put(keys.node_terms("b"), EncodeJobTerms({2, "collective", ""}));
  EXPECT_TRUE(ledger.TakeRefusals().empty());
  // Another run mode is a mismatch too.
  Join("c", 3, "ps");
  refused = ledger.TakeRefusals();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].why, "run mode ps where the job's is collective");
}

TEST_F(JobLedgerTest, ANodeRefusedByRecordDoesNotCount) {
  Join("b");
  EXPECT_EQ(ledger.counted().size(), 1u);
  Put(keys.refused("b"), "whatever any client wrote");
  EXPECT_TRUE(ledger.counted().empty());
  EXPECT_EQ(ledger.TakeStaleInfo(), std::vector<std::string>{keys.info("b", -1)});
}

// Hostile review #38 item 8: five nodes of a 128-node loopback test, starved on a loaded host,
// were forgotten and then waited for a world that could never form.
TEST_F(JobLedgerTest, AForgottenNodeWhoseHeartbeatComesBackCountsAgain) {
  Join("b");
  Join("c");
  Delete(keys.alive("b"));  // Paused past --heartbeat_timeout.
  EXPECT_EQ(ledger.TakeStaleInfo(), std::vector<std::string>{keys.info("b", -1)});
  Delete(keys.info("b", -1));  // The host deleted it.
  EXPECT_TRUE(ledger.TakeRevived().empty());
  Put(keys.alive("b"), "1");  // Resumed: its next heartbeat.
  const std::vector<std::pair<std::string, std::string>> revived = ledger.TakeRevived();
  ASSERT_EQ(revived.size(), 1u);
  EXPECT_EQ(revived[0], std::make_pair(keys.info("b", -1), std::string("peer of b")));
  Put(revived[0].first, revived[0].second);  // The host writes it back.
  EXPECT_EQ(ledger.counted().size(), 2u);
  EXPECT_TRUE(ledger.TakeRevived().empty());  // Once.
  // After the world formed, a heartbeat that comes back revives nothing.
  Delete(keys.alive("c"));
  ledger.TakeStaleInfo();
  ledger.Form({"b"});
  Put(keys.alive("c"), "1");
  EXPECT_TRUE(ledger.TakeRevived().empty());
}

TEST_F(JobLedgerTest, ForgetsANodeThatLeftBeforeTheWorldFormed) {
  Join("b");
  Join("c");
  Delete(keys.alive("b"));  // Its heartbeat expired.
  std::vector<std::string> left;
  EXPECT_EQ(ledger.TakeStaleInfo(&left), std::vector<std::string>{keys.info("b", -1)});
  EXPECT_EQ(left, std::vector<std::string>{"b"});
  EXPECT_EQ(ledger.counted().size(), 1u);
  Delete(keys.info("b", -1));  // The host deleted it.
  // Restarted under a new pod name, it counts again.
  Join("b2");
  EXPECT_EQ(ledger.counted().size(), 2u);
  // The host's own heartbeat never expires it.
  Put(keys.alive("host"), "1");
  Put(keys.info("host", -1), "host's");
  Delete(keys.alive("host"));
  EXPECT_EQ(ledger.counted().size(), 3u);
}

TEST_F(JobLedgerTest, AfterTheWorldFormsLostAndDoneDecideTheRun) {
  Put(keys.alive("host"), "1");
  Join("b");
  Put(keys.info("paddle", -1), "paddle's");
  ledger.Form({"host", "b", "paddle"});
  EXPECT_EQ(ledger.Step().kind, K::kContinue);
  // A member seen alive whose heartbeat expired without reporting done is lost ...
  Delete(keys.alive("b"));
  MasterStep step = ledger.Step();
  EXPECT_EQ(step.kind, K::kNodesLost);
  EXPECT_EQ(step.lost, std::vector<std::string>{"b"});
  // ... and is no longer once it beats again or reports done; nothing is forgotten any more.
  Put(keys.alive("b"), "1");
  EXPECT_EQ(ledger.Step().kind, K::kContinue);
  EXPECT_TRUE(ledger.TakeStaleInfo().empty());
  Put(keys.done("b"), "0");
  Delete(keys.alive("b"));
  EXPECT_EQ(ledger.Step().kind, K::kContinue);
  // The Paddle node, never seen alive, is not waited for.
  Put(keys.done("host"), "0");
  EXPECT_EQ(ledger.Step().kind, K::kAllDone);
}

TEST_F(JobLedgerTest, AFailureWinsAndTheFirstOneStays) {
  Put(keys.alive("host"), "1");
  ledger.Form({"host"});
  Put(keys.failure(), EncodeFailure({"10.0.0.2", "b", "rank 1 exited with code 7", 7}));
  Put(keys.failure(), EncodeFailure({"10.0.0.3", "c", "later", 9}));
  MasterStep step = ledger.Step();
  EXPECT_EQ(step.kind, K::kJobFailed);
  EXPECT_EQ(step.failure.exit_code, 7);
  Put(keys.done("host"), "0");
  EXPECT_EQ(ledger.Step().kind, K::kJobFailed);
}

TEST_F(JobLedgerTest, ResyncReadsDeletionsItWasNotTold) {
  Join("b");
  Join("c");
  std::map<std::string, std::string> now = {
      {keys.alive("c"), "1"}, {keys.info("c", -1), "peer of c"}, {keys.info("d", -1), "peer of d"}};
  ledger.Resync(now);
  EXPECT_EQ(ledger.counted().size(), 2u);
  EXPECT_EQ(ledger.counted().count(keys.info("d", -1)), 1u);
  EXPECT_EQ(ledger.counted().count(keys.info("b", -1)), 0u);
}

TEST_F(JobLedgerTest, PairsOfPutAndDeleteLeaveNothingBehind) {
  // A stranger's random pods, each registered every way, refused, lapsed, then deleted: the
  // ledger holds what the store holds (the host's own keys), not a trace of each pair.
  Put(keys.alive("host"), "1");
  Put(keys.info("host", -1), "host's");
  const size_t before = ledger.footprint();
  const std::string big(16 << 10, 'x');
  for (int i = 0; i < 2000; ++i) {
    const std::string pod = "p" + std::to_string(i);
    Put(keys.info(pod, 0), big);
    Put(keys.alive(pod), "1");
    Put(keys.done(pod), "1");
    Put(keys.refused(pod), "x");
    Put(keys.node_terms(pod), EncodeJobTerms({9, "collective", ""}));
    Delete(keys.alive(pod));
    for (const std::string& key : ledger.TakeStaleInfo()) Delete(key);  // As the host does.
    Delete(keys.done(pod));
    Delete(keys.refused(pod));
    Delete(keys.node_terms(pod));
    Delete(keys.info(pod, 0));
    ledger.TakeRefusals();
  }
  EXPECT_EQ(ledger.footprint(), before);
  EXPECT_EQ(ledger.counted().size(), 1u);
}

TEST_F(JobLedgerTest, ForgottenRecordsAreKeptForAsManyNodesAsTheJobHas) {
  // Nodes that lapse before the world forms keep their records aside (they may come back), but
  // no more of them than the job has nodes: a stranger's lapsing pods cannot fill the host.
  for (int i = 0; i < 10; ++i) {
    const std::string pod = "n" + std::to_string(i);
    Join(pod);
    Delete(keys.alive(pod));
    for (const std::string& key : ledger.TakeStaleInfo()) Delete(key);
  }
  for (int i = 0; i < 10; ++i) Put(keys.alive("n" + std::to_string(i)), "1");
  EXPECT_EQ(ledger.TakeRevived().size(), 3u);  // The first 3: the job's --nnodes.
}

TEST_F(JobLedgerTest, AMemberWhoseHeartbeatNeverSaysRunningIsNamed) {
  Put(keys.alive("host"), "1");
  Join("b");
  Join("c");
  Put(keys.info("paddle", -1), "a node of Paddle's: no heartbeat");
  ledger.Form({"host", "b", "c", "paddle"});
  EXPECT_EQ(ledger.NotRunning(), (std::vector<std::string>{"b", "c"}));
  Put(keys.alive("b"), std::string(kRunningHeartbeat));
  EXPECT_EQ(ledger.NotRunning(), std::vector<std::string>{"c"});
  Put(keys.done("c"), "0");  // Done is done, however quick.
  EXPECT_TRUE(ledger.NotRunning().empty());
}

}  // namespace
}  // namespace pdlaunch
