#include "pdlaunch/process/supervision.h"

#include <signal.h>

#include <utility>

namespace pdlaunch {
namespace {

Supervision::Commands SignalGroups(int signal, bool arm_grace_timer = false) {
  Supervision::Commands commands;
  commands.signal_groups = signal;
  commands.arm_grace_timer = arm_grace_timer;
  return commands;
}

}  // namespace

Supervision::Supervision(int num_processes)
    : Supervision(std::vector<bool>(static_cast<size_t>(num_processes), true)) {}

Supervision::Supervision(std::vector<bool> primary, bool hold_secondaries)
    : statuses_(primary.size()),
      primary_(std::move(primary)),
      running_(static_cast<int>(primary_.size())),
      hold_secondaries_(hold_secondaries) {}

bool Supervision::PrimariesSucceeded() const {
  for (size_t i = 0; i < statuses_.size(); ++i) {
    if (primary_[i] && !(statuses_[i] && statuses_[i]->success())) return false;
  }
  return true;
}

bool Supervision::IsTerminationSignal(int signal) {
  return signal == SIGINT || signal == SIGTERM || signal == SIGHUP || signal == SIGQUIT;
}

bool Supervision::IsForwardedSignal(int signal) { return signal == SIGUSR1 || signal == SIGUSR2; }

bool Supervision::IsJobControlSignal(int signal) { return signal == SIGTSTP || signal == SIGCONT; }

Supervision::Commands Supervision::OnExits(const std::vector<std::pair<int, ExitStatus>>& exits) {
  Commands commands;
  const bool was_stopping = stopping_;
  for (const auto& [index, status] : exits) {
    auto& slot = statuses_.at(static_cast<size_t>(index));
    if (slot) continue;  // Reported twice: ignore.
    slot = status;
    --running_;
    // Exits caused by our own teardown are consequences, not failures to report.
    if (!status.success() && !was_stopping) {
      failed_.push_back(index);
      commands.newly_failed.push_back(index);
    }
  }
  bool complete =
      commands.newly_failed.empty() && !stopping_ && running_ > 0 && PrimariesSucceeded();
  if (complete && hold_secondaries_) {
    commands.primaries_done = !held_;
    held_ = true;
    complete = false;
  }
  if (!commands.newly_failed.empty() || complete) {
    Commands teardown = BeginTeardown(SIGTERM);
    commands.signal_groups = teardown.signal_groups;
    commands.arm_grace_timer = teardown.arm_grace_timer;
    commands.completing = complete;
    completing_ = complete;
  }
  return commands;
}

Supervision::Commands Supervision::OnSignal(int signal, double now) {
  if (IsForwardedSignal(signal) || signal == SIGCONT) return SignalGroups(signal);
  if (signal == SIGTSTP) {
    // SIGSTOP, not SIGTSTP: a rank that handles or ignores SIGTSTP must not keep running while
    // the launcher (and the user's shell) consider the job stopped.
    Commands commands = SignalGroups(SIGSTOP);
    commands.stop_launcher = true;
    return commands;
  }
  if (!IsTerminationSignal(signal)) return {};
  if (signal_ && !killed_ && now - signal_time_ < kRepeatWindow) {
    Commands commands;
    commands.repeat_ignored = true;
    return commands;
  }
  if (stopping_) {
    // A second interrupt means "now": skip what is left of the grace period.
    if (!signal_) signal_ = signal;
    killed_ = true;
    return SignalGroups(SIGKILL);
  }
  signal_ = signal;
  signal_time_ = now;
  return BeginTeardown(signal);
}

Supervision::Commands Supervision::OnGraceExpired() {
  if (killed_) return {};
  killed_ = true;
  return SignalGroups(SIGKILL);
}

Supervision::Commands Supervision::OnStopRequest() {
  if (stopping_) return {};
  stop_requested_ = true;
  return BeginTeardown(SIGTERM);
}

Supervision::Commands Supervision::BeginTeardown(int signal) {
  if (stopping_) return {};
  stopping_ = true;
  return SignalGroups(signal, true);
}

std::optional<int> Supervision::first_failure() const {
  if (failed_.empty()) return std::nullopt;
  return failed_.front();
}

int Supervision::exit_code() const {
  // A failing rank is the root cause even when a signal to the launcher followed it.
  if (const auto first = first_failure())
    return statuses_[static_cast<size_t>(*first)]->ShellCode();
  if (signal_) return 128 + *signal_;
  return 0;
}

}  // namespace pdlaunch
