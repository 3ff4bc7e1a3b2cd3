#include "pdlaunch/coord/store_exchange.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pdlaunch/coord/job_token.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using Kind = ExchangeStep::Kind;

const std::string kPrefix = "/pdlaunch/auto_tuner/j/x/";
const std::string kOwn = kPrefix + "b";

KeyValue Kv(const std::string& node, const std::string& digest, const std::string& value,
            const JobToken* token = nullptr) {
  return {kPrefix + node, EncodeExchangeRecord(kPrefix + node, digest, value, token), 1, 1, 7};
}

// The step of the node "b", whose last write is its record in `kvs`.
ExchangeStep Decide(const std::vector<KeyValue>& kvs, size_t nodes,
                    const JobToken* token = nullptr) {
  std::string own_record;
  for (const KeyValue& kv : kvs) {
    if (kv.key == kOwn) own_record = kv.value;
  }
  return DecideExchange(kvs, nodes, kOwn, own_record, token);
}

TEST(StoreExchangeTest, PrefixesBeforeAndAfterTheNodesMet) {
  EXPECT_EQ(ExchangePrefix("default", "", "auto_tuner_plan"),
            "/pdlaunch/auto_tuner/default/auto_tuner_plan/");
  EXPECT_EQ(ExchangePrefix("job1", "00ff", "auto_tuner_3_outcome"),
            "/pdlaunch/auto_tuner/job1/00ff/auto_tuner_3_outcome/");
  EXPECT_EQ(EncodeExchangeRecord("/k", "", "v"), "0000000000000000 v");
}

TEST(StoreExchangeTest, AllTheNodesConfirmTheSetThenTheValuesComeInKeyOrder) {
  EXPECT_EQ(Decide({Kv("b", "", "mine")}, 2).kind, Kind::kWait);
  // Both there: confirm the set (its digest), then wait for the other's confirmation.
  const std::vector<KeyValue> met = {Kv("a", "", "theirs"), Kv("b", "", "mine")};
  const ExchangeStep confirm = Decide(met, 2);
  EXPECT_EQ(confirm.kind, Kind::kConfirm);
  EXPECT_EQ(confirm.digest, ExchangeSession(met));
  const std::string d = confirm.digest;
  EXPECT_EQ(Decide({Kv("a", "", "theirs"), Kv("b", d, "mine")}, 2).kind, Kind::kWait);
  const ExchangeStep done = Decide({Kv("a", d, "theirs"), Kv("b", d, "mine")}, 2);
  EXPECT_EQ(done.kind, Kind::kDone);
  EXPECT_EQ(done.values, (std::vector<std::string>{"theirs", "mine"}));
  EXPECT_EQ(done.digest, d);
  EXPECT_EQ(Decide({Kv("b", "", "alone")}, 1).kind, Kind::kConfirm);
}

TEST(StoreExchangeTest, AKeyOfANodeThatDiedIsNeverCounted) {
  // A node of a search stopped seconds before left its key (it had even confirmed its own set):
  // with this node's they make two, but it never confirms this set.
  const std::string old = ExchangeSession({Kv("a", "", ""), Kv("z", "", "")});
  std::vector<KeyValue> kvs = {Kv("a", old, "stale"), Kv("b", "", "mine")};
  const std::string d = ExchangeSession(kvs);
  kvs[1] = Kv("b", d, "mine");
  EXPECT_EQ(Decide(kvs, 2).kind, Kind::kWait);
  EXPECT_EQ(Decide({Kv("a", "", ""), Kv("b", "", ""), Kv("c", "", "")}, 2).kind, Kind::kWait);
  // Its lease gone and the real peer come: a new set, confirmed anew.
  const ExchangeStep again = Decide({Kv("b", d, "mine"), Kv("c", "", "peer")}, 2);
  EXPECT_EQ(again.kind, Kind::kConfirm);
  EXPECT_NE(again.digest, d);
}

TEST(StoreExchangeTest, AValueChangedAfterTheConfirmationsIsASetNobodyConfirmed) {
  const std::string d = ExchangeSession({Kv("a", "", "10"), Kv("b", "", "20")});
  // A stranger rewrote a's record after both confirmed, with a's confirmation kept.
  const std::vector<KeyValue> forged = {Kv("a", d, "99999"), Kv("b", d, "20")};
  const ExchangeStep step = Decide(forged, 2);
  EXPECT_EQ(step.kind, Kind::kConfirm);  // b confirms the new set; a will put its own back.
  EXPECT_NE(step.digest, d);
  // From a's side: its own record is not what it wrote, so it writes it again.
  EXPECT_EQ(DecideExchange(forged, 2, kPrefix + "a", Kv("a", d, "10").value).kind, Kind::kRepair);
  // Removed altogether: written again too.
  EXPECT_EQ(DecideExchange({Kv("b", d, "20")}, 2, kPrefix + "a", Kv("a", d, "10").value).kind,
            Kind::kRepair);
}

TEST(StoreExchangeTest, KeysThatAreNotRecordsAreIgnoredAndNamedNotFatal) {
  const std::vector<KeyValue> kvs = {{kPrefix + "a\n", "plain", 1, 1, 0},
                                     Kv("a\x1b", "", std::string(kMaxExchangeValue + 1, 'v')),
                                     Kv("b", "", "mine"),
                                     Kv("c", "", "theirs")};
  const ExchangeStep step = Decide(kvs, 2);
  EXPECT_EQ(step.kind, Kind::kConfirm);  // Two records: b's and c's.
  ASSERT_EQ(step.ignored.size(), 2u);
  EXPECT_EQ(step.ignored[0].key, "/pdlaunch/auto_tuner/j/x/a\\n");
  EXPECT_EQ(step.ignored[0].why, "not a record");
  EXPECT_EQ(step.ignored[1].key, "/pdlaunch/auto_tuner/j/x/a\\x1b");
  EXPECT_EQ(step.ignored[1].why, "its value is 16385 bytes, over 16384");
}

TEST(StoreExchangeTest, WithATokenOnlyRecordsCarryingItsMacCount) {
  const JobToken token = JobToken::Parse("0123456789abcdef-secret");
  const JobToken other = JobToken::Parse("another-token-of-16+");
  const std::string mine = Kv("b", "", "mine", &token).value;
  EXPECT_EQ(mine.substr(16, 1), ":");
  EXPECT_EQ(mine.substr(17 + 64), " mine");
  // A record without a MAC, one under another token, and one of c's copied under d's key.
  KeyValue copied = Kv("c", "", "theirs", &token);
  copied.key = kPrefix + "d";
  const std::vector<KeyValue> kvs = {Kv("a", "", "forged"), Kv("a2", "", "x", &other),
                                     Kv("b", "", "mine", &token), copied,
                                     Kv("e", "", "peer", &token)};
  const ExchangeStep step = Decide(kvs, 2, &token);
  EXPECT_EQ(step.kind, Kind::kConfirm);  // b's and e's.
  ASSERT_EQ(step.ignored.size(), 3u);
  EXPECT_EQ(step.ignored[0].why,
            "it carries no MAC under PDLAUNCH_JOB_TOKEN (forged, or a node without the token)");
  EXPECT_EQ(step.ignored[1].why,
            "its MAC is not one under this node's PDLAUNCH_JOB_TOKEN (forged, or another token)");
  EXPECT_EQ(step.ignored[2].key, kPrefix + "d");
  // A node without the token does not count a record that carries one.
  const ExchangeStep plain = Decide({Kv("b", "", "mine"), Kv("e", "", "peer", &token)}, 2);
  EXPECT_EQ(plain.kind, Kind::kWait);
  ASSERT_EQ(plain.ignored.size(), 1u);
  EXPECT_EQ(plain.ignored[0].why,
            "it carries a MAC: its node has PDLAUNCH_JOB_TOKEN and this one "
            "has not");
}

TEST(StoreExchangeTest, TheShortfallSaysWhyInWords) {
  const std::vector<KeyValue> three = {Kv("a", "", ""), Kv("b", "", ""), Kv("c", "", "")};
  EXPECT_EQ(ExchangeShortfall(three, 2, kOwn).substr(0, 49),
            "3 records for 2 nodes (another node too many, or ");
  EXPECT_EQ(ExchangeShortfall({Kv("a", "", ""), Kv("c", "", "")}, 2, kOwn).substr(0, 54),
            "2 records for 2 nodes, this node's own not among them ");
  EXPECT_EQ(ExchangeShortfall({Kv("b", "", "")}, 2, kOwn), "1 of the 2 nodes came");
  EXPECT_EQ(ExchangeShortfall({Kv("a", "", ""), Kv("b", "", "")}, 2, kOwn).substr(0, 66),
            "the 2 nodes' records are there, but 2 never confirmed them (a reco");
  // A record with no lease was not written by a node of pdlaunch: it never goes by itself.
  std::vector<KeyValue> unleased = three;
  unleased[2].lease = 0;
  EXPECT_EQ(ExchangeShortfall(unleased, 2, kOwn),
            "3 records for 2 nodes (1 of them with no lease, which no node of pdlaunch writes and "
            "which stay until someone removes them (etcdctl del --prefix /pdlaunch/auto_tuner/))");
  EXPECT_EQ(ExchangeShortfall({Kv("b", "", ""), {kPrefix + "junk", "x", 1, 1, 0}}, 2, kOwn),
            "1 of the 2 nodes came; 1 more key under the prefix is not a record and was ignored");
}

TEST(StoreExchangeTest, TheSessionIsADigestOfTheRecordsKeysAndValues) {
  const std::vector<KeyValue> met = {Kv("a", "", "1"), Kv("b", "", "2")};
  EXPECT_NE(ExchangeSession(met), ExchangeSession({Kv("a", "", "other"), Kv("b", "", "values")}));
  EXPECT_NE(ExchangeSession(met), ExchangeSession({Kv("a", "", "1"), Kv("c", "", "2")}));
  // The confirmations are not in it (nor the MACs), and no two sets read as one text.
  EXPECT_EQ(ExchangeSession(met),
            ExchangeSession({Kv("a", "00000000000000ff", "1"), Kv("b", "0000000000000abc", "2")}));
  EXPECT_NE(ExchangeSession({Kv("a", "", "1\n"), Kv("b", "", "2")}),
            ExchangeSession({Kv("a", "", "1"), Kv("b", "", "\n2")}));
  EXPECT_EQ(ExchangeSession(met).size(), 16u);
  // FNV-1a 64 of "" is its offset basis: the same on every build of every node.
  EXPECT_EQ(ExchangeSession({}), "cbf29ce484222325");
}

}  // namespace
}  // namespace pdlaunch
