#include "pdlaunch/plan/messages.h"

#include <gtest/gtest.h>

namespace pdlaunch {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    lines.push_back(text.substr(begin, end - begin));
  }
  lines.push_back(text.substr(begin));
  return lines;
}

TEST(MessagesTest, DistributedEnvsRowMatchesContractExample) {
  const auto lines = Lines(FormatDistributedEnvs({{"PADDLE_TRAINER_ID", "0"}}));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(
      lines[4],
      "    |                       PADDLE_TRAINER_ID                        0                 "
      "     |");
}

TEST(MessagesTest, DistributedEnvsWholeTable) {
  const std::string heavy = "    +" + std::string(87, '=') + "+\n";
  const std::string expected = "\n" + heavy + "    |" + std::string(24, ' ') + "Distributed Envs" +
                               "  " + std::string(20, ' ') + "Value" + std::string(20, ' ') +
                               "|\n" + "    +" + std::string(87, '-') + "+\n" + "    |" +
                               std::string(21, ' ') + "PADDLE_TRAINERS_NUM" + "  " +
                               std::string(22, ' ') + "4" + std::string(22, ' ') + "|\n" + heavy;
  EXPECT_EQ(FormatDistributedEnvs({{"PADDLE_TRAINERS_NUM", "4"}}), expected);
}

TEST(MessagesTest, DistributedEnvsBeginsAndEndsWithNewline) {
  const std::string table = FormatDistributedEnvs({});
  EXPECT_EQ(table.front(), '\n');
  EXPECT_EQ(table.back(), '\n');
  EXPECT_EQ(Lines(table).size(), 6u);
}

TEST(MessagesTest, DistributedEnvsOddPaddingGoesRight) {
  const auto lines = Lines(FormatDistributedEnvs({{"K", "ab"}}));
  EXPECT_EQ(lines[4], "    |" + std::string(39, ' ') + "K  " + std::string(21, ' ') + "ab" +
                          std::string(22, ' ') + "|");
}

TEST(MessagesTest, DistributedEnvsLongKeyWidensKeyColumn) {
  const std::string key(50, 'K');
  const auto lines = Lines(FormatDistributedEnvs({{"A", "1"}, {key, "2"}}));
  EXPECT_EQ(lines[1], "    +" + std::string(97, '=') + "+");
  EXPECT_EQ(lines[3], "    +" + std::string(97, '-') + "+");
  EXPECT_EQ(lines[4], "    |" + std::string(49, ' ') + "A  " + std::string(22, ' ') + "1" +
                          std::string(22, ' ') + "|");
  EXPECT_EQ(lines[5],
            "    |" + key + "  " + std::string(22, ' ') + "2" + std::string(22, ' ') + "|");
  EXPECT_EQ(lines[6], "    +" + std::string(97, '=') + "+");
}

TEST(MessagesTest, DistributedEnvsShortensValuesOf45CharactersOrMore) {
  std::string value;
  for (int i = 0; i < 50; ++i) value += static_cast<char>('a' + i % 26);
  const auto lines = Lines(FormatDistributedEnvs({{"E", value}, {"F", value.substr(0, 45)}}));
  EXPECT_EQ(lines[4], "    |" + std::string(39, ' ') + "E  ... " + value.substr(9) + "|");
  EXPECT_EQ(lines[5], "    |" + std::string(39, ' ') + "F  ... " + value.substr(4, 41) + "|");
}

TEST(MessagesTest, DistributedEnvsKeeps44CharacterValues) {
  const std::string value(44, 'v');
  const auto lines = Lines(FormatDistributedEnvs({{"E", value}}));
  EXPECT_EQ(lines[4], "    |" + std::string(39, ' ') + "E  " + value + " |");
}

TEST(MessagesTest, DistributedEnvsUsesGivenHeaders) {
  const auto lines = Lines(FormatDistributedEnvs({}, "fleetrun Distributed Envs", "Val"));
  EXPECT_EQ(lines[2], "    |" + std::string(15, ' ') + "fleetrun Distributed Envs  " +
                          std::string(21, ' ') + "Val" + std::string(21, ' ') + "|");
}

TEST(MessagesTest, EndpointsLogHasHeaderAndNoTrailingNewline) {
  EXPECT_EQ(FormatEndpointsLog(
                {{"10.0.0.1", 6070}, {"10.0.0.1", 6071}, {"10.0.0.2", 6070}, {"10.0.0.2", 6071}}),
            "PADDLE_TRAINER_ENDPOINTS: \n10.0.0.1:6070\n10.0.0.1:6071\n10.0.0.2:6070\n"
            "10.0.0.2:6071");
}

TEST(MessagesTest, EndpointsLogOfOneTrainer) {
  EXPECT_EQ(FormatEndpointsLog({{"127.0.0.1", 35789}}),
            "PADDLE_TRAINER_ENDPOINTS: \n127.0.0.1:35789");
}

TEST(MessagesTest, AbortLineListsRanksAsPythonList) {
  EXPECT_EQ(FormatAbortLine(8, {1, 3}),
            "ABORT!!! Out of all 8 trainers, the trainer process with rank=[1, 3] was aborted. "
            "Please check its log.");
}

TEST(MessagesTest, AbortLineWithOneOrNoRank) {
  EXPECT_EQ(FormatAbortLine(2, {0}),
            "ABORT!!! Out of all 2 trainers, the trainer process with rank=[0] was aborted. "
            "Please check its log.");
  EXPECT_EQ(FormatAbortLine(4, {}),
            "ABORT!!! Out of all 4 trainers, the trainer process with rank=[] was aborted. "
            "Please check its log.");
}

TEST(MessagesTest, AbortLineNamesParameterServerRoles) {
  EXPECT_EQ(FormatAbortLine(2, {1}, "server"),
            "ABORT!!! Out of all 2 servers, the server process with rank=[1] was aborted. Please "
            "check its log.");
  EXPECT_EQ(FormatAbortLine(3, {0, 2}, "heter_worker"),
            "ABORT!!! Out of all 3 heter_workers, the heter_worker process with rank=[0, 2] was "
            "aborted. Please check its log.");
}

}  // namespace
}  // namespace pdlaunch
