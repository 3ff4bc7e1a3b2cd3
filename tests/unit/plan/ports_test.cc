#include "pdlaunch/plan/ports.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "pdlaunch/base/errors.h"
#include "support/fake_port_allocator.h"

namespace pdlaunch {
namespace {

using Range = std::pair<int, int>;

TEST(CandidatePortRangeTest, LinuxDefaultPicksTheRunBelow) {
  EXPECT_EQ(CandidatePortRange(32768, 60999), Range(20000, 32767));
}

TEST(CandidatePortRangeTest, LargerRunAboveWins) {
  EXPECT_EQ(CandidatePortRange(20000, 30000), Range(30001, 65535));
}

TEST(CandidatePortRangeTest, EphemeralRangeAtTheTopLeavesTheRunBelow) {
  EXPECT_EQ(CandidatePortRange(49152, 65535), Range(20000, 49151));
}

TEST(CandidatePortRangeTest, EphemeralRangeBelowTheFloorLeavesEverything) {
  EXPECT_EQ(CandidatePortRange(1024, 4999), Range(20000, 65535));
}

TEST(CandidatePortRangeTest, EphemeralRangeStraddlingTheFloor) {
  EXPECT_EQ(CandidatePortRange(10000, 25000), Range(25001, 65535));
}

TEST(CandidatePortRangeTest, TieChoosesTheLowerRun) {
  // [20000, 29999] and [55536, 65535] hold 10000 ports each.
  EXPECT_EQ(CandidatePortRange(30000, 55535), Range(20000, 29999));
}

TEST(CandidatePortRangeTest, SmallRunFallsBackBelowTheFloor) {
  EXPECT_EQ(CandidatePortRange(20100, 65535), Range(1024, 20099));
  // Two runs of 1000 ports above the floor: too small, the wide search finds [1024, 20999].
  EXPECT_EQ(CandidatePortRange(21000, 64535), Range(1024, 20999));
}

TEST(CandidatePortRangeTest, ComfortableRunStaysAboveTheFloor) {
  EXPECT_EQ(CandidatePortRange(21024, 65535), Range(20000, 21023));
}

TEST(CandidatePortRangeTest, EphemeralRangeCoveringEverythingAboveTheFloor) {
  EXPECT_EQ(CandidatePortRange(15000, 65535), Range(1024, 14999));
}

TEST(CandidatePortRangeTest, EphemeralRangeCoveringEverythingReturnsTheWholeRange) {
  EXPECT_EQ(CandidatePortRange(1024, 65535), Range(20000, 65535));
  EXPECT_EQ(CandidatePortRange(1, 65535), Range(20000, 65535));
}

TEST(CandidatePortRangeTest, InvalidEphemeralRangeReturnsTheWholeRange) {
  EXPECT_EQ(CandidatePortRange(60999, 32768), Range(20000, 65535));
}

TEST(ParseLocalPortRangeTest, ParsesTabSeparatedPair) {
  EXPECT_EQ(ParseLocalPortRange("32768\t60999\n"), Range(32768, 60999));
  EXPECT_EQ(ParseLocalPortRange("  1024 65000"), Range(1024, 65000));
}

TEST(ParseLocalPortRangeTest, RejectsMalformedText) {
  EXPECT_EQ(ParseLocalPortRange(""), std::nullopt);
  EXPECT_EQ(ParseLocalPortRange("32768"), std::nullopt);
  EXPECT_EQ(ParseLocalPortRange("a b"), std::nullopt);
  EXPECT_EQ(ParseLocalPortRange("1 2 3"), std::nullopt);
  EXPECT_EQ(ParseLocalPortRange("0 70000"), std::nullopt);
}

TEST(ParseReservedPortsTest, ParsesSinglePortsAndRanges) {
  EXPECT_EQ(ParseReservedPorts("8080,9000-9010,20001\n"),
            (std::vector<Range>{{8080, 8080}, {9000, 9010}, {20001, 20001}}));
}

TEST(ParseReservedPortsTest, EmptyFileMeansNone) {
  EXPECT_TRUE(ParseReservedPorts("\n").empty());
  EXPECT_TRUE(ParseReservedPorts("").empty());
}

TEST(ParseReservedPortsTest, SkipsMalformedItems) {
  EXPECT_EQ(ParseReservedPorts("x,,5-3,7-y,100"), (std::vector<Range>{{100, 100}}));
}

TEST(FakePortAllocatorTest, HandsOutConsecutivePorts) {
  FakePortAllocator allocator(6170);
  std::unique_ptr<PortReservation> first = allocator.Reserve(3);
  std::unique_ptr<PortReservation> second = allocator.Reserve(2);
  EXPECT_EQ(first->ports(), (std::vector<int>{6170, 6171, 6172}));
  EXPECT_EQ(second->ports(), (std::vector<int>{6173, 6174}));
}

TEST(FakePortAllocatorTest, ZeroPortsIsEmpty) {
  FakePortAllocator allocator(7000);
  EXPECT_TRUE(allocator.Reserve(0)->ports().empty());
  EXPECT_EQ(allocator.Reserve(1)->ports(), (std::vector<int>{7000}));
}

TEST(FixedStartPortTest, UnsetEverywhereMeansFreePorts) {
  EXPECT_EQ(FixedStartPort(std::nullopt, std::nullopt, std::nullopt), std::nullopt);
}

TEST(FixedStartPortTest, FlagBeatsBothVariables) {
  EXPECT_EQ(FixedStartPort(7000, "8000", "9000"), 7000);
}

TEST(FixedStartPortTest, FlagsStartPortBeatsPaddleStartPort) {
  EXPECT_EQ(FixedStartPort(std::nullopt, "8000", "9000"), 8000);
}

TEST(FixedStartPortTest, PaddleStartPortIsTheLastResort) {
  EXPECT_EQ(FixedStartPort(std::nullopt, std::nullopt, "9000"), 9000);
}

TEST(FixedStartPortTest, EmptyVariableCountsAsUnset) {
  EXPECT_EQ(FixedStartPort(std::nullopt, "", "9000"), 9000);
  EXPECT_EQ(FixedStartPort(std::nullopt, "", ""), std::nullopt);
}

TEST(FixedStartPortTest, SurroundingWhitespaceIsAccepted) {
  EXPECT_EQ(FixedStartPort(std::nullopt, " 6070\n", std::nullopt), 6070);
}

TEST(FixedStartPortTest, OnlyTheWinningSourceIsValidated) {
  EXPECT_EQ(FixedStartPort(7000, "abc", "xyz"), 7000);
  EXPECT_EQ(FixedStartPort(std::nullopt, "8000", "xyz"), 8000);
}

void ExpectUsageError(const std::optional<int>& flag, const std::optional<std::string>& flags_env,
                      const std::optional<std::string>& paddle_env, const std::string& message) {
  try {
    FixedStartPort(flag, flags_env, paddle_env);
    ADD_FAILURE() << "no UsageError, expected: " << message;
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), message);
    EXPECT_EQ(e.exit_code(), kExitUsageError);
  }
}

TEST(FixedStartPortTest, NonNumericVariableIsAUsageError) {
  ExpectUsageError(std::nullopt, "abc", std::nullopt,
                   "FLAGS_START_PORT: 'abc' is not a port number");
  ExpectUsageError(std::nullopt, std::nullopt, "60 70",
                   "PADDLE_START_PORT: '60 70' is not a port number");
  ExpectUsageError(std::nullopt, "+6070", std::nullopt,
                   "FLAGS_START_PORT: '+6070' is not a port number");
  ExpectUsageError(std::nullopt, " ", std::nullopt, "FLAGS_START_PORT: ' ' is not a port number");
}

TEST(FixedStartPortTest, OutOfRangeVariableIsAUsageError) {
  ExpectUsageError(std::nullopt, "0", std::nullopt, "FLAGS_START_PORT: '0' is not a port number");
  ExpectUsageError(std::nullopt, "65536", std::nullopt,
                   "FLAGS_START_PORT: '65536' is not a port number");
  ExpectUsageError(std::nullopt, "-1", std::nullopt, "FLAGS_START_PORT: '-1' is not a port number");
  ExpectUsageError(std::nullopt, "99999999999999999999", std::nullopt,
                   "FLAGS_START_PORT: '99999999999999999999' is not a port number");
}

TEST(FixedStartPortTest, OutOfRangeFlagIsAUsageError) {
  ExpectUsageError(70000, std::nullopt, std::nullopt, "--start_port: 70000 is not a port number");
  ExpectUsageError(0, "8000", std::nullopt, "--start_port: 0 is not a port number");
}

TEST(FixedStartPortTest, HighestPortIsAccepted) {
  EXPECT_EQ(FixedStartPort(std::nullopt, "65535", std::nullopt), 65535);
  EXPECT_EQ(FixedStartPort(1, std::nullopt, std::nullopt), 1);
}

constexpr const char* kProcNetTcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n"
    "   0: 0100007F:17B6 0100007F:C8C6 01 00000000:00000000 00:00000000 00000000  1000        0 "
    "555 1 0000000000000000 20 4 30 10 -1\n"
    "   1: 00000000:17B6 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 "
    "444 1 0000000000000000 100 0 0 10 0\n"
    "   2: 0100007F:17B6 0100007F:9999 06 00000000:00000000 03:000011DA 00000000     0        0 "
    "0 3 0000000000000000\n"
    "   3: 00000000:17B7 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 "
    "333 1 0000000000000000 100 0 0 10 0\n";

TEST(SocketInodesForPortTest, ListenSocketComesFirstAndTimeWaitIsSkipped) {
  EXPECT_EQ(SocketInodesForPort(kProcNetTcp, 6070), (std::vector<unsigned long>{444, 555}));
}

TEST(SocketInodesForPortTest, MatchesOnlyTheLocalPort) {
  EXPECT_EQ(SocketInodesForPort(kProcNetTcp, 6071), (std::vector<unsigned long>{333}));
  // 0xC8C6 = 51398 is a remote port only.
  EXPECT_TRUE(SocketInodesForPort(kProcNetTcp, 51398).empty());
}

TEST(SocketInodesForPortTest, ReadsIpv6Addresses) {
  const std::string tcp6 =
      "  sl  local_address                         remote_address                        st "
      "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000000000000000000000000000:7368 00000000000000000000000000000000:0000 0A "
      "00000000:00000000 00:00000000 00000000     0        0 13673 1 00000000ce126ac1 100 0 0 10 "
      "0\n";
  EXPECT_EQ(SocketInodesForPort(tcp6, 0x7368), (std::vector<unsigned long>{13673}));
}

TEST(SocketInodesForPortTest, EmptyOrHeaderOnlyTextHasNoSockets) {
  EXPECT_TRUE(SocketInodesForPort("", 6070).empty());
  EXPECT_TRUE(SocketInodesForPort("  sl  local_address\n", 6070).empty());
}

}  // namespace
}  // namespace pdlaunch
