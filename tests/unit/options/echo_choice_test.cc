#include "pdlaunch/options/echo_choice.h"

#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

TEST(EchoChoiceTest, AllAndLists) {
  EXPECT_TRUE(ParseEchoChoice("all").all);
  EXPECT_TRUE(ParseEchoChoice(" all ").all);
  const EchoChoice list = ParseEchoChoice("5, 0,3");
  EXPECT_FALSE(list.all);
  EXPECT_EQ(list.locals, (std::vector<int>{0, 3, 5}));
  EXPECT_EQ(ParseEchoChoice("0").locals, (std::vector<int>{0}));
}

TEST(EchoChoiceTest, NoneEchoesNoProcess) {
  const EchoChoice none = ParseEchoChoice(" none ");
  EXPECT_FALSE(none.all);
  EXPECT_TRUE(none.locals.empty());
  EXPECT_EQ(EchoAbsentWarning(none, 4), std::nullopt);
}

TEST(EchoChoiceTest, BadValuesNameTheToken) {
  auto message = [](const char* value) {
    try {
      ParseEchoChoice(value);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("0,0"), "--echo: local rank 0 is listed twice in '0,0'");
  EXPECT_EQ(message("x"),
            "--echo: 'x' is not a local rank (expected all, none, or local ranks such as 0,3,5)");
  EXPECT_EQ(message("-1"),
            "--echo: '-1' is not a local rank (expected all, none, or local ranks such as 0,3,5)");
  EXPECT_EQ(message("All"),
            "--echo: 'All' is not a local rank (expected all, none, or local ranks such as 0,3,5)");
  EXPECT_EQ(message(""),
            "--echo: '' names no process (expected all, none, or local ranks such as 0,3,5)");
  EXPECT_EQ(message("1,,2"),
            "--echo: '1,,2' has an empty entry (expected all, none, or local ranks such as 0,3,5)");
}

TEST(EchoChoiceTest, PrefixNamesRoleRankAndHost) {
  EXPECT_EQ(EchoPrefix("trainer", 3, ""), "[rank 3]: ");
  EXPECT_EQ(EchoPrefix("trainer", 3, "10.0.0.2"), "[10.0.0.2 rank 3]: ");
  EXPECT_EQ(EchoPrefix("worker", 1, ""), "[worker 1]: ");
  EXPECT_EQ(EchoPrefix("server", 0, ""), "[server 0]: ");
}

}  // namespace
}  // namespace pdlaunch
