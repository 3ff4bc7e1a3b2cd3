#include "pdlaunch/coord/store_exchange.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;

const std::string kPrefix = "/pdlaunch/auto_tuner/j/x/";

KeyValue Kv(const std::string& node, const std::string& digest, const std::string& value) {
  return {kPrefix + node, EncodeExchangeRecord(digest, value), 1, 1, 7};
}

TEST(StoreExchangeTest, PrefixesBeforeAndAfterTheNodesMet) {
  EXPECT_EQ(ExchangePrefix("default", "", "auto_tuner_plan"),
            "/pdlaunch/auto_tuner/default/auto_tuner_plan/");
  EXPECT_EQ(ExchangePrefix("job1", "00ff", "auto_tuner_3_outcome"),
            "/pdlaunch/auto_tuner/job1/00ff/auto_tuner_3_outcome/");
  EXPECT_EQ(EncodeExchangeRecord("", "v"), "0000000000000000 v");
}

TEST(StoreExchangeTest, AllTheNodesConfirmTheSetThenTheValuesComeInKeyOrder) {
  using Kind = ExchangeStep::Kind;
  const std::string own = kPrefix + "b";
  EXPECT_EQ(DecideExchange({}, 2, own).kind, Kind::kWait);
  EXPECT_EQ(DecideExchange({Kv("b", "", "mine")}, 2, own).kind, Kind::kWait);
  // Both there: confirm the set (its digest), then wait for the other's confirmation.
  const std::vector<KeyValue> met = {Kv("a", "", "theirs"), Kv("b", "", "mine")};
  const ExchangeStep confirm = DecideExchange(met, 2, own);
  EXPECT_EQ(confirm.kind, Kind::kConfirm);
  EXPECT_EQ(confirm.digest, ExchangeSession(met));
  const std::string d = confirm.digest;
  EXPECT_EQ(DecideExchange({Kv("a", "", "theirs"), Kv("b", d, "mine")}, 2, own).kind, Kind::kWait);
  const ExchangeStep done = DecideExchange({Kv("a", d, "theirs"), Kv("b", d, "mine")}, 2, own);
  EXPECT_EQ(done.kind, Kind::kDone);
  EXPECT_EQ(done.values, (std::vector<std::string>{"theirs", "mine"}));
  EXPECT_EQ(DecideExchange({Kv("b", "", "alone")}, 1, own).kind, Kind::kConfirm);
}

TEST(StoreExchangeTest, AKeyOfANodeThatDiedIsNeverCounted) {
  using Kind = ExchangeStep::Kind;
  const std::string own = kPrefix + "b";
  // A node of a search stopped seconds before left its key (it had even confirmed its own set):
  // with this node's they make two, but it never confirms this set.
  const std::string old = ExchangeSession({Kv("a", "", ""), Kv("z", "", "")});
  std::vector<KeyValue> kvs = {Kv("a", old, "stale"), Kv("b", "", "mine")};
  const std::string d = ExchangeSession(kvs);
  kvs[1] = Kv("b", d, "mine");
  EXPECT_EQ(DecideExchange(kvs, 2, own).kind, Kind::kWait);
  EXPECT_EQ(DecideExchange({Kv("a", "", ""), Kv("b", "", ""), Kv("c", "", "")}, 2, own).kind,
            Kind::kWait);
  // Its lease gone and the real peer come: a new set, confirmed anew.
  const ExchangeStep again = DecideExchange({Kv("b", d, "mine"), Kv("c", "", "peer")}, 2, own);
  EXPECT_EQ(again.kind, Kind::kConfirm);
  EXPECT_NE(again.digest, d);
}

TEST(StoreExchangeTest, TheShortfallSaysWhyInWords) {
  const std::string own = kPrefix + "b";
  const std::vector<KeyValue> three = {Kv("a", "", ""), Kv("b", "", ""), Kv("c", "", "")};
  EXPECT_EQ(ExchangeShortfall(three, 2, own).substr(0, 46),
            "3 keys for 2 nodes (another node too many, or ");
  EXPECT_EQ(ExchangeShortfall({Kv("a", "", ""), Kv("c", "", "")}, 2, own).substr(0, 51),
            "2 keys for 2 nodes, this node's own not among them ");
  EXPECT_EQ(ExchangeShortfall({Kv("b", "", "")}, 2, own), "1 of the 2 nodes came");
  EXPECT_EQ(ExchangeShortfall({Kv("a", "", ""), Kv("b", "", "")}, 2, own).substr(0, 63),
            "the 2 nodes' keys are there, but 2 never confirmed them (a key ");
}

TEST(StoreExchangeTest, ARecordThatIsNotOneOrTooLongIsRefusedAndTheKeyEscaped) {
  const std::string own = kPrefix + "b";
  EXPECT_EQ(ErrorOf<LaunchError>([&] {
              DecideExchange({{kPrefix + "a\n", "plain", 1, 1, 0}}, 2, own);
            }),
            "the record of /pdlaunch/auto_tuner/j/x/a\\n in the exchange is not one");
  EXPECT_EQ(ErrorOf<LaunchError>([&] {
              DecideExchange({Kv("a\x1b", "", std::string(kMaxExchangeValue + 1, 'v'))}, 2, own);
            }),
            "the value of /pdlaunch/auto_tuner/j/x/a\\x1b in the exchange is 16385 bytes, over "
            "16384");
}

TEST(StoreExchangeTest, TheSessionIsADigestOfTheNodesKeys) {
  const std::vector<KeyValue> met = {Kv("a", "", "1"), Kv("b", "", "2")};
  EXPECT_EQ(ExchangeSession(met), ExchangeSession({Kv("a", "", "other"), Kv("b", "", "values")}));
  EXPECT_NE(ExchangeSession(met), ExchangeSession({Kv("a", "", "1"), Kv("c", "", "2")}));
  EXPECT_EQ(ExchangeSession(met).size(), 16u);
  // FNV-1a 64 of "" is its offset basis: the same on every build of every node.
  EXPECT_EQ(ExchangeSession({}), "cbf29ce484222325");
}

}  // namespace
}  // namespace pdlaunch
