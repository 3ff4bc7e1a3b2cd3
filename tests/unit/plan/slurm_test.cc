#include "pdlaunch/plan/slurm.h"

#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

using Hosts = std::vector<std::string>;

std::string ErrorOf(const std::string& list) {
  try {
    ExpandHostlist(list);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(HostlistTest, SlurmsDocumentedShapes) {
  const std::vector<std::pair<std::string, Hosts>> table = {
      {"node1", {"node1"}},
      {"alpha,beta,gamma", {"alpha", "beta", "gamma"}},
      {"linux[1,2]", {"linux1", "linux2"}},
      {"tux[0,9-11]", {"tux0", "tux9", "tux10", "tux11"}},
      {"gpu[008-011]", {"gpu008", "gpu009", "gpu010", "gpu011"}},
      {"n[9-10]", {"n9", "n10"}},
      {"rack[1-2]-n[01-02]", {"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}},
      {"a,b[001,003],c", {"a", "b001", "b003", "c"}},
      {"my-node-[1-2].ib", {"my-node-1.ib", "my-node-2.ib"}},
      {" x[1-2] , y ", {"x1", "x2", "y"}},
  };
  for (const auto& [list, hosts] : table) EXPECT_EQ(ExpandHostlist(list), hosts) << list;
}

TEST(HostlistTest, MalformedListsAreNamed) {
  EXPECT_EQ(ErrorOf("linux[1"), "malformed Slurm hostlist 'linux[1': '[' without ']'");
  EXPECT_EQ(ErrorOf("linux1]"), "malformed Slurm hostlist 'linux1]': ']' without '['");
  EXPECT_EQ(ErrorOf("a,,b"), "malformed Slurm hostlist 'a,,b': an empty entry");
  EXPECT_EQ(ErrorOf("n[3-1]"), "malformed Slurm hostlist 'n[3-1]': range '3-1' runs backwards");
  EXPECT_EQ(ErrorOf("n[a-b]"),
            "malformed Slurm hostlist 'n[a-b]': 'a-b' is not a range of numbers");
  EXPECT_EQ(ErrorOf("n[]"), "malformed Slurm hostlist 'n[]': empty brackets");
  EXPECT_EQ(ErrorOf(""), "malformed Slurm hostlist '': empty");
}

EnvMap Step(int nodeid, const std::string& list = "node[01-16]") {
  return {{"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NODELIST", list},
          {"SLURM_NODEID", std::to_string(nodeid)},
          {"SLURM_STEP_NUM_NODES", "16"},
          {"SLURM_STEP_TASKS_PER_NODE", "1(x16)"}};
}

TEST(DetectSlurmStepTest, SixteenNodes) {
  const std::optional<SlurmStep> step = DetectSlurmStep(Step(5));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->nodes.size(), 16u);
  EXPECT_EQ(step->nodes[5], "node06");
  EXPECT_EQ(step->node_rank, 5);
  EXPECT_EQ(step->source, "SLURM_STEP_NODELIST");
}

TEST(DetectSlurmStepTest, OneAndTwoNodesAndTheJobList) {
  EnvMap one = {{"SLURM_STEP_ID", "3"}, {"SLURM_JOB_NODELIST", "solo"}, {"SLURM_NODEID", "0"}};
  EXPECT_EQ(DetectSlurmStep(one)->nodes, Hosts{"solo"});
  EXPECT_EQ(DetectSlurmStep(one)->source, "SLURM_JOB_NODELIST");
  EnvMap two = {{"SLURM_STEP_ID", "0"},
                {"SLURM_STEP_NODELIST", "a,b"},
                {"SLURM_NODEID", "1"},
                {"SLURM_NNODES", "2"}};
  EXPECT_EQ(DetectSlurmStep(two)->node_rank, 1);
}

TEST(DetectSlurmStepTest, OutsideAStepIsNotSlurm) {
  // A batch script: job variables, no step.
  EXPECT_FALSE(DetectSlurmStep({{"SLURM_JOB_NODELIST", "a,b"}, {"SLURM_NODEID", "0"}}));
  // The batch step's id is not numeric.
  EXPECT_FALSE(DetectSlurmStep({{"SLURM_STEP_ID", "batch"}, {"SLURM_JOB_NODELIST", "a,b"}}));
  EXPECT_FALSE(DetectSlurmStep({}));
}

TEST(DetectSlurmStepTest, MoreThanOneTaskPerNodeIsAnError) {
  EnvMap env = Step(0);
  env["SLURM_STEP_TASKS_PER_NODE"] = "4(x16)";
  EXPECT_THROW(DetectSlurmStep(env), LaunchError);
  env = Step(0);
  env["SLURM_LOCALID"] = "1";
  EXPECT_THROW(DetectSlurmStep(env), LaunchError);
  env = Step(16);  // SLURM_NODEID out of range.
  EXPECT_THROW(DetectSlurmStep(env), LaunchError);
  env = Step(0, "node[01-02]");  // 2 listed, 16 said.
  EXPECT_THROW(DetectSlurmStep(env), LaunchError);
}

}  // namespace
}  // namespace pdlaunch
