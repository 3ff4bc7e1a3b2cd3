// --numa_binding's pure part (issue #27 item 5) against a two-node, two-socket machine.
#include "pdlaunch/plan/numa.h"

#include <gtest/gtest.h>

namespace pdlaunch {
namespace {

using Cpus = std::vector<int>;

TEST(NumaTest, CpuListsReadAndWriteAsTheKernelDoes) {
  EXPECT_EQ(ParseCpuList("0-3,8,10-11\n"), (Cpus{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ParseCpuList(""), Cpus{});
  for (const char* bad : {"3-1", "a", "0-", "1,,2", "4096", "-1"}) {
    EXPECT_EQ(ParseCpuList(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(NumaTest, PciAddressesAsSysfsNamesThem) {
  EXPECT_EQ(PciSysfsName("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(PciSysfsName("0000:18:00.0"), "0000:18:00.0");
  EXPECT_EQ(PciSysfsName("18:00.0"), "0000:18:00.0");
  EXPECT_EQ(PciSysfsName("../../etc"), std::nullopt);
  EXPECT_EQ(PciSysfsName("0000:zz:00.0"), std::nullopt);
}

NumaTopology TwoSockets() {
  // Node 0 and 1 on socket 0, node 2 on socket 1; four CPUs each.
  NumaTopology topology;
  topology.node_cpus = {{0, {0, 1, 2, 3}}, {1, {4, 5, 6, 7}}, {2, {8, 9, 10, 11}}};
  for (int cpu = 0; cpu < 12; ++cpu) topology.cpu_package[cpu] = cpu < 8 ? 0 : 1;
  return topology;
}

TEST(NumaTest, NodeBindsToTheDevicesNodeAndPrefersItsMemory) {
  std::vector<std::string> info;
  const auto placed = PlaceOnNuma(NumaBinding::kNode, TwoSockets(), {1, std::nullopt, 7}, info);
  EXPECT_EQ(placed[0].cpus, (Cpus{4, 5, 6, 7}));
  EXPECT_EQ(placed[0].preferred_node, 1);
  EXPECT_TRUE(placed[1].cpus.empty());
  EXPECT_EQ(placed[1].preferred_node, -1);
  EXPECT_TRUE(placed[2].cpus.empty());
  EXPECT_EQ(info,
            (std::vector<std::string>{
                "numa binding: local process 0 on NUMA node 1: CPUs 4-7, memory preferred "
                "from node 1",
                "numa binding: local process 1 left alone (no device, or its NUMA node is "
                "unknown)",
                "numa binding: local process 2 left alone (NUMA node 7 has no CPUs listed)"}));
}

TEST(NumaTest, SocketBindsToEveryCpuOfThePackage) {
  std::vector<std::string> info;
  const auto placed = PlaceOnNuma(NumaBinding::kSocket, TwoSockets(), {1, 2}, info);
  EXPECT_EQ(placed[0].cpus, (Cpus{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(placed[0].preferred_node, -1);
  EXPECT_EQ(placed[1].cpus, (Cpus{8, 9, 10, 11}));
}

TEST(NumaTest, ExclusiveSplitsANodeAmongItsRanks) {
  std::vector<std::string> info;
  const auto placed = PlaceOnNuma(NumaBinding::kExclusive, TwoSockets(), {0, 0, 0, 2}, info);
  EXPECT_EQ(placed[0].cpus, (Cpus{0, 1}));
  EXPECT_EQ(placed[1].cpus, (Cpus{2}));
  EXPECT_EQ(placed[2].cpus, (Cpus{3}));
  EXPECT_EQ(placed[3].cpus, (Cpus{8, 9, 10, 11}));
  EXPECT_EQ(placed[3].preferred_node, 2);
  NumaTopology tiny;
  tiny.node_cpus = {{0, {0}}};
  const auto shared = PlaceOnNuma(NumaBinding::kExclusive, tiny, {0, 0}, info);
  EXPECT_EQ(shared[1].cpus, (Cpus{0}));  // Fewer CPUs than ranks: they share.
  EXPECT_TRUE(PlaceOnNuma(NumaBinding::kNone, tiny, {0}, info)[0].cpus.empty());
}

}  // namespace
}  // namespace pdlaunch
