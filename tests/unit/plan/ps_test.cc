#include "pdlaunch/plan/ps.h"

#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/plan/messages.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;

/// Builds LaunchOptions as the CLI would: each setter also records the flag as given.
class Args {
 public:
  Args& ServerNum(int n) { return Set(&LaunchOptions::server_num, n, "server_num"); }
  Args& WorkerNum(int n) { return Set(&LaunchOptions::worker_num, n, "worker_num"); }
  Args& Servers(std::string v) { return Set(&LaunchOptions::servers, v, "servers"); }
  Args& Workers(std::string v) { return Set(&LaunchOptions::workers, v, "workers"); }
  Args& HeterWorkers(std::string v) {
    return Set(&LaunchOptions::heter_workers, v, "heter_workers");
  }
  Args& HeterDevices(std::string v) {
    return Set(&LaunchOptions::heter_devices, v, "heter_devices");
  }
  Args& HeterWorkerNum(std::string v) {
    return Set(&LaunchOptions::heter_worker_num, v, "heter_worker_num");
  }
  Args& HttpPort(int v) { return Set(&LaunchOptions::http_port, v, "http_port"); }
  Args& Ips(std::string v) { return Set(&LaunchOptions::ips, v, "ips"); }
  Args& Host(std::string v) { return Set(&LaunchOptions::host, v, "host"); }
  Args& RunMode(std::string v) { return Set(&LaunchOptions::run_mode, v, "run_mode"); }
  Args& Backend(std::string v) { return Set(&LaunchOptions::backend, v, "backend"); }
  Args& Nproc(int v) { return Set(&LaunchOptions::nproc_per_node, v, "nproc_per_node"); }
  Args& Gpus(std::string v) { return Set(&LaunchOptions::gpus, v, "gpus"); }
  Args& StartPort(int v) { return Set(&LaunchOptions::start_port, v, "start_port"); }
  Args& Script(std::vector<std::string> args) {
    options_.training_script = "train.py";
    options_.training_script_args = std::move(args);
    return *this;
  }
  operator const LaunchOptions&() const { return options_; }

 private:
  template <typename Field, typename Value>
  Args& Set(Field LaunchOptions::*field, Value value, const char* dest) {
    options_.*field = std::move(value);
    options_.given.insert(dest);
    return *this;
  }
  LaunchOptions options_;
};

DevicePlan Gpus(std::vector<int> ids) {
  DevicePlan plan;
  plan.family = GpuFamily();
  plan.mode = DeviceMode::kGpu;
  plan.backend = "nccl";
  for (int id : ids) plan.devices_per_proc.push_back({id});
  return plan;
}

/// Inputs with free ports 41000.. (no start port), a CPU device plan and a fixed gloo dir.
PsInputs Inputs(const LaunchOptions& options, JobMode mode = JobMode::kPs) {
  PsInputs inputs;
  inputs.options = options;
  inputs.mode = mode;
  for (int port = 41000; port < 41010; ++port) inputs.free_ports.push_back(port);
  inputs.job = JobEnv{"/tmp/gloo", "0", "/job/log"};
  return inputs;
}

PsInputs Fixed(const LaunchOptions& options, int start, JobMode mode = JobMode::kPs) {
  PsInputs inputs = Inputs(options, mode);
  inputs.start_port = start;
  inputs.free_ports.clear();
  return inputs;
}

std::string Value(const EnvList& env, const std::string& name) {
  for (const auto& [key, value] : env) {
    if (key == name) return value;
  }
  return "<unset>";
}

std::vector<std::string> Names(const EnvList& env) {
  std::vector<std::string> names;
  for (const auto& entry : env) names.push_back(entry.first);
  return names;
}

std::vector<std::string> LogNames(const PsPlan& plan) {
  std::vector<std::string> names;
  for (const PsProcess& p : plan.processes) names.push_back(p.log_name);
  return names;
}

std::string PlanError(const PsInputs& inputs) {
  return ErrorOf<UsageError>([&] { PlanPs(inputs); });
}

// --- Mode selection -----------------------------------------------------------------------------

TEST(PsModeTest, NoFlagsIsCollective) {
  EXPECT_EQ(SelectMode(LaunchOptions{}), JobMode::kCollective);
}

TEST(PsModeTest, ServerNumSelectsPs) { EXPECT_EQ(SelectMode(Args().ServerNum(2)), JobMode::kPs); }

TEST(PsModeTest, HttpPortAloneSelectsPs) {
  EXPECT_EQ(SelectMode(Args().HttpPort(9000)), JobMode::kPs);
}

TEST(PsModeTest, HeterWorkersSelectPsHeter) {
  EXPECT_EQ(SelectMode(Args().ServerNum(1).WorkerNum(1).HeterWorkers("127.0.0.1:1")),
            JobMode::kPsHeter);
}

TEST(PsModeTest, HeterDevicesAloneSelectPsHeter) {
  EXPECT_EQ(SelectMode(Args().HeterDevices("gpu")), JobMode::kPsHeter);
}

TEST(PsModeTest, RunModeDecidesWithoutFlags) {
  EXPECT_EQ(SelectMode(Args().RunMode("ps")), JobMode::kPs);
  EXPECT_EQ(SelectMode(Args().RunMode("ps-heter")), JobMode::kPsHeter);
  EXPECT_EQ(SelectMode(Args().RunMode("collective").Ips("10.0.0.1,10.0.0.2")),
            JobMode::kCollective);
}

TEST(PsModeTest, ScriptArgumentsAreNeverSearched) {
  EXPECT_EQ(SelectMode(Args().Script({"--servers", "127.0.0.1:1", "--worker_num", "2"})),
            JobMode::kCollective);
}

TEST(PsModeTest, GpusHostAndStartPortServeBothModes) {
  EXPECT_EQ(SelectMode(Args().Gpus("0,1").Host("10.0.0.1").StartPort(7000).ServerNum(1)),
            JobMode::kPs);
  EXPECT_EQ(SelectMode(Args().Gpus("0,1").Host("10.0.0.1")), JobMode::kCollective);
}

TEST(PsModeTest, BackendAutoIsNotCollectiveOnly) {
  EXPECT_EQ(SelectMode(Args().Backend("auto").ServerNum(1)), JobMode::kPs);
}

TEST(PsModeTest, IpsWithPsFlagIsUsageErrorNamingBoth) {
  EXPECT_EQ(ErrorOf<UsageError>([] { SelectMode(Args().Ips("10.0.0.1").Servers("a:1")); }),
            "Only one mode(Collective or Parameter-Server) can be selected at the same time, but "
            "more than one configuration was received: --ips and --servers");
}

TEST(PsModeTest, FirstPsFlagInPaddleOrderIsNamed) {
  EXPECT_EQ(ErrorOf<UsageError>([] { SelectMode(Args().Nproc(2).Servers("a:1").WorkerNum(2)); }),
            "Only one mode(Collective or Parameter-Server) can be selected at the same time, but "
            "more than one configuration was received: --nproc_per_node and --worker_num");
}

TEST(PsModeTest, ExplicitBackendWithPsFlagIsUsageError) {
  EXPECT_EQ(ErrorOf<UsageError>([] { SelectMode(Args().Backend("gloo").ServerNum(1)); }),
            "Only one mode(Collective or Parameter-Server) can be selected at the same time, but "
            "more than one configuration was received: --backend=gloo and --server_num");
}

TEST(PsModeTest, RunModeCollectiveWithPsFlagIsUsageError) {
  EXPECT_EQ(ErrorOf<UsageError>([] { SelectMode(Args().RunMode("collective").HttpPort(1)); }),
            "Only one mode(Collective or Parameter-Server) can be selected at the same time, but "
            "more than one configuration was received: --run_mode=collective and --http_port");
}

TEST(PsModeTest, RunModePsWithCollectiveFlagIsUsageError) {
  EXPECT_EQ(ErrorOf<UsageError>([] { SelectMode(Args().RunMode("ps").Ips("10.0.0.1")); }),
            "Only one mode(Collective or Parameter-Server) can be selected at the same time, but "
            "more than one configuration was received: --ips and --run_mode=ps");
}

TEST(PsModeTest, HeterFlagWithRunModePsIsUsageError) {
  EXPECT_EQ(ErrorOf<UsageError>(
                [] { SelectMode(Args().RunMode("ps").ServerNum(1).HeterWorkerNum("1")); }),
            "--heter_worker_num needs --run_mode=ps-heter, not --run_mode=ps");
}

TEST(PsModeTest, UnknownRunModeIsUsageError) {
  EXPECT_EQ(ErrorOf<UsageError>([] { SelectMode(Args().RunMode("cpuonly")); }),
            "argument --run_mode: invalid choice: 'cpuonly' (choose from 'collective', 'ps', "
            "'ps-heter', 'rpc')");
}

TEST(PsModeTest, GivenPsFlagsFollowPaddlesOrder) {
  EXPECT_EQ(
      GivenPsFlags(Args().HttpPort(1).Servers("a:1").ServerNum(1).HeterDevices("gpu")),
      (std::vector<std::string>{"--server_num", "--servers", "--heter_devices", "--http_port"}));
}

TEST(PsModeTest, ModeLineIsPaddles) {
  EXPECT_EQ(FormatPsModeLine(Args().ServerNum(2).WorkerNum(2), 4),
            "Run parameter-sever mode. pserver arguments:['--worker_num', '--server_num'], "
            "accelerators count:4");
}

// --- Ports needed -------------------------------------------------------------------------------

TEST(PsPortsTest, GeneratedListsNeedOnePortEachPlusHttp) {
  EXPECT_EQ(PsPortsNeeded(Args().ServerNum(2).WorkerNum(2), JobMode::kPs), 5);
}

TEST(PsPortsTest, ExplicitListsNeedOnlyTheHttpPort) {
  EXPECT_EQ(PsPortsNeeded(Args().Servers("127.0.0.1:1").Workers("127.0.0.1:2"), JobMode::kPs), 1);
}

TEST(PsPortsTest, ExplicitListsWithHttpPortNeedNone) {
  EXPECT_EQ(PsPortsNeeded(Args().Servers("a:1").Workers("a:2").HttpPort(9), JobMode::kPs), 0);
}

TEST(PsPortsTest, PortlessWorkersNeedNoGeneratedPort) {
  EXPECT_EQ(PsPortsNeeded(Args().Servers("a:1").Workers("a,b").HttpPort(9), JobMode::kPs), 0);
}

TEST(PsPortsTest, HeterStagesCountGeneratedAndPortlessItems) {
  const LaunchOptions options =
      Args().Servers("a:1").Workers("a:2").HeterWorkers("a,b;c:3").HeterDevices("gpu;cpu");
  EXPECT_EQ(PsPortsNeeded(options, JobMode::kPsHeter), 3);
  EXPECT_EQ(
      PsPortsNeeded(Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1;2").HeterDevices("gpu;gpu"),
                    JobMode::kPsHeter),
      6);
}

// --- Endpoints and ports ------------------------------------------------------------------------

TEST(PsPlanTest, StartPortExampleOfContract) {
  const PsPlan plan = PlanPs(Fixed(Args().ServerNum(2).WorkerNum(2), 6170));
  EXPECT_EQ(JoinEndpoints(plan.servers), "127.0.0.1:6170,127.0.0.1:6171");
  EXPECT_EQ(JoinEndpoints(plan.workers), "127.0.0.1:6172,127.0.0.1:6173");
  EXPECT_EQ(plan.http.ToString(), "127.0.0.1:6174");
  ASSERT_EQ(plan.processes.size(), 4u);
  EXPECT_EQ(Value(plan.processes[1].env, "PADDLE_PORT"), "6171");
  EXPECT_EQ(Value(plan.processes[1].env, "POD_IP"), "127.0.0.1");
  EXPECT_EQ(Value(plan.processes[3].env, "PADDLE_TRAINER_ID"), "1");
  EXPECT_EQ(Value(plan.processes[3].env, "PADDLE_PORT"), "6173");
}

TEST(PsPlanTest, FreePortsAreConsumedInRoleOrder) {
  const PsPlan plan = PlanPs(Inputs(Args().ServerNum(2).WorkerNum(2)));
  EXPECT_EQ(JoinEndpoints(plan.servers), "127.0.0.1:41000,127.0.0.1:41001");
  EXPECT_EQ(JoinEndpoints(plan.workers), "127.0.0.1:41002,127.0.0.1:41003");
  EXPECT_EQ(plan.http.ToString(), "127.0.0.1:41004");
}

TEST(PsPlanTest, StartPortOffsetsCountExplicitServers) {
  const PsPlan plan =
      PlanPs(Fixed(Args().Servers("127.0.0.1:5000,127.0.0.1:5001").WorkerNum(1), 7000));
  EXPECT_EQ(JoinEndpoints(plan.workers), "127.0.0.1:7002");
  EXPECT_EQ(plan.http.ToString(), "127.0.0.1:7003");
}

TEST(PsPlanTest, ExplicitListsOfPaddleTestKeepTheirPorts) {
  const PsPlan plan = PlanPs(Inputs(Args()
                                        .Servers("127.0.0.1:36000,127.0.0.1:36001")
                                        .Workers("127.0.0.1:36002,127.0.0.1:36003")));
  EXPECT_EQ(JoinEndpoints(plan.servers), "127.0.0.1:36000,127.0.0.1:36001");
  EXPECT_EQ(JoinEndpoints(plan.workers), "127.0.0.1:36002,127.0.0.1:36003");
  EXPECT_EQ(plan.http.ToString(), "127.0.0.1:41000");
  EXPECT_EQ(LogNames(plan),
            (std::vector<std::string>{"serverlog.0", "serverlog.1", "workerlog.0", "workerlog.1"}));
}

TEST(PsPlanTest, ServerNumWithMatchingServersUsesTheList) {
  const PsPlan plan = PlanPs(Inputs(Args().ServerNum(1).Servers("127.0.0.1:5000").WorkerNum(1)));
  EXPECT_EQ(JoinEndpoints(plan.servers), "127.0.0.1:5000");
  EXPECT_EQ(JoinEndpoints(plan.workers), "127.0.0.1:41000");
}

TEST(PsPlanTest, ListsAreStrippedAndRejoined) {
  const PsPlan plan =
      PlanPs(Inputs(Args().Servers(" 127.0.0.1:1 , 127.0.0.1:2").Workers("127.0.0.1:3 ")));
  EXPECT_EQ(Value(plan.processes[0].env, "PADDLE_PSERVERS_IP_PORT_LIST"),
            "127.0.0.1:1,127.0.0.1:2");
  EXPECT_EQ(Value(plan.processes[0].env, "PADDLE_TRAINER_ENDPOINTS"), "127.0.0.1:3");
}

TEST(PsPlanTest, ServerNumMismatchIsPaddlesError) {
  EXPECT_EQ(PlanError(Inputs(Args().ServerNum(3).Servers("a:1,a:2").WorkerNum(1))),
            "The server_num and servers doesn't match. Expect servers endpoints num epual to "
            "server_num, but received servers enpoint num: 2 and server_num 3");
}

TEST(PsPlanTest, WorkerNumMismatchIsPaddlesError) {
  EXPECT_EQ(PlanError(Inputs(Args().ServerNum(1).WorkerNum(1).Workers("a:1,a:2"))),
            "The worker_num and workers doesn't match. Expect workers endpoints num epual to "
            "worker_num, but received workers enpoint num: 2 and worker_num 1");
}

TEST(PsPlanTest, MissingServersIsPaddlesError) {
  EXPECT_EQ(PlanError(Inputs(Args().WorkerNum(2))),
            "The setting of Parameter-Server must has server_num or servers.");
}

TEST(PsPlanTest, MissingWorkersIsPaddlesError) {
  EXPECT_EQ(PlanError(Inputs(Args().ServerNum(2))),
            "The setting of Parameter-Server must has worker_num or workers.");
}

TEST(PsPlanTest, ZeroServerNumIsUsageError) {
  EXPECT_EQ(PlanError(Inputs(Args().ServerNum(0).WorkerNum(1))),
            "--server_num: '0' must be at least 1");
}

TEST(PsPlanTest, CountAboveThePortsOfAHostIsUsageError) {
  EXPECT_EQ(PlanError(Inputs(Args().ServerNum(1).WorkerNum(70000))),
            "--worker_num: '70000' is more than 65535, the ports a host has for its processes");
}

TEST(PsPlanTest, PortlessServerNamesFlagAndItem) {
  EXPECT_EQ(PlanError(Inputs(Args().Servers("10.0.0.1").WorkerNum(1))),
            "--servers: '10.0.0.1' is not an endpoint (expected host:port)");
}

TEST(PsPlanTest, BadServerPortNamesFlagAndItem) {
  EXPECT_EQ(PlanError(Inputs(Args().Servers("127.0.0.1:abc").WorkerNum(1))),
            "--servers: port of endpoint '127.0.0.1:abc': 'abc' is not an integer");
}

TEST(PsPlanTest, EmptyWorkerItemIsUsageError) {
  EXPECT_EQ(PlanError(Inputs(Args().ServerNum(1).Workers("a:1,,a:2"))),
            "--workers: empty endpoint in 'a:1,,a:2'");
}

TEST(PsPlanTest, WorkersWithoutPortsGetPaddlesFixedPorts) {
  PsInputs inputs =
      Fixed(Args().Servers("10.0.0.1:6000,10.0.0.2:6000").Workers("10.0.0.1,10.0.0.2"), 9000);
  inputs.node.pod_ip = "10.0.0.1";
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(JoinEndpoints(plan.workers), "10.0.0.1:6172,10.0.0.2:6173");
  EXPECT_EQ(plan.http.ToString(), "10.0.0.1:9004");
}

TEST(PsPlanTest, MixedWorkerPortsAreUsageError) {
  EXPECT_EQ(PlanError(Inputs(Args().ServerNum(1).Workers("10.0.0.1:1,10.0.0.2"))),
            "--workers: '10.0.0.2' has no port but '10.0.0.1:1' has one; give every endpoint a "
            "port, or none");
}

TEST(PsPlanTest, HttpPortGoesOnTheFirstServersHost) {
  PsInputs inputs =
      Inputs(Args().Servers("10.0.0.2:1,10.0.0.1:1").Workers("10.0.0.1:2").HttpPort(9000));
  inputs.node.pod_ip = "10.0.0.1";
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(plan.http.ToString(), "10.0.0.2:9000");
  EXPECT_EQ(Value(plan.processes[0].env, "PADDLE_GLOO_HTTP_ENDPOINT"), "10.0.0.2:9000");
}

TEST(PsPlanTest, HttpPortOutOfRangeIsUsageError) {
  EXPECT_EQ(PlanError(Inputs(Args().ServerNum(1).WorkerNum(1).HttpPort(70000))),
            "--http_port: '70000' must be between 1 and 65535");
}

TEST(PsPlanTest, EndpointUsedTwiceIsUsageError) {
  EXPECT_EQ(PlanError(Inputs(Args().Servers("127.0.0.1:6170").Workers("127.0.0.1:6170"))),
            "endpoint 127.0.0.1:6170 is used twice: by server 0 and by worker 0");
}

TEST(PsPlanTest, HttpPortOnAServerIsUsageError) {
  EXPECT_EQ(PlanError(Inputs(
                Args().Servers("127.0.0.1:1,127.0.0.1:2").Workers("127.0.0.1:3").HttpPort(1))),
            "endpoint 127.0.0.1:1 is used twice: by server 0 and by the gloo HTTP endpoint");
}

TEST(PsPlanTest, GeneratedPortBeyondRangeIsUsageError) {
  EXPECT_EQ(PlanError(Fixed(Args().ServerNum(2).WorkerNum(1), 65534)),
            "generated port 65536 (start port 65534 + 2) is not a port number");
}

TEST(PsPlanTest, TooFewFreePortsIsLaunchError) {
  PsInputs inputs = Inputs(Args().ServerNum(2).WorkerNum(2));
  inputs.free_ports = {41000, 41001, 41002, 41003};
  EXPECT_EQ(ErrorOf<LaunchError>([&] { PlanPs(inputs); }),
            "parameter-server planning needs more than the 4 free ports reserved");
}

// --- Environment per role -----------------------------------------------------------------------

TEST(PsEnvTest, ServerTableIsPaddles) {
  const PsPlan plan = PlanPs(Fixed(Args().ServerNum(2).WorkerNum(2), 6170));
  const EnvList expected = {{"PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:6170,127.0.0.1:6171"},
                            {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6172,127.0.0.1:6173"},
                            {"PADDLE_PORT", "6170"},
                            {"TRAINING_ROLE", "PSERVER"},
                            {"PADDLE_TRAINERS_NUM", "2"},
                            {"POD_IP", "127.0.0.1"},
                            {"PADDLE_WITH_GLOO", "0"},
                            {"PADDLE_GLOO_RENDEZVOUS", "3"},
                            {"PADDLE_GLOO_FS_PATH", "/tmp/gloo"},
                            {"PADDLE_GLOO_HTTP_ENDPOINT", "127.0.0.1:6174"}};
  EXPECT_EQ(plan.processes.at(0).env, expected);
}

TEST(PsEnvTest, WorkerTableIsPaddles) {
  const PsPlan plan = PlanPs(Fixed(Args().ServerNum(2).WorkerNum(2), 6170));
  const EnvList expected = {{"PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:6170,127.0.0.1:6171"},
                            {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6172,127.0.0.1:6173"},
                            {"PADDLE_TRAINERS_NUM", "2"},
                            {"TRAINING_ROLE", "TRAINER"},
                            {"POD_IP", "127.0.0.1"},
                            {"PADDLE_PORT", "6173"},
                            {"PADDLE_TRAINER_ID", "1"},
                            {"PADDLE_WITH_GLOO", "0"},
                            {"PADDLE_GLOO_RENDEZVOUS", "3"},
                            {"PADDLE_GLOO_FS_PATH", "/tmp/gloo"},
                            {"FLAGS_selected_gpus", "0"},
                            {"FLAGS_selected_xpus", "0"},
                            {"CUDA_VISIBLE_DEVICES", "0"},
                            {"XPU_VISIBLE_DEVICES", "0"},
                            {"PADDLE_GLOO_HTTP_ENDPOINT", "127.0.0.1:6174"}};
  EXPECT_EQ(plan.processes.at(3).env, expected);
}

TEST(PsEnvTest, LaunchersWithGlooIsPassedOn) {
  PsInputs inputs = Inputs(Args().ServerNum(1).WorkerNum(1));
  inputs.job.with_gloo = "1";
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(Value(plan.processes[0].env, "PADDLE_WITH_GLOO"), "1");
  EXPECT_EQ(Value(plan.processes[1].env, "PADDLE_WITH_GLOO"), "1");
}

TEST(PsEnvTest, PlainPsHasNoHeterVariables) {
  const PsPlan plan = PlanPs(Inputs(Args().ServerNum(1).WorkerNum(1)));
  for (const PsProcess& p : plan.processes) {
    EXPECT_EQ(Value(p.env, "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST"), "<unset>");
    EXPECT_EQ(Value(p.env, "STAGE_ID"), "<unset>");
  }
}

// --- Heter stages -------------------------------------------------------------------------------

// Paddle's test_fleet_launch_ps.sh heter run: servers base+4, base+5, workers base+6, base+7,
// heter workers base+8, base+9 (docs/design.md, "Paddle's own launcher tests"), base = 36000.
LaunchOptions PaddleHeterTest() {
  return Args()
      .Servers("127.0.0.1:36004,127.0.0.1:36005")
      .Workers("127.0.0.1:36006,127.0.0.1:36007")
      .HeterWorkers("127.0.0.1:36008,127.0.0.1:36009")
      .HeterDevices("gpu")
      .HeterWorkerNum("2");
}

TEST(PsHeterTest, PaddleTestLayout) {
  const PsPlan plan = PlanPs(Inputs(PaddleHeterTest(), JobMode::kPsHeter));
  ASSERT_EQ(plan.heter_stages.size(), 1u);
  EXPECT_EQ(JoinEndpoints(plan.heter_stages[0]), "127.0.0.1:36008,127.0.0.1:36009");
  EXPECT_EQ(plan.stage_devices, (std::vector<std::string>{"cpu", "gpu"}));
  EXPECT_EQ(plan.http.ToString(), "127.0.0.1:41000");
  EXPECT_EQ(LogNames(plan), (std::vector<std::string>{"serverlog.0", "serverlog.1", "workerlog.0",
                                                      "workerlog.1", "heterlog.0", "heterlog.1"}));
}

TEST(PsHeterTest, ServerTableAddsAllHeterList) {
  const PsPlan plan = PlanPs(Inputs(PaddleHeterTest(), JobMode::kPsHeter));
  EXPECT_EQ(Names(plan.processes.at(0).env),
            (std::vector<std::string>{"PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ENDPOINTS",
                                      "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", "PADDLE_PORT",
                                      "TRAINING_ROLE", "PADDLE_TRAINERS_NUM", "POD_IP",
                                      "PADDLE_WITH_GLOO", "PADDLE_GLOO_RENDEZVOUS",
                                      "PADDLE_GLOO_FS_PATH", "PADDLE_GLOO_HTTP_ENDPOINT"}));
  EXPECT_EQ(Value(plan.processes[0].env, "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST"),
            "127.0.0.1:36008,127.0.0.1:36009");
}

TEST(PsHeterTest, WorkerTableIsPaddles) {
  const PsPlan plan = PlanPs(Inputs(PaddleHeterTest(), JobMode::kPsHeter));
  const EnvList expected = {
      {"PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:36004,127.0.0.1:36005"},
      {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:36006,127.0.0.1:36007"},
      {"PADDLE_TRAINERS_NUM", "2"},
      {"PADDLE_STAGE_TRAINERS_NUM", "[2, 2]"},
      {"STAGE_ID", "1"},
      {"STAGE_NUM", "2"},
      {"PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST", ""},
      {"PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST", "127.0.0.1:36008,127.0.0.1:36009"},
      {"PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", "127.0.0.1:36008,127.0.0.1:36009"},
      {"HETER_DEVICE_TYPE", "cpu"},
      {"TRAINING_ROLE", "TRAINER"},
      {"POD_IP", "127.0.0.1"},
      {"PADDLE_PORT", "36006"},
      {"PADDLE_TRAINER_ID", "0"},
      {"PADDLE_WITH_GLOO", "0"},
      {"PADDLE_GLOO_RENDEZVOUS", "3"},
      {"PADDLE_GLOO_FS_PATH", "/tmp/gloo"},
      {"FLAGS_selected_gpus", "0"},
      {"FLAGS_selected_xpus", "0"},
      {"CUDA_VISIBLE_DEVICES", "0"},
      {"XPU_VISIBLE_DEVICES", "0"},
      {"PADDLE_GLOO_HTTP_ENDPOINT", "127.0.0.1:41000"}};
  EXPECT_EQ(plan.processes.at(2).env, expected);
}

TEST(PsHeterTest, HeterTableIsPaddles) {
  const PsPlan plan = PlanPs(Inputs(PaddleHeterTest(), JobMode::kPsHeter));
  const EnvList expected = {
      {"PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:36004,127.0.0.1:36005"},
      {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:36006,127.0.0.1:36007"},
      {"PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST", ""},
      {"PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST", "127.0.0.1:36006,127.0.0.1:36007"},
      {"PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", "127.0.0.1:36008,127.0.0.1:36009"},
      {"HETER_DEVICE_TYPE", "gpu"},
      {"STAGE_ID", "2"},
      {"STAGE_NUM", "2"},
      {"PADDLE_PORT", "36009"},
      {"TRAINING_ROLE", "HETER_TRAINER"},
      {"PADDLE_TRAINERS_NUM", "2"},
      {"PADDLE_STAGE_TRAINERS_NUM", "[2, 2]"},
      {"POD_IP", "127.0.0.1"},
      {"PADDLE_WITH_GLOO", "0"},
      {"PADDLE_GLOO_RENDEZVOUS", "3"},
      {"PADDLE_GLOO_FS_PATH", "/tmp/gloo"},
      {"FLAGS_selected_gpus", "0"},
      {"FLAGS_selected_xpus", "0"},
      {"CUDA_VISIBLE_DEVICES", "0"},
      {"XPU_VISIBLE_DEVICES", "0"},
      {"PADDLE_GLOO_HTTP_ENDPOINT", "127.0.0.1:41000"}};
  const PsProcess& heter = plan.processes.at(5);
  EXPECT_EQ(heter.role, PsRole::kHeterWorker);
  EXPECT_EQ(heter.global_id, 1);
  EXPECT_EQ(heter.local_index, 1);
  EXPECT_EQ(heter.env, expected);
}

TEST(PsHeterTest, GeneratedStagesFollowPaddlesOffsets) {
  const PsPlan plan =
      PlanPs(Fixed(Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1;2").HeterDevices("gpu;cpu"),
                   6000, JobMode::kPsHeter));
  EXPECT_EQ(JoinEndpoints(plan.servers), "127.0.0.1:6000");
  EXPECT_EQ(JoinEndpoints(plan.workers), "127.0.0.1:6001");
  ASSERT_EQ(plan.heter_stages.size(), 2u);
  EXPECT_EQ(JoinEndpoints(plan.heter_stages[0]), "127.0.0.1:6002");
  EXPECT_EQ(JoinEndpoints(plan.heter_stages[1]), "127.0.0.1:6003,127.0.0.1:6004");
  EXPECT_EQ(plan.http.ToString(), "127.0.0.1:6005");
}

TEST(PsHeterTest, MiddleStageSeesPreviousAndNextStage) {
  const PsPlan plan =
      PlanPs(Fixed(Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1;2").HeterDevices("gpu;cpu"),
                   6000, JobMode::kPsHeter));
  const PsProcess& middle = plan.processes.at(2);
  EXPECT_EQ(middle.stage, 2);
  EXPECT_EQ(Value(middle.env, "PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST"), "127.0.0.1:6001");
  EXPECT_EQ(Value(middle.env, "PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"),
            "127.0.0.1:6003,127.0.0.1:6004");
  EXPECT_EQ(Value(middle.env, "STAGE_NUM"), "3");
  EXPECT_EQ(Value(middle.env, "PADDLE_STAGE_TRAINERS_NUM"), "[1, 1, 2]");
  const PsProcess& last = plan.processes.at(4);
  EXPECT_EQ(last.stage, 3);
  EXPECT_EQ(last.log_name, "heterlog.2");
  EXPECT_EQ(Value(last.env, "HETER_DEVICE_TYPE"), "cpu");
  EXPECT_EQ(Value(last.env, "PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST"), "127.0.0.1:6002");
  EXPECT_EQ(Value(last.env, "PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"), "");
}

TEST(PsHeterTest, StagesFromListWithoutCounts) {
  const PsPlan plan = PlanPs(Inputs(Args()
                                        .ServerNum(1)
                                        .WorkerNum(1)
                                        .HeterWorkers("127.0.0.1:1;127.0.0.1:2,127.0.0.1:3")
                                        .HeterDevices("gpu;gpu"),
                                    JobMode::kPsHeter));
  ASSERT_EQ(plan.heter_stages.size(), 2u);
  EXPECT_EQ(JoinEndpoints(plan.heter_stages[1]), "127.0.0.1:2,127.0.0.1:3");
  EXPECT_EQ(Value(plan.processes.at(1).env, "PADDLE_STAGE_TRAINERS_NUM"), "[1, 1, 2]");
}

TEST(PsHeterTest, PortlessStageGetsGeneratedPorts) {
  const PsPlan plan = PlanPs(Fixed(Args()
                                       .Servers("127.0.0.1:1,127.0.0.1:2")
                                       .Workers("127.0.0.1:3,127.0.0.1:4")
                                       .HeterWorkers("127.0.0.1,127.0.0.1")
                                       .HeterDevices("gpu"),
                                   6000, JobMode::kPsHeter));
  EXPECT_EQ(JoinEndpoints(plan.heter_stages.at(0)), "127.0.0.1:6004,127.0.0.1:6005");
  EXPECT_EQ(plan.http.ToString(), "127.0.0.1:6006");
}

TEST(PsHeterTest, MissingDevicesIsPaddlesError) {
  EXPECT_EQ(
      PlanError(Inputs(Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1"), JobMode::kPsHeter)),
      "The setting of Parameter-Server heter mode must has heter_devices.");
}

TEST(PsHeterTest, MissingCountsAndListIsPaddlesError) {
  EXPECT_EQ(
      PlanError(Inputs(Args().ServerNum(1).WorkerNum(1).HeterDevices("gpu"), JobMode::kPsHeter)),
      "The setting of Parameter-Server heter mode must has heter_worker_num or heter_workers.");
}

TEST(PsHeterTest, StageCountMismatchIsPaddlesError) {
  EXPECT_EQ(PlanError(Inputs(Args()
                                 .ServerNum(1)
                                 .WorkerNum(1)
                                 .HeterWorkerNum("1;1")
                                 .HeterWorkers("127.0.0.1:1")
                                 .HeterDevices("gpu;gpu"),
                             JobMode::kPsHeter)),
            "The stage_num and heter_workers doesn't match. Expect heter_workers endpoints stage "
            "num epual to heter_worker_num stage, but received heter_workers enpoint stage num: 1 "
            "and heter_worker_num stage 2");
}

TEST(PsHeterTest, PerStageCountMismatchIsPaddlesError) {
  EXPECT_EQ(PlanError(Inputs(Args()
                                 .ServerNum(1)
                                 .WorkerNum(1)
                                 .HeterWorkerNum("1;1")
                                 .HeterWorkers("127.0.0.1:1;127.0.0.1:2,127.0.0.1:3")
                                 .HeterDevices("gpu;gpu"),
                             JobMode::kPsHeter)),
            "The heter trainer num in stage 1 is not equal in args.heter_worker_num and "
            "args.heter_workers");
}

TEST(PsHeterTest, NonIntegerStageCountIsUsageError) {
  EXPECT_EQ(PlanError(Inputs(
                Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1;x").HeterDevices("gpu;gpu"),
                JobMode::kPsHeter)),
            "--heter_worker_num: 'x' is not an integer");
}

TEST(PsHeterTest, TooFewStageDevicesIsUsageError) {
  EXPECT_EQ(
      PlanError(Inputs(Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1;1").HeterDevices("gpu"),
                       JobMode::kPsHeter)),
      "--heter_devices=gpu names 1 stage device(s) for 2 heter stages");
}

TEST(PsHeterTest, StageDevicesArePaddlesHeterDeviceTypes) {
  EXPECT_EQ(PlanError(Inputs(
                Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1;1").HeterDevices("gpu;gpux"),
                JobMode::kPsHeter)),
            "--heter_devices: 'gpux' is not a heter device (cpu, gpu or xpu, any case)");
  EXPECT_EQ(
      PlanError(Inputs(Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1").HeterDevices("npu"),
                       JobMode::kPsHeter)),
      "--heter_devices: 'npu' is not a heter device (cpu, gpu or xpu, any case)");
  const PsPlan plan = PlanPs(
      Inputs(Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1;1;1").HeterDevices("GPU; xpu ;Cpu"),
             JobMode::kPsHeter));
  EXPECT_EQ(plan.stage_devices, (std::vector<std::string>{"cpu", "GPU", "xpu", "Cpu"}));
}

TEST(PsHeterTest, ExtraStageDevicesAreAWarning) {
  const PsPlan plan = PlanPs(
      Inputs(Args().ServerNum(1).WorkerNum(1).HeterWorkerNum("1").HeterDevices("gpu;cpu;xpu"),
             JobMode::kPsHeter));
  EXPECT_EQ(plan.stage_devices, (std::vector<std::string>{"cpu", "gpu"}));
  EXPECT_EQ(plan.warnings, (std::vector<std::string>{
                               "--heter_devices=gpu;cpu;xpu names 3 stage devices for 1 heter "
                               "stage(s); the last 2 are ignored"}));
}

TEST(PsHeterTest, MixedPortsInStageAreUsageError) {
  EXPECT_EQ(PlanError(Inputs(Args()
                                 .ServerNum(1)
                                 .WorkerNum(1)
                                 .HeterWorkers("127.0.0.1:5,127.0.0.1")
                                 .HeterDevices("gpu"),
                             JobMode::kPsHeter)),
            "--heter_workers: '127.0.0.1' has no port but '127.0.0.1:5' has one; give every "
            "endpoint a port, or none");
}

// --- Nodes and ranks ----------------------------------------------------------------------------

LaunchOptions TwoHosts() {
  return Args()
      .Servers("10.0.0.2:6000,10.0.0.1:6000")
      .Workers("10.0.0.1:6001,10.0.0.2:6001,10.0.0.1:6002,10.0.0.3:6001")
      .HttpPort(6100);
}

TEST(PsNodeTest, NodesInOrderOfFirstAppearance) {
  EXPECT_EQ(PsNodeIps(TwoHosts(), JobMode::kPs),
            (std::vector<std::string>{"10.0.0.2", "10.0.0.1", "10.0.0.3"}));
}

TEST(PsNodeTest, HeterHostsComeLast) {
  EXPECT_EQ(PsNodeIps(Args().Servers("b:1").Workers("a:1").HeterWorkers("c:1").HeterDevices("gpu"),
                      JobMode::kPsHeter),
            (std::vector<std::string>{"b", "a", "c"}));
}

TEST(PsNodeTest, ThisNodeFromPodIp) {
  PsInputs inputs = Inputs(TwoHosts());
  inputs.node.pod_ip = "10.0.0.1";
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(plan.node.node_index, 1);
  EXPECT_EQ(plan.node.how, "POD_IP");
  EXPECT_EQ(plan.info.front(),
            "This node is 10.0.0.1, node 1 of 3 of the parameter-server hosts (found by POD_IP)");
}

TEST(PsNodeTest, HostBeatsPodIp) {
  PsInputs inputs = Inputs(TwoHosts());
  inputs.options.host = "10.0.0.3";
  inputs.node.pod_ip = "10.0.0.1";
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(plan.node.node_index, 2);
  EXPECT_EQ(plan.node.how, "--host");
  EXPECT_EQ(LogNames(plan), (std::vector<std::string>{"workerlog.0"}));
}

TEST(PsNodeTest, ThisNodeFromLocalInterfaces) {
  PsInputs inputs = Inputs(TwoHosts());
  inputs.node.local_addresses = {"127.0.0.1", "10.0.0.2"};
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(plan.node.node_index, 0);
  EXPECT_EQ(plan.node.how, "local interface");
}

TEST(PsNodeTest, HostNameResolvedToPodIp) {
  PsInputs inputs = Inputs(Args().Servers("node-a:1").Workers("node-b:2").HttpPort(9));
  inputs.node.pod_ip = "10.0.0.2";
  inputs.node.resolved = {{"node-a", {"10.0.0.1"}}, {"node-b", {"10.0.0.2"}}};
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(plan.node.node_index, 1);
  ASSERT_EQ(plan.processes.size(), 1u);
  EXPECT_EQ(plan.processes[0].role, PsRole::kWorker);
}

TEST(PsNodeTest, SingleHostNeedsNoLookup) {
  const PsPlan plan = PlanPs(Inputs(Args().ServerNum(1).WorkerNum(1)));
  EXPECT_EQ(plan.node.node_ips, (std::vector<std::string>{"127.0.0.1"}));
  EXPECT_EQ(plan.node.how, "single host");
}

TEST(PsNodeTest, PodIpNotInListsIsLaunchError) {
  PsInputs inputs = Inputs(TwoHosts());
  inputs.node.pod_ip = "10.0.0.9";
  EXPECT_EQ(ErrorOf<LaunchError>([&] { PlanPs(inputs); }),
            "Can't find your local ip {10.0.0.9} in args.servers and args.workers ips: "
            "{['10.0.0.2', '10.0.0.1', '10.0.0.3']} (from POD_IP)");
}

TEST(PsNodeTest, NoLocalAddressInListsIsLaunchError) {
  PsInputs inputs = Inputs(TwoHosts());
  inputs.node.local_addresses = {"127.0.0.1", "10.0.0.9"};
  EXPECT_EQ(ErrorOf<LaunchError>([&] { PlanPs(inputs); }),
            "none of the parameter-server hosts ['10.0.0.2', '10.0.0.1', '10.0.0.3'] is an "
            "address of this node: local addresses are [127.0.0.1, 10.0.0.9]; pass --host or "
            "set POD_IP");
}

TEST(PsNodeTest, SeveralLocalAddressesInListsIsLaunchError) {
  PsInputs inputs = Inputs(TwoHosts());
  inputs.node.local_addresses = {"10.0.0.1", "10.0.0.3"};
  EXPECT_EQ(ErrorOf<LaunchError>([&] { PlanPs(inputs); }),
            "several parameter-server hosts of ['10.0.0.2', '10.0.0.1', '10.0.0.3'] are "
            "addresses of this node: [10.0.0.1, 10.0.0.3]; local addresses are [10.0.0.1, "
            "10.0.0.3]; pass --host or set POD_IP");
}

TEST(PsNodeTest, HeterNodeNotInListsIsAnErrorNotASilentExit) {
  PsInputs inputs = Inputs(Args()
                               .Servers("10.0.0.1:1")
                               .Workers("10.0.0.2:1")
                               .HeterWorkers("10.0.0.3:1")
                               .HeterDevices("gpu"),
                           JobMode::kPsHeter);
  inputs.node.pod_ip = "10.0.0.4";
  EXPECT_EQ(ErrorOf<LaunchError>([&] { PlanPs(inputs); }),
            "Can't find your local ip {10.0.0.4} in args.servers and args.workers ips: "
            "{['10.0.0.1', '10.0.0.2', '10.0.0.3']} (from POD_IP)");
}

TEST(PsRankTest, InterleavedWorkerIdIsItsIndexInTrainerEndpoints) {
  PsInputs inputs = Inputs(TwoHosts());
  inputs.node.pod_ip = "10.0.0.1";
  const PsPlan plan = PlanPs(inputs);
  ASSERT_EQ(plan.processes.size(), 3u);
  const PsProcess& worker0 = plan.processes[1];
  const PsProcess& worker1 = plan.processes[2];
  EXPECT_EQ(worker0.global_id, 0);
  EXPECT_EQ(worker1.global_id, 2);
  EXPECT_EQ(worker1.local_index, 1);
  EXPECT_EQ(worker1.log_name, "workerlog.1");
  EXPECT_EQ(Value(worker1.env, "PADDLE_TRAINER_ID"), "2");
  EXPECT_EQ(Value(worker1.env, "PADDLE_TRAINER_ENDPOINTS"),
            "10.0.0.1:6001,10.0.0.2:6001,10.0.0.1:6002,10.0.0.3:6001");
  EXPECT_EQ(Value(worker1.env, "PADDLE_PORT"), "6002");
  EXPECT_EQ(Value(worker1.env, "PADDLE_TRAINERS_NUM"), "4");
}

TEST(PsRankTest, ServerIdIsItsIndexInServerList) {
  PsInputs inputs = Inputs(TwoHosts());
  inputs.node.pod_ip = "10.0.0.1";
  const PsPlan plan = PlanPs(inputs);
  const PsProcess& server = plan.processes.at(0);
  EXPECT_EQ(server.role, PsRole::kServer);
  EXPECT_EQ(server.global_id, 1);
  EXPECT_EQ(server.local_index, 0);
  EXPECT_EQ(server.log_name, "serverlog.0");
  EXPECT_EQ(server.device, "");
  EXPECT_EQ(Value(server.env, "PADDLE_GLOO_HTTP_ENDPOINT"), "10.0.0.2:6100");
}

TEST(PsRankTest, SpawnOrderIsServersWorkersHeterWorkers) {
  const PsPlan plan = PlanPs(Inputs(PaddleHeterTest(), JobMode::kPsHeter));
  std::vector<PsRole> roles;
  for (const PsProcess& p : plan.processes) roles.push_back(p.role);
  EXPECT_EQ(roles,
            (std::vector<PsRole>{PsRole::kServer, PsRole::kServer, PsRole::kWorker, PsRole::kWorker,
                                 PsRole::kHeterWorker, PsRole::kHeterWorker}));
}

// --- Devices ------------------------------------------------------------------------------------

TEST(PsDeviceTest, WorkerGetsPhysicalGpuOfCudaVisibleDevices) {
  PsInputs inputs = Inputs(Args().ServerNum(1).WorkerNum(2));
  inputs.devices = Gpus({0, 1});
  inputs.cuda_visible_devices = "4,5";
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(plan.processes.at(1).device, "4");
  EXPECT_EQ(Value(plan.processes[2].env, "CUDA_VISIBLE_DEVICES"), "5");
  EXPECT_EQ(Value(plan.processes[2].env, "XPU_VISIBLE_DEVICES"), "5");
  EXPECT_EQ(Value(plan.processes[2].env, "FLAGS_selected_gpus"), "0");
}

TEST(PsDeviceTest, SelectedGpusMapBackToPhysicalIds) {
  // --gpus=5,7 with CUDA_VISIBLE_DEVICES=4,5,6,7 resolves to logical ids 1,3.
  PsInputs inputs = Inputs(Args().ServerNum(1).WorkerNum(2).Gpus("5,7"));
  inputs.devices = Gpus({1, 3});
  inputs.cuda_visible_devices = "4,5,6,7";
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(plan.processes.at(1).device, "5");
  EXPECT_EQ(plan.processes.at(2).device, "7");
}

TEST(PsDeviceTest, GpusWithoutCudaVisibleDevicesAreUsedAsGiven) {
  PsInputs inputs = Inputs(Args().ServerNum(1).WorkerNum(2).Gpus("2,3"));
  inputs.devices = Gpus({2, 3});
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(plan.processes.at(1).device, "2");
  EXPECT_EQ(plan.processes.at(2).device, "3");
}

TEST(PsDeviceTest, NoGpuGivesDeviceZero) {
  const PsPlan plan = PlanPs(Inputs(Args().ServerNum(1).WorkerNum(2)));
  EXPECT_EQ(plan.processes.at(2).device, "0");
  EXPECT_TRUE(plan.warnings.empty());
}

TEST(PsDeviceTest, MoreWorkersThanGpusWrapAroundWithAWarning) {
  PsInputs inputs = Inputs(Args().ServerNum(1).WorkerNum(3));
  inputs.devices = Gpus({0, 1});
  const PsPlan plan = PlanPs(inputs);
  EXPECT_EQ(plan.processes.at(3).device, "0");
  EXPECT_EQ(
      plan.warnings,
      (std::vector<std::string>{"3 local workers share 2 GPU(s): CUDA_VISIBLE_DEVICES 0,1,0"}));
}

// --- Log lines ----------------------------------------------------------------------------------

TEST(PsInfoTest, FirstProcessOfEachRoleIsShownAndLogsAreNamed) {
  PsInputs inputs = Fixed(Args().ServerNum(2).WorkerNum(1), 6170);
  inputs.options.log_dir = "mylog";
  const PsPlan plan = PlanPs(inputs);
  ASSERT_EQ(plan.info.size(), 3u);
  EXPECT_EQ(plan.info[0],
            "Local server start 2 processes. First process distributed environment info (Only "
            "For Debug): " +
                FormatDistributedEnvs(plan.processes.at(0).env));
  EXPECT_EQ(plan.info[1],
            "Local worker start 1 processes. First process distributed environment info (Only "
            "For Debug): " +
                FormatDistributedEnvs(plan.processes.at(2).env));
  EXPECT_EQ(plan.info[2],
            "Please check servers, workers and heter_worker logs in mylog/workerlog.*, "
            "mylog/serverlog.* and mylog/heterlog.*");
}

TEST(PsInfoTest, HeterRoleLineUsesPaddlesName) {
  const PsPlan plan = PlanPs(Inputs(PaddleHeterTest(), JobMode::kPsHeter));
  ASSERT_EQ(plan.info.size(), 4u);
  EXPECT_EQ(plan.info[2].rfind("Local heter_worker start 2 processes. ", 0), 0u);
}

TEST(PsInfoTest, RoleNames) {
  EXPECT_EQ(PsRoleName(PsRole::kServer), "server");
  EXPECT_EQ(PsRoleName(PsRole::kWorker), "worker");
  EXPECT_EQ(PsRoleName(PsRole::kHeterWorker), "heter_worker");
}

}  // namespace
}  // namespace pdlaunch
