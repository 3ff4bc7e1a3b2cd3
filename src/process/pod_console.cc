#include "pdlaunch/process/pod_console.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include "pdlaunch/options/options.h"

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

namespace {

/// (name, value) in order of first setting, each with its last value.
std::vector<std::pair<std::string_view, std::string_view>> MergedEnv(
    const std::vector<std::string>* shared, const std::vector<std::string>& own) {
  std::vector<std::pair<std::string_view, std::string_view>> merged;
  std::map<std::string_view, size_t> at;
  const auto take = [&](const std::vector<std::string>& entries) {
    for (const std::string& entry : entries) {
      const size_t equals = std::min(entry.find('='), entry.size());
      const std::string_view name = std::string_view(entry).substr(0, equals);
      const std::string_view value =
          std::string_view(entry).substr(std::min(equals + 1, entry.size()));
      const auto [it, fresh] = at.emplace(name, merged.size());
      if (fresh) {
        merged.emplace_back(name, value);
      } else {
        merged[it->second].second = value;
      }
    }
  };
  if (shared != nullptr) take(*shared);
  take(own);
  return merged;
}

}  // namespace

std::string FormatEnvDict(const std::vector<std::string>* shared,
                          const std::vector<std::string>& own) {
  std::string text = "{";
  for (const auto& [name, value] : MergedEnv(shared, own)) {
    if (text.size() > 1) text += ", ";
    text += PythonStrRepr(std::string(name)) + ": " + PythonStrRepr(std::string(value));
  }
  return text + "}";
}

std::string FormatEnvLog(const std::vector<std::string>* shared,
                         const std::vector<std::string>& own) {
  auto merged = MergedEnv(shared, own);
  std::sort(merged.begin(), merged.end());
  std::string text;
  for (const auto& [name, value] : merged) {
    text.append(name).append(1, '=').append(value).append(1, '\n');
  }
  return text;
}

}  // namespace pdlaunch
