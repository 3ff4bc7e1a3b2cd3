#include "pdlaunch/coord/store_exchange.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;

KeyValue Kv(const std::string& key, const std::string& value) { return {key, value, 1, 1, 7}; }

TEST(StoreExchangeTest, PrefixesBeforeAndAfterTheNodesMet) {
  EXPECT_EQ(ExchangePrefix("default", "", "auto_tuner_plan"),
            "/pdlaunch/auto_tuner/default/auto_tuner_plan/");
  EXPECT_EQ(ExchangePrefix("job1", "00ff", "auto_tuner_3_outcome"),
            "/pdlaunch/auto_tuner/job1/00ff/auto_tuner_3_outcome/");
}

TEST(StoreExchangeTest, WaitsForEveryNodeThenGivesTheValuesInKeyOrder) {
  const std::string p = "/pdlaunch/auto_tuner/j/x/";
  EXPECT_EQ(ReadExchange({}, 2, p + "b"), std::nullopt);
  EXPECT_EQ(ReadExchange({Kv(p + "b", "mine")}, 2, p + "b"), std::nullopt);
  EXPECT_EQ(ReadExchange({Kv(p + "a", "theirs"), Kv(p + "b", "mine")}, 2, p + "b"),
            (std::vector<std::string>{"theirs", "mine"}));
  EXPECT_EQ(ReadExchange({Kv(p + "b", "alone")}, 1, p + "b"), (std::vector<std::string>{"alone"}));
}

TEST(StoreExchangeTest, MoreKeysOrAllWithoutOursAreWaitedOutAndThenNamed) {
  // Keys a search of the same job left seconds before go with their lease: not an error yet,
  // and never taken for the nodes this one meets.
  const std::string p = "/pdlaunch/auto_tuner/j/x/";
  const std::vector<KeyValue> three = {Kv(p + "a", ""), Kv(p + "b", ""), Kv(p + "c", "")};
  EXPECT_EQ(ReadExchange(three, 2, p + "b"), std::nullopt);
  const std::vector<KeyValue> others = {Kv(p + "a", ""), Kv(p + "c", "")};
  EXPECT_EQ(ReadExchange(others, 2, p + "b"), std::nullopt);
  EXPECT_EQ(ExchangeShortfall(three, 2, p + "b").substr(0, 46),
            "3 keys for 2 nodes (another node too many, or ");
  EXPECT_EQ(ExchangeShortfall(others, 2, p + "b").substr(0, 57),
            "2 keys for 2 nodes, this node's own not among them (anoth");
  EXPECT_EQ(ExchangeShortfall({Kv(p + "b", "")}, 2, p + "b"), "1 of the 2 nodes came");
  EXPECT_EQ(ExchangeShortfall({}, 2, p + "b"), "0 of the 2 nodes came");
}

TEST(StoreExchangeTest, AValueOverItsBoundIsRefusedAndTheKeyEscaped) {
  const std::string p = "/pdlaunch/auto_tuner/j/x/";
  const std::string error = ErrorOf<LaunchError>([&] {
    ReadExchange({Kv(p + "a\n\x1b", std::string(kMaxExchangeValue + 1, 'v')), Kv(p + "b", "")}, 2,
                 p + "b");
  });
  EXPECT_NE(error.find("a\\n\\x1b in the exchange is 16385 bytes, over 16384"), std::string::npos)
      << error;
}

TEST(StoreExchangeTest, TheSessionIsADigestOfTheNodesKeys) {
  const std::vector<KeyValue> met = {Kv("/p/a", "1"), Kv("/p/b", "2")};
  EXPECT_EQ(ExchangeSession(met), ExchangeSession({Kv("/p/a", "other"), Kv("/p/b", "values")}));
  EXPECT_NE(ExchangeSession(met), ExchangeSession({Kv("/p/a", "1"), Kv("/p/c", "2")}));
  EXPECT_EQ(ExchangeSession(met).size(), 16u);
  // FNV-1a 64 of "" is its offset basis: the same on every build of every node.
  EXPECT_EQ(ExchangeSession({}), "cbf29ce484222325");
}

}  // namespace
}  // namespace pdlaunch
