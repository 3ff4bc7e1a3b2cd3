// What --report records of a supervised run, from the supervisor's events.
#include "pdlaunch/process/report_status.h"

#include <string_view>

#include "pdlaunch/process/report_file.h"
#include "pdlaunch/process/supervision.h"

namespace pdlaunch {
namespace {

/// The value of `name` in a process's environment ("NAME=value" entries), or "".
std::string EnvValue(const ProcessSpec& spec, std::string_view name) {
  const auto find_in = [name](const std::vector<std::string>& env) -> const std::string* {
    for (const std::string& entry : env) {
      if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
        return &entry;
      }
    }
    return nullptr;
  };
  const std::string* entry = find_in(spec.env);
  if (entry == nullptr && spec.shared_env) entry = find_in(*spec.shared_env);
  return entry ? entry->substr(name.size() + 1) : std::string();
}

/// What --report says of a process just started.
ProcessRecord RecordOf(const SupervisedProcess& p, int local_rank, pid_t pid) {
  ProcessRecord record;
  record.role = p.role;
  record.rank = p.rank;
  record.local_rank = local_rank;
  record.pid = pid;
  record.endpoint = EnvValue(p.spec, "PADDLE_CURRENT_ENDPOINT");
  record.devices = EnvValue(p.spec, "FLAGS_selected_gpus");
  if (record.devices.empty()) record.devices = EnvValue(p.spec, "FLAGS_selected_xpus");
  if (const std::string custom = EnvValue(p.spec, "PADDLE_XCCL_BACKEND");
      record.devices.empty() && !custom.empty()) {
    record.devices = EnvValue(p.spec, "FLAGS_selected_" + custom + "s");
  }
  record.log_path = p.log_path;
  record.start_time = WallClockNow();
  return record;
}

}  // namespace

void ReportStatus::NoteSignal(int signal) {
  if (Supervision::IsTerminationSignal(signal) && !report_.signal) report_.signal = signal;
}

void ReportStatus::NotStarted(int signal, size_t /*count*/) { NoteSignal(signal); }

void ReportStatus::Starting(const std::vector<SupervisedProcess>& /*processes*/) {
  first_record_ = report_.processes.size();
  started_of_role_.clear();
}

// local_rank: its index among this node's processes of its role, the N of its log file
// (docs/report.md), as --dry_run says it.
void ReportStatus::Spawned(size_t /*index*/, const SupervisedProcess& process, pid_t pid) {
  report_.processes.push_back(RecordOf(process, started_of_role_[process.role]++, pid));
}

void ReportStatus::Exited(size_t index, const ExitStatus& status) {
  ProcessRecord& record = report_.processes.at(first_record_ + index);
  record.status = status;
  record.end_time = WallClockNow();
}

void ReportStatus::Aborting(const std::vector<FailedProcess>& failed) {
  if (!report_.root_cause && !failed.empty()) {
    report_.root_cause = first_record_ + failed.front().index;
  }
}

void ReportStatus::SignalReceived(const SignalEvent& event) { NoteSignal(event.signal); }

void ReportStatus::DeviceUsageMeasured(const std::map<std::string, DeviceUsage>& usage) {
  report_.device_usage.clear();
  for (const auto& [index, device] : usage) {
    report_.device_usage.push_back(
        {index, device.peak_memory_used_mib, device.mean_utilization(), device.samples});
  }
}

}  // namespace pdlaunch
