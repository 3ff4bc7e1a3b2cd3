#include "pdlaunch/base/nested_launch.h"

namespace pdlaunch {

std::string NestedMarkerEntry(int pid) {
  return std::string(kNestedMarker) + "=" + std::to_string(pid);
}

bool IsSetForRanks(std::string_view name) {
  return name == "PADDLE_MASTER" || name == "PADDLE_NNODES" || name == "PADDLE_LOG_DIR" ||
         name == "PADDLE_RANK" || name == "PADDLE_TRAINER_ID" || name == "PADDLE_JOB_ID" ||
         name == "PADDLE_AUTO_PARALLEL_CONFIG";
}

}  // namespace pdlaunch
