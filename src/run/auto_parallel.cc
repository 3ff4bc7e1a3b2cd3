#include "run/auto_parallel.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/small_file.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/process/job_controls.h"
#include "pdlaunch/process/supervisor.h"
#include "run/job_status.h"
#include "run/log_files.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxConfigBytes = 16 << 20;

/// Paddle's init container's variables (collective.py, _build_pod_with_tuner).
EnvList TunerStageVariables(const std::string& config, int port, int replicas, int nnodes,
                            const std::string& log_dir) {
  const std::string endpoint = fmt::format("127.0.0.1:{}", port);
  return {{"PADDLE_AUTO_PARALLEL_CONFIG", config},
          {"PADDLE_AUTO_PARALLEL_STAGE", "tuner"},
          {"PADDLE_TRAINERS_NUM", "1"},
          {"PADDLE_TRAINER_ID", "0"},
          {"PADDLE_TRAINER_ENDPOINTS", endpoint},
          {"PADDLE_CURRENT_ENDPOINT", endpoint},
          {"FLAGS_selected_gpus", "0"},
          {"PADDLE_GLOBAL_SIZE", std::to_string(replicas * nnodes)},
          {"PADDLE_LOCAL_SIZE", std::to_string(replicas)},
          {"PADDLE_LOG_DIR", log_dir}};
}

/// The stage as one supervised process; its exit code, 128 + n for a signal.
int RunTunerStage(const LaunchOptions& options, const TrainingCommand& command, int replicas,
                  int nnodes, RunReport& record) {
  const fs::path log_dir = PrepareLogDir(options.log_dir);
  const std::unique_ptr<PortReservation> port = MakeLockingPortAllocator()->Reserve(1);
  SupervisedProcess stage;
  stage.role_size = 1;
  stage.log_path = (log_dir / "tuner.log").string();
  stage.spec.executable = command.executable;
  stage.spec.argv = command.argv;
  stage.spec.env = ComposeEnvironment(
      ParentEnvironment(), TunerStageVariables(*options.auto_parallel_config, port->ports().front(),
                                               replicas, nnodes, log_dir.string()));
  stage.spec.output_path = stage.log_path;
  stage.spec.output_truncate = options.log_overwrite;
  PDLOG_INFO(
      "auto-parallel tuner stage: running {} once (PADDLE_AUTO_PARALLEL_STAGE=tuner), its output "
      "in {} (at most {:.0f} s)",
      options.training_script, stage.log_path, kTunerStageSeconds);
  SupervisorOptions supervisor;
  supervisor.grace_seconds = options.grace;
  ConsoleSettings console;
  console.say_completed = false;  // The job's processes have not started yet.
  supervisor.status = JobStatus(std::move(console), &record);
  JobDeadline deadline(kTunerStageSeconds, "the auto-parallel tuner stage reached its deadline");
  supervisor.external = &deadline;
  std::vector<SupervisedProcess> processes;
  processes.push_back(std::move(stage));
  const auto start = std::chrono::steady_clock::now();
  const SupervisorResult result = Supervise(std::move(processes), supervisor);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.signal) return result.exit_code;
  if (deadline.hit()) {
    PDLOG_ERROR("auto-parallel tuner stage stopped after {:.0f} s; the ranks are not started",
                seconds);
    return 1;
  }
  if (result.exit_code != 0) {
    // Paddle ignores it and starts the ranks on whatever the stage left.
    PDLOG_ERROR(
        "auto-parallel tuner stage failed with exit code {} (see {}/tuner.log); the ranks are "
        "not started",
        result.exit_code, options.log_dir);
    return result.exit_code;
  }
  PDLOG_INFO("auto-parallel tuner stage completed in {:.1f} s", seconds);
  return 0;
}

}  // namespace

std::string TunerRunMode(const std::string& path) {
  const std::optional<std::string> text = ReadSmallFile(path);
  if (!text || text->size() > kMaxConfigBytes) {
    throw LaunchError(fmt::format("--auto_parallel_config {}: cannot be read{}", path,
                                  text ? " (over 16 MiB)" : ""));
  }
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    throw LaunchError(fmt::format("--auto_parallel_config {}: not a JSON object", path));
  }
  const auto mode = json.find("tuner_run_mode");
  if (mode == json.end()) return "tuner_and_run";
  if (mode->is_string()) {
    std::string value = mode->get<std::string>();
    if (value == "tuner_and_run" || value == "tuner_only" || value == "run_only") return value;
  }
  throw LaunchError(fmt::format(
      "--auto_parallel_config {}: tuner_run_mode {} is not tuner_and_run, tuner_only or run_only",
      path, OneLine(mode->dump())));
}

std::optional<int> RunAutoParallelStages(const LaunchOptions& options,
                                         const TrainingCommand& command, int replicas, int nnodes,
                                         RunReport& record) {
  const std::string& config = *options.auto_parallel_config;
  const std::string mode = TunerRunMode(config);
  if (mode != "run_only") {
    const int code = RunTunerStage(options, command, replicas, nnodes, record);
    if (code != 0) return code;
    if (mode == "tuner_only") {
      PDLOG_INFO("tuner_run_mode tuner_only: the ranks are not started");
      return 0;
    }
  }
  // Every rank inherits them (Paddle sets both in each rank's environment).
  ::setenv("PADDLE_AUTO_PARALLEL_CONFIG", config.c_str(), 1);
  ::setenv("PADDLE_AUTO_PARALLEL_STAGE", "run", 1);
  return std::nullopt;
}

}  // namespace pdlaunch::internal
