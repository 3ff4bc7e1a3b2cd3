#include "pdlaunch/process/pod_console.h"

#include <fmt/format.h>

#include "pdlaunch/cli/options.h"

namespace pdlaunch {

std::string FormatJobLine(std::string_view job_id, std::string_view mode, std::string_view nnodes) {
  if (nnodes.empty()) nnodes = "1";
  const size_t colon = nnodes.find(':');
  if (colon == std::string_view::npos) {
    return fmt::format("Job: {}, mode {}, replicas {}[{}:{}], elastic False", job_id, mode, nnodes,
                       nnodes, nnodes);
  }
  const std::string_view min = nnodes.substr(0, colon);
  const std::string_view max = nnodes.substr(colon + 1);
  return fmt::format("Job: {}, mode {}, replicas {}[{}:{}], elastic True", job_id, mode, max, min,
                     max);
}

std::string FormatPodLine(std::string_view name, int replicas, std::string_view status) {
  return fmt::format("Pod: {}, replicas {}, status {}", name, replicas, status);
}

int PythonReturnCode(const ExitStatus& status) {
  return status.signaled ? -status.value : status.value;
}

std::string FormatContainerLine(int local_index, std::string_view status,
                                const std::vector<std::string>& argv, int code,
                                std::string_view log_path) {
  return fmt::format("Container rank {} status {} cmd {} code {} log {}", local_index, status,
                     PythonListRepr(argv), code, log_path);
}

}  // namespace pdlaunch
