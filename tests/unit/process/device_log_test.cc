// The pure parts of <job_id>.gpu.log (issue #27 item 4) against recorded nvidia-smi output.
#include "pdlaunch/process/device_log.h"

#include <gtest/gtest.h>

namespace pdlaunch {
namespace {

TEST(DeviceLogTest, QueriesAreNvidiaSmisCsvWithTheLabels) {
  EXPECT_EQ(NvidiaSmiQuery("nvidia-smi", "index,uuid", {"4", "5"}, false),
            (std::vector<std::string>{"nvidia-smi", "--format=csv,noheader,nounits",
                                      "--query-gpu=index,uuid", "--id=4,5"}));
  EXPECT_EQ(NvidiaSmiQuery("nvidia-smi", "pid", {}, true),
            (std::vector<std::string>{"nvidia-smi", "--format=csv,noheader,nounits",
                                      "--query-compute-apps=pid"}));
}

TEST(DeviceLogTest, RowsAreTheCsvLinesWithoutTheirSpaces) {
  // nvidia-smi 550.54 on the H200 machine, two samples' worth of one GPU.
  EXPECT_EQ(CsvRows("0, 45, 143771, 2048, 141723, 2026/11/26 20:00:00.000\n\n"
                    "1, 0, 143771, 0, 143771, 2026/11/26 20:00:00.001\n"),
            "0,45,143771,2048,141723,2026/11/26 20:00:00.000\n"
            "1,0,143771,0,143771,2026/11/26 20:00:00.001\n");
  EXPECT_EQ(CsvRows(""), "");
  // Another program's bytes: escaped, bounded.
  EXPECT_EQ(CsvRows("0, \x1b[2Jx\n"), "0,\\x1b[2Jx\n");
  std::string many;
  for (int i = 0; i < 100; ++i) many += std::string(600, 'a') + "\n";
  const std::string rows = CsvRows(many);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 64);
  EXPECT_EQ(rows.find('\n'), 512u);
}

TEST(DeviceLogTest, UsageKeepsThePeakMemoryAndTheMeanUtilisation) {
  std::map<std::string, DeviceUsage> usage;
  AddUtilizationSample("0,40,143771,2048,141723,t\n1,10,143771,100,0,t\n", usage);
  AddUtilizationSample("0,60,143771,1024,142747,t\nbad row\n1,[N/A],1,1,1,t\n", usage);
  EXPECT_EQ(usage["0"].peak_memory_used_mib, 2048);
  EXPECT_EQ(usage["0"].mean_utilization(), 50);
  EXPECT_EQ(usage["0"].samples, 2);
  EXPECT_EQ(usage["1"].samples, 1);
  EXPECT_EQ(usage.count("bad row"), 0u);
}

}  // namespace
// Shaped as a DCU's rocm-smi table, the layout Paddle 3's nvsmi.py reads: 8 fields a device,
// VRAM% the 7th, DCU% the 8th; the header names DCU; other lines have other counts.
TEST(DeviceLogTest, RocmSmiRowsFollowPaddlesRule) {
  const std::string table =
      "============================ System Management Interface =============================\n"
      "DCU  Temp   AvgPwr  Perf  PwrCap  SCLK     VRAM%  DCU%\n"
      "0    51.0C  98.0W   auto  300.0W  1500Mhz  25%    80%\n"
      "1    49.0C  97.0W   auto  300.0W  1500Mhz  0%     7%\n"
      "=================================== End of SMI Log ===================================\n";
  EXPECT_EQ(RocmSmiRows(table, "2026-11-28 05:00:00"),
            "0,80,32150,8037,24112,2026-11-28 05:00:00\n"
            "1,7,32150,0,32150,2026-11-28 05:00:00\n");
  EXPECT_EQ(RocmSmiRows("garbage\n0 a b c d e f% g%\n", "t"), "");
}

// Shaped as Ascend's `npu-smi info`: each chip's second line splits into 19 pieces at ',', '/',
// '|' and blank runs; with the empty ones dropped, AICore% is the 3rd, HBM used and total the 6th
// and 7th. The header lines name NPU.
TEST(DeviceLogTest, NpuSmiRowsFollowPaddlesRule) {
  const std::string table =
      "+------------------------------------------------------------------------------------+\n"
      "| NPU   Name        | Health   | Power(W)  Temp(C)  Hugepages-Usage(page)            |\n"
      "| Chip              | Bus-Id   | AICore(%) Memory-Usage(MB)  HBM-Usage(MB)          |\n"
      "+===================+==========+===================================================+\n"
      "| 0     910B        | OK       | 95.7      35       0    / 0                         |\n"
      "| 0 | 0000:C1:00.0 | 37 0 / 0 3162 / 65536 |\n";
  EXPECT_EQ(NpuSmiRows(table, "t"), "0,37,65536,3162,62374,t\n");
}

}  // namespace pdlaunch
