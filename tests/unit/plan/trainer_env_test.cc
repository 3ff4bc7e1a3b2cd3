#include "pdlaunch/plan/trainer_env.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "pdlaunch/base/errors.h"
#include "support/fake_device_probe.h"

namespace pdlaunch {
namespace {

using Strings = std::vector<std::string>;

// Builds the cluster the way the launcher does, from flags and a fake machine.
Cluster MakeCluster(const std::string& ips, const std::optional<std::string>& host,
                    const std::optional<std::string>& gpus, const std::optional<int>& nproc,
                    int gpu_count, const std::vector<int>& ports) {
  FakeDeviceProbe probe(gpu_count);
  const DevicePlan plan = ResolveDevices(gpus, nproc, "auto", {}, probe);
  const NodeIdentity node = ResolveNode(ips, host, NodeEnv{});
  return BuildCollectiveCluster(node, plan, ports, ports.back() + 1);
}

const Trainer& Local(const Cluster& cluster, size_t index) {
  return cluster.local_pod().trainers.at(index);
}

TEST(TrainerEnvTest, TableOfSingleNodeWithFourGpus) {
  const Cluster cluster = MakeCluster("127.0.0.1", std::nullopt, std::nullopt, std::nullopt, 4,
                                      {41000, 41001, 41002, 41003});
  EXPECT_EQ(TrainerTable(cluster, Local(cluster, 2)),
            (EnvList{{"PADDLE_TRAINER_ID", "2"},
                     {"PADDLE_CURRENT_ENDPOINT", "127.0.0.1:41002"},
                     {"PADDLE_TRAINERS_NUM", "4"},
                     {"PADDLE_TRAINER_ENDPOINTS",
                      "127.0.0.1:41000,127.0.0.1:41001,127.0.0.1:41002,127.0.0.1:41003"},
                     {"PADDLE_RANK_IN_NODE", "2"},
                     {"PADDLE_LOCAL_DEVICE_IDS", "2"},
                     {"PADDLE_WORLD_DEVICE_IDS", "0,1,2,3"},
                     {"FLAGS_selected_gpus", "2"},
                     {"FLAGS_selected_accelerators", "2"}}));
}

TEST(TrainerEnvTest, TableOfSecondNodeOfTwo) {
  const Cluster cluster =
      MakeCluster("10.0.0.1,10.0.0.2", "10.0.0.2", "0,1", std::nullopt, 2, {6070, 6071});
  EXPECT_EQ(TrainerTable(cluster, Local(cluster, 0)),
            (EnvList{{"PADDLE_TRAINER_ID", "2"},
                     {"PADDLE_CURRENT_ENDPOINT", "10.0.0.2:6070"},
                     {"PADDLE_TRAINERS_NUM", "4"},
                     {"PADDLE_TRAINER_ENDPOINTS",
                      "10.0.0.1:6070,10.0.0.1:6071,10.0.0.2:6070,10.0.0.2:6071"},
                     {"PADDLE_RANK_IN_NODE", "0"},
                     {"PADDLE_LOCAL_DEVICE_IDS", "0"},
                     {"PADDLE_WORLD_DEVICE_IDS", "0,1,0,1"},
                     {"FLAGS_selected_gpus", "0"},
                     {"FLAGS_selected_accelerators", "0"}}));
}

TEST(TrainerEnvTest, TableUsesFixedStartPort) {
  const Cluster cluster =
      MakeCluster("10.0.0.1,10.0.0.2", "10.0.0.2", "0,1", std::nullopt, 2, {7000, 7001});
  const EnvList table = TrainerTable(cluster, Local(cluster, 1));
  EXPECT_EQ(table.at(1),
            (std::pair<std::string, std::string>{"PADDLE_CURRENT_ENDPOINT", "10.0.0.2:7001"}));
  EXPECT_EQ(table.at(3).second, "10.0.0.1:7000,10.0.0.1:7001,10.0.0.2:7000,10.0.0.2:7001");
}

TEST(TrainerEnvTest, TableOfChunkedGpus) {
  const Cluster cluster = MakeCluster("127.0.0.1", std::nullopt, "0,1,2,3", 2, 4, {6070, 6071});
  const EnvList first = TrainerTable(cluster, Local(cluster, 0));
  const EnvList second = TrainerTable(cluster, Local(cluster, 1));
  EXPECT_EQ(first.at(5).second, "0,1");
  EXPECT_EQ(first.at(6).second, "0:1,2:3");
  EXPECT_EQ(first.at(7), (std::pair<std::string, std::string>{"FLAGS_selected_gpus", "0,1"}));
  EXPECT_EQ(second.at(5).second, "2,3");
  EXPECT_EQ(second.at(7), (std::pair<std::string, std::string>{"FLAGS_selected_gpus", "2,3"}));
  EXPECT_EQ(second.at(8),
            (std::pair<std::string, std::string>{"FLAGS_selected_accelerators", "2,3"}));
}

TEST(TrainerEnvTest, TableOfCpuTrainersHasNoSelectedFlags) {
  const Cluster cluster = MakeCluster("127.0.0.1", std::nullopt, std::nullopt, 2, 0, {6070, 6071});
  EXPECT_EQ(TrainerTable(cluster, Local(cluster, 1)),
            (EnvList{{"PADDLE_TRAINER_ID", "1"},
                     {"PADDLE_CURRENT_ENDPOINT", "127.0.0.1:6071"},
                     {"PADDLE_TRAINERS_NUM", "2"},
                     {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6070,127.0.0.1:6071"},
                     {"PADDLE_RANK_IN_NODE", "1"},
                     {"PADDLE_LOCAL_DEVICE_IDS", ""},
                     {"PADDLE_WORLD_DEVICE_IDS", ","}}));
}

TEST(TrainerEnvTest, VariablesAddJobNewLauncherAndTorchNames) {
  const Cluster cluster =
      MakeCluster("10.0.0.1,10.0.0.2", "10.0.0.2", "0,1", std::nullopt, 2, {6070, 6071});
  const JobEnv job{"/tmp/pdlaunch.x1", "0", "/work/log"};
  const EnvList vars = TrainerVariables(cluster, Local(cluster, 1), job);
  const EnvList table = TrainerTable(cluster, Local(cluster, 1));
  ASSERT_EQ(vars.size(), table.size() + 18);
  EXPECT_EQ(EnvList(vars.begin(), vars.begin() + static_cast<long>(table.size())), table);
  EXPECT_EQ(EnvList(vars.begin() + static_cast<long>(table.size()), vars.end()),
            (EnvList{{"PADDLE_WITH_GLOO", "0"},
                     {"PADDLE_GLOO_RENDEZVOUS", "3"},
                     {"PADDLE_GLOO_FS_PATH", "/tmp/pdlaunch.x1"},
                     {"PADDLE_DISTRI_BACKEND", "nccl"},
                     {"PADDLE_GLOBAL_RANK", "3"},
                     {"PADDLE_LOCAL_RANK", "1"},
                     {"PADDLE_GLOBAL_SIZE", "4"},
                     {"PADDLE_LOCAL_SIZE", "2"},
                     {"PADDLE_NNODES", "2"},
                     {"PADDLE_MASTER", "10.0.0.1:6072"},
                     {"PADDLE_LOG_DIR", "/work/log"},
                     {"RANK", "3"},
                     {"WORLD_SIZE", "4"},
                     {"LOCAL_RANK", "1"},
                     {"LOCAL_WORLD_SIZE", "2"},
                     {"MASTER_ADDR", "10.0.0.1"},
                     {"MASTER_PORT", "6072"},
                     {"PYTHONUNBUFFERED", "1"}}));
}

TEST(TrainerEnvTest, VariablesOfCpuJobNameGlooBackend) {
  const Cluster cluster = MakeCluster("127.0.0.1", std::nullopt, std::nullopt, 2, 0, {6070, 6071});
  const EnvList vars = TrainerVariables(cluster, Local(cluster, 0), JobEnv{"/tmp/g", "1", "log"});
  const auto find = [&](const std::string& name) {
    for (const auto& [key, value] : vars) {
      if (key == name) return value;
    }
    return std::string("<unset>");
  };
  EXPECT_EQ(find("PADDLE_DISTRI_BACKEND"), "gloo");
  EXPECT_EQ(find("PADDLE_WITH_GLOO"), "1");
  EXPECT_EQ(find("FLAGS_selected_gpus"), "<unset>");
  EXPECT_EQ(find("FLAGS_selected_accelerators"), "<unset>");
  EXPECT_EQ(find("PADDLE_WORLD_DEVICE_IDS"), ",");
  EXPECT_EQ(find("MASTER_PORT"), "6072");
}

// Issue #27: the legacy table of an XPU and of an NPU job, as Paddle's legacy launcher
// (fleet/launch_utils.py start_local_trainers: FLAGS_selected_xpus, FLAGS_selected_accelerators,
// PADDLE_LOCAL_DEVICE_IDS, PADDLE_WORLD_DEVICE_IDS) and today's (collective.py: the family's key,
// get_custom_device_envs).
TEST(TrainerEnvTest, XpuAndCustomDeviceJobsGetTheirFamilysKeys) {
  const auto cluster_of = [](DeviceFamily family) {
    DevicePlan plan;
    plan.family = family;
    plan.mode = family.mode;
    plan.backend = family.backend;
    plan.devices_per_proc = {{0}, {1}};
    return BuildCollectiveCluster(ResolveNode("127.0.0.1", std::nullopt, NodeEnv{}), plan,
                                  {6070, 6071}, 6072);
  };
  const Cluster xpu = cluster_of(XpuFamily());
  const EnvList xpu_table = TrainerTable(xpu, Local(xpu, 1));
  EXPECT_EQ(EnvList(xpu_table.end() - 4, xpu_table.end()),
            (EnvList{{"PADDLE_LOCAL_DEVICE_IDS", "1"},
                     {"PADDLE_WORLD_DEVICE_IDS", "0,1"},
                     {"FLAGS_selected_xpus", "1"},
                     {"FLAGS_selected_accelerators", "1"}}));
  const EnvList xpu_vars = TrainerVariables(xpu, Local(xpu, 1), JobEnv{"/tmp/g", "0", "log"});
  EXPECT_NE(std::find(xpu_vars.begin(), xpu_vars.end(),
                      std::pair<std::string, std::string>{"PADDLE_DISTRI_BACKEND", "bkcl"}),
            xpu_vars.end());
  const Cluster npu = cluster_of(CustomFamily("npu"));
  const EnvList npu_table = TrainerTable(npu, Local(npu, 0));
  EXPECT_EQ(EnvList(npu_table.end() - 3, npu_table.end()),
            (EnvList{{"FLAGS_selected_npus", "0"},
                     {"PADDLE_XCCL_BACKEND", "npu"},
                     {"FLAGS_selected_accelerators", "0"}}));
  const EnvList master = MasterTrainerVariables(npu, Local(npu, 0), MasterJobEnv{"pod", "/l", {}});
  const auto at = std::find_if(master.begin(), master.end(), [](const auto& kv) {
    return kv.first == "PADDLE_TRAINER_ENDPOINTS";
  });
  ASSERT_NE(at, master.end());
  EXPECT_EQ(EnvList(at + 1, at + 4), (EnvList{{"PADDLE_DISTRI_BACKEND", "xccl"},
                                              {"PADDLE_XCCL_BACKEND", "npu"},
                                              {"FLAGS_selected_npus", "0"}}));
}

TEST(TrainerEnvTest, ComposeRemovesProxyVariables) {
  EXPECT_EQ(ComposeEnvironment({"http_proxy=a", "PATH=/bin", "https_proxy=b", "HTTP_PROXY=c",
                                "HTTPS_PROXY=d", "no_proxy=e", "ALL_PROXY=f"},
                               {}),
            (Strings{"PATH=/bin", "no_proxy=e", "ALL_PROXY=f"}));
}

TEST(TrainerEnvTest, LowerCaseProxiesAreBackedUpAsPaddle3Does) {
  const Strings parent = WithProxyBackups(
      {"http_proxy=a", "PATH=/bin", "https_proxy=b", "HTTP_PROXY=c", "https_proxy_original=old"});
  EXPECT_EQ(parent, (Strings{"http_proxy=a", "PATH=/bin", "https_proxy=b", "HTTP_PROXY=c",
                             "https_proxy_original=old", "http_proxy_original=a"}));
  EXPECT_EQ(ComposeEnvironment(parent, {}),
            (Strings{"PATH=/bin", "https_proxy_original=old", "http_proxy_original=a"}));
  EXPECT_EQ(WithProxyBackups({"PATH=/bin"}), (Strings{"PATH=/bin"}));
}

TEST(TrainerEnvTest, ComposeReplacesParentValueInPlace) {
  EXPECT_EQ(ComposeEnvironment({"A=1", "PADDLE_TRAINER_ID=9", "B=2"}, {{"PADDLE_TRAINER_ID", "0"}}),
            (Strings{"A=1", "PADDLE_TRAINER_ID=0", "B=2"}));
}

TEST(TrainerEnvTest, ComposeAppendsNewNamesInGivenOrder) {
  EXPECT_EQ(ComposeEnvironment({"Z=1", "A=2"}, {{"RANK", "0"}, {"A", "3"}, {"LOCAL_RANK", "0"}}),
            (Strings{"Z=1", "A=3", "RANK=0", "LOCAL_RANK=0"}));
}

TEST(TrainerEnvTest, ComposeKeepsValuesContainingEquals) {
  EXPECT_EQ(ComposeEnvironment({"OPTS=a=b=c"}, {{"X", "k=v"}}), (Strings{"OPTS=a=b=c", "X=k=v"}));
}

TEST(TrainerEnvTest, ComposeLastSettingWinsAndParentDuplicatesCollapse) {
  EXPECT_EQ(ComposeEnvironment({"A=1", "B=2", "A=3"}, {{"A", "x"}, {"A", "y"}}),
            (Strings{"A=y", "B=2"}));
}

TEST(TrainerEnvTest, ComposeCanSetAProxyExplicitly) {
  EXPECT_EQ(ComposeEnvironment({"http_proxy=a"}, {{"http_proxy", "b"}}), (Strings{"http_proxy=b"}));
}

TEST(TrainerEnvTest, ComposeEnvironmentsSharesWhatTheParentDoesNotSet) {
  const Strings parent = {"PATH=/bin",  "A=1", "http_proxy=p", "HOME=/root", "B=2",
                          "PADDLE_X=9", "A=3", "C=4",          "OPTS=k=v"};
  const std::vector<EnvList> vars = {
      {{"A", "x"}, {"RANK", "0"}},
      {{"A", "y"}, {"B", "z"}, {"RANK", "1"}, {"A", "w"}},
      {},
      {{"http_proxy", "q"}, {"PADDLE_X", "1"}},
  };
  // The parent has names that processes set (a nested launch): replaced in place, so nothing
  // is shared and each process gets ComposeEnvironment's whole environment, order included.
  const SplitEnvironments split = ComposeEnvironments(parent, vars);
  ASSERT_TRUE(split.common);
  EXPECT_EQ(*split.common, Strings{});
  ASSERT_EQ(split.own.size(), vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    EXPECT_EQ(split.own[i], ComposeEnvironment(parent, vars[i])) << "process " << i;
  }
  // A parent without them: shared, the proxy left out, in the parent's order.
  const SplitEnvironments shared =
      ComposeEnvironments({"PATH=/bin", "http_proxy=p", "HOME=/root", "C=4"}, vars);
  EXPECT_EQ(*shared.common, (Strings{"PATH=/bin", "HOME=/root", "C=4"}));
  EXPECT_EQ(shared.own[1], (Strings{"A=w", "B=z", "RANK=1"}));
  EXPECT_EQ(shared.own[3], (Strings{"http_proxy=q", "PADDLE_X=1"}));
}

TEST(TrainerEnvTest, ComposeEnvironmentsEqualsComposeEnvironmentForEachProcess) {
  // Lists with the same names in the same order (the usual job), with repeated names, with
  // others mixed in, over parents that do and do not have some of the names.
  const std::vector<Strings> parents = {
      {}, {"PATH=/bin", "HOME=/h"}, {"PATH=/bin", "B=0", "http_proxy=p"}, {"A=9", "A=8"}};
  const std::vector<std::vector<EnvList>> jobs = {
      {{{"A", "1"}, {"B", "2"}, {"A", "3"}}, {{"A", "4"}, {"B", "5"}, {"A", "6"}}},
      {{{"A", "1"}, {"B", "2"}}, {{"B", "2"}, {"A", "1"}}, {{"A", "1"}}, {}},
      {{}, {{"C", "1"}}},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}}, {{"RANK", "1"}, {"WORLD_SIZE", "2"}}},
  };
  for (size_t p = 0; p < parents.size(); ++p) {
    for (size_t j = 0; j < jobs.size(); ++j) {
      SCOPED_TRACE("parent " + std::to_string(p) + ", job " + std::to_string(j));
      const SplitEnvironments split = ComposeEnvironments(parents[p], jobs[j]);
      ASSERT_EQ(split.own.size(), jobs[j].size());
      for (size_t i = 0; i < jobs[j].size(); ++i) {
        Strings whole = *split.common;
        whole.insert(whole.end(), split.own[i].begin(), split.own[i].end());
        EXPECT_EQ(whole, ComposeEnvironment(parents[p], jobs[j][i])) << "process " << i;
      }
    }
  }
  // Order within a process's own entries: first settings' order, last values.
  EXPECT_EQ(ComposeEnvironments({"PATH=/bin"}, {{{"A", "1"}, {"B", "2"}, {"A", "3"}}}).own[0],
            (Strings{"A=3", "B=2"}));
}

// Past about 8,000 ranks PADDLE_TRAINER_ENDPOINTS exceeds what execve takes for one variable,
// and every rank failed with "Argument list too long": said before anything starts.
TEST(EnvironmentSizeTest, AVariableTooLongForExecveIsNamedWithItsSizeAndWhereItBreaks) {
  const auto endpoints = [](int ranks) {
    std::string value;
    for (int i = 0; i < ranks; ++i) {
      value += (i ? "," : "") + std::string("10.0.") + std::to_string(i / 250) + "." +
               std::to_string(i % 250) + ":6070";
    }
    return "PADDLE_TRAINER_ENDPOINTS=" + value;
  };
  EXPECT_NO_THROW(CheckEnvironmentSizes({"A=1", endpoints(1000)}));
  const std::string fits(kMaxEnvEntryBytes - 1, 'x');  // With its NUL: exactly the bound.
  EXPECT_NO_THROW(CheckEnvironmentSizes({fits}));
  EXPECT_THROW(CheckEnvironmentSizes({fits + "x"}), LaunchError);
  try {
    CheckEnvironmentSizes({"A=1", endpoints(9600)});
    ADD_FAILURE() << "no error";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.exit_code(), 1);
    const std::string what = e.what();
    EXPECT_NE(what.find("PADDLE_TRAINER_ENDPOINTS would be 156434 bytes"), std::string::npos)
        << what;
    EXPECT_NE(what.find(" for a list of 9600 entries, which passes the bound at about 7709"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("Linux takes at most 131071 bytes for one environment variable"),
              std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace pdlaunch
