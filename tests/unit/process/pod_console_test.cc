#include "pdlaunch/process/pod_console.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "pdlaunch/options/options.h"

// GCC 12 misfires -Wmaybe-uninitialized on a default-constructed LaunchOptions whose
// std::optional<std::string> members are then set (the product code builds clean).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pdlaunch {
namespace {

TEST(PodConsoleTest, JobLineOfAFixedNodeCount) {
  EXPECT_EQ(FormatJobLine("default", "collective", ""),
            "Job: default, mode collective, replicas 1[1:1], elastic False");
  EXPECT_EQ(FormatJobLine("test3", "collective", "2"),
            "Job: test3, mode collective, replicas 2[2:2], elastic False");
  EXPECT_EQ(FormatJobLine("ps2", "ps", "1"), "Job: ps2, mode ps, replicas 1[1:1], elastic False");
}

TEST(PodConsoleTest, JobLineOfARangeHasItsMaximumAndIsElasticEvenWhenEmpty) {
  EXPECT_EQ(FormatJobLine("e", "collective", "2:4"),
            "Job: e, mode collective, replicas 4[2:4], elastic True");
  EXPECT_EQ(FormatJobLine("e", "collective", "5:5"),
            "Job: e, mode collective, replicas 5[5:5], elastic True");
}

TEST(PodConsoleTest, PodLine) {
  EXPECT_EQ(FormatPodLine("qhzkbw", 2, "ready"), "Pod: qhzkbw, replicas 2, status ready");
  EXPECT_EQ("Watching " + FormatPodLine("qhzkbw", 8, "running"),
            "Watching Pod: qhzkbw, replicas 8, status running");
}

TEST(PodConsoleTest, ReturnCodeIsPythons) {
  EXPECT_EQ(PythonReturnCode(ExitStatus::Exited(3)), 3);
  EXPECT_EQ(PythonReturnCode(ExitStatus::Exited(0)), 0);
  EXPECT_EQ(PythonReturnCode(ExitStatus::Killed(9)), -9);
  EXPECT_EQ(PythonReturnCode(ExitStatus::Killed(15)), -15);
}

TEST(PodConsoleTest, ContainerLineQuotesTheCommandAsAPythonList) {
  EXPECT_EQ(FormatContainerLine(1, "failed", {"/usr/bin/python3", "-u", "train.py", "--lr=0.1"}, -9,
                                "log/workerlog.1"),
            "Container rank 1 status failed cmd ['/usr/bin/python3', '-u', 'train.py', "
            "'--lr=0.1'] code -9 log log/workerlog.1");
}

TEST(PodConsoleTest, ConfigurationIsLoggedBetweenPaddlesRules) {
  LaunchOptions options;
  options.gpus = "0,1";
  options.training_script = "train.py";
  options.given.insert("nnodes");
  options.nnodes = "1";
  const std::vector<std::string> lines = ConfigurationLogLines(options);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines.front(), "-----------  Configuration  ----------------------");
  EXPECT_EQ(lines.back(), std::string(50, '-'));
  // Sorted by name, today's options among them; --devices is shown under its own name too.
  const std::vector<std::string> body(lines.begin() + 1, lines.end() - 1);
  EXPECT_TRUE(std::is_sorted(body.begin(), body.end()));
  EXPECT_NE(std::find(body.begin(), body.end(), "devices: 0,1"), body.end());
  EXPECT_NE(std::find(body.begin(), body.end(), "nnodes: 1"), body.end());
  EXPECT_NE(std::find(body.begin(), body.end(), "training_script: train.py"), body.end());
  // The job id in force, as Paddle's default shows it (the legacy dump keeps None).
  EXPECT_NE(std::find(body.begin(), body.end(), "job_id: default"), body.end());
}

TEST(PodConsoleTest, ConfigurationShowsAGivenJobId) {
  LaunchOptions options;
  options.training_script = "train.py";
  options.given.insert("job_id");
  options.job_id = "j1";
  const std::vector<std::string> lines = ConfigurationLogLines(options);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "job_id: j1"), lines.end());
}

}  // namespace
}  // namespace pdlaunch
