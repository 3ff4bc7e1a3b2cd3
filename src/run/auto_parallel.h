#pragma once

// --auto_parallel_config (Paddle 3's collective controller, _build_pod_with_tuner): the training
// script once as the "tuner" stage, then the ranks as the "run" stage (docs/cli.md,
// "Auto-parallel stages"). Internal to src/.

#include <optional>
#include <string>

#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/training_command.h"
#include "pdlaunch/process/run_report.h"

namespace pdlaunch::internal {

/// The longest the tuner stage may run; past it, it is stopped and the job fails.
inline constexpr double kTunerStageSeconds = 3600;

/// The file's tuner_run_mode: "tuner_and_run" (the default), "tuner_only" or "run_only". Throws
/// LaunchError naming the file when it cannot be read, is not a JSON object, or the mode is
/// another value.
std::string TunerRunMode(const std::string& path);

/// Runs the tuner stage of `options.auto_parallel_config` when its mode asks for it: the
/// command once, with Paddle's stage variables (`replicas` processes on each of `nnodes` nodes),
/// its output in <log_dir>/tuner.log, under the supervisor (Ctrl-C, kTunerStageSeconds, nothing
/// left running). Then sets PADDLE_AUTO_PARALLEL_CONFIG and PADDLE_AUTO_PARALLEL_STAGE=run in
/// the launcher's environment, which every rank inherits. Returns the launcher's exit code when
/// the job ends here (tuner_only, the stage failed or was stopped), nullopt to go on. The stage's
/// process is recorded in `record` (--report).
std::optional<int> RunAutoParallelStages(const LaunchOptions& options,
                                         const TrainingCommand& command, int replicas, int nnodes,
                                         RunReport& record);

}  // namespace pdlaunch::internal
