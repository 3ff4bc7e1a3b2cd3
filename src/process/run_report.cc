#include "pdlaunch/process/run_report.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "pdlaunch/base/json_lossless.h"

namespace pdlaunch {
namespace {

using Json = nlohmann::ordered_json;

Json TimeOrNull(double epoch_seconds) {
  return epoch_seconds > 0 ? Json(IsoTime(epoch_seconds)) : Json(nullptr);
}

Json StatusJson(const std::optional<ExitStatus>& status) {
  if (!status) return nullptr;
  Json out;
  out["exit_code"] = status->signaled ? Json(nullptr) : Json(status->value);
  out["signal"] = status->signaled ? Json(SignalName(status->value)) : Json(nullptr);
  out["shell_code"] = status->ShellCode();
  return out;
}

}  // namespace

std::string IsoTime(double epoch_seconds) {
  // Rounded half away from zero, as std::llround, which was the launcher's only use of libm:
  // without it the dynamic loader maps one library fewer on every job's start.
  const double exact_millis = epoch_seconds * 1000;
  const auto total_millis =
      static_cast<long long>(exact_millis < 0 ? exact_millis - 0.5 : exact_millis + 0.5);
  const auto whole = static_cast<std::time_t>(total_millis / 1000);
  const int millis = static_cast<int>(total_millis % 1000);
  std::tm utc{};
  ::gmtime_r(&whole, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, millis);
}

std::string FormatRunReport(const RunReport& report) {
  Json out;
  out["report_version"] = 1;
  out["launcher"] = {{"name", "pdlaunch"}, {"version", report.version}};
  out["command_line"] = report.command_line;
  out["host"] = report.host;
  out["mode"] = report.mode.empty() ? Json(nullptr) : Json(report.mode);
  out["launch_path"] = report.launch_path.empty() ? Json(nullptr) : Json(report.launch_path);
  out["node_rank"] = report.node_rank >= 0 ? Json(report.node_rank) : Json(nullptr);
  out["nodes"] = report.nodes > 0 ? Json(report.nodes) : Json(nullptr);
  out["start_time"] = TimeOrNull(report.start_time);
  out["end_time"] = TimeOrNull(report.end_time);
  out["exit_code"] = report.exit_code;
  out["reason"] = report.reason;
  out["signal"] = report.signal ? Json(SignalName(*report.signal)) : Json(nullptr);
  Json cause = nullptr;
  if (report.root_cause && *report.root_cause < report.processes.size()) {
    const ProcessRecord& p = report.processes[*report.root_cause];
    cause = {{"host", report.host}, {"role", p.role},         {"rank", p.rank},
             {"pid", p.pid},        {"log_path", p.log_path}, {"status", StatusJson(p.status)}};
  }
  out["root_cause"] = cause;
  Json processes = Json::array();
  for (const ProcessRecord& p : report.processes) {
    processes.push_back({{"role", p.role},
                         {"rank", p.rank},
                         {"local_rank", p.local_rank},
                         {"pid", p.pid},
                         {"endpoint", p.endpoint.empty() ? Json(nullptr) : Json(p.endpoint)},
                         {"devices", p.devices.empty() ? Json(nullptr) : Json(p.devices)},
                         {"log_path", p.log_path.empty() ? Json(nullptr) : Json(p.log_path)},
                         {"start_time", TimeOrNull(p.start_time)},
                         {"end_time", TimeOrNull(p.end_time)},
                         {"status", StatusJson(p.status)}});
    if (!p.job_id.empty()) processes.back()["job_id"] = p.job_id;
  }
  out["processes"] = std::move(processes);
  if (!report.device_usage.empty()) {
    Json usage = Json::array();
    for (const auto& d : report.device_usage) {
      usage.push_back({{"index", d.index},
                       {"peak_memory_used_mib", d.peak_memory_used_mib},
                       {"mean_utilization_percent", d.mean_utilization_percent},
                       {"samples", d.samples}});
    }
    out["device_usage"] = std::move(usage);
  }
  // Arguments need not be UTF-8: replace what is not, never throw.
  return DumpLossless(out, 2) + "\n";  // Every byte of the arguments (docs/report.md).
}

}  // namespace pdlaunch
