#include "pdlaunch/plan/dry_run.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pdlaunch {
namespace {

TEST(DryRunTest, ClusterAndProcesses) {
  DryRunPlan plan;
  plan.mode = "collective";
  plan.launch_path = "ips";
  plan.device_mode = "gpu";
  Cluster cluster;
  cluster.backend = "nccl";
  cluster.master = Endpoint{"10.0.0.1", 6072};
  cluster.pods = {Pod{"10.0.0.1", 0, {Trainer{0, 0, Endpoint{"10.0.0.1", 6070}, {0, 1}}}}};
  plan.cluster = cluster;
  plan.command = {"python3", "-u", "train.py"};
  plan.processes.push_back({"trainer",
                            0,
                            0,
                            "workerlog.0",
                            {{"PADDLE_TRAINER_ID", "0"}, {"FLAGS_selected_gpus", "0,1"}}});
  const auto json = nlohmann::json::parse(FormatDryRun(plan));
  EXPECT_EQ(json["cluster"]["world_size"], 1);
  EXPECT_EQ(json["cluster"]["master"], "10.0.0.1:6072");
  EXPECT_EQ(json["cluster"]["pods"][0]["trainers"][0]["devices"], nlohmann::json({0, 1}));
  EXPECT_EQ(json["processes"][0]["env"]["FLAGS_selected_gpus"], "0,1");
  EXPECT_EQ(json["device_mode"], "gpu");
  EXPECT_EQ(json["processes"][0]["role"], "trainer");
  EXPECT_EQ(json["processes"][0]["log"], "workerlog.0");
  EXPECT_TRUE(json["ps"].is_null());
}

TEST(DryRunTest, ParameterServerJob) {
  DryRunPlan plan;
  plan.mode = "ps";
  plan.launch_path = "local";
  plan.device_mode = "cpu";
  plan.ps = DryRunPlan::PsJob{
      {"127.0.0.1:6170"}, {"127.0.0.1:6171", "127.0.0.1:6172"}, {}, "127.0.0.1:6173", {"127.0.0.1"},
      "127.0.0.1"};
  plan.processes.push_back({"server", 0, 0, "serverlog.0", {{"TRAINING_ROLE", "PSERVER"}}});
  plan.processes.push_back({"worker", 1, 1, "workerlog.1", {{"TRAINING_ROLE", "TRAINER"}}});
  const auto json = nlohmann::json::parse(FormatDryRun(plan));
  EXPECT_TRUE(json["cluster"].is_null());
  EXPECT_EQ(json["ps"]["servers"], nlohmann::json({"127.0.0.1:6170"}));
  EXPECT_EQ(json["ps"]["workers"][1], "127.0.0.1:6172");
  EXPECT_EQ(json["ps"]["gloo_http"], "127.0.0.1:6173");
  EXPECT_EQ(json["ps"]["this_host"], "127.0.0.1");
  EXPECT_EQ(json["processes"][0]["role"], "server");
  EXPECT_EQ(json["processes"][1]["log"], "workerlog.1");
  EXPECT_EQ(json["processes"][1]["rank"], 1);
  EXPECT_EQ(json["processes"][1]["env"]["TRAINING_ROLE"], "TRAINER");
}

TEST(DryRunTest, WithoutAClusterTheNotesSayWhy) {
  DryRunPlan plan;
  plan.mode = "collective";
  plan.launch_path = "master";
  plan.notes = {"the cluster is decided at the rendezvous"};
  const auto json = nlohmann::json::parse(FormatDryRun(plan));
  EXPECT_TRUE(json["cluster"].is_null());
  EXPECT_TRUE(json["processes"].is_null());
  EXPECT_TRUE(json["device_mode"].is_null());
  EXPECT_EQ(json["notes"][0], "the cluster is decided at the rendezvous");
}

}  // namespace
}  // namespace pdlaunch
