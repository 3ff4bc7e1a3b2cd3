#include "process/process_launcher.h"

#include <utility>

namespace pdlaunch {

namespace {

// Hands a confirmed child over to v2: its handle owns the pidfd and reaps the child.
ProcessLauncher::Child Adopt(ProcessLauncher::Executor executor, Process& process) {
  const auto [pid, pidfd] = process.HandOver();
  return ProcessLauncher::Child(std::move(executor), pid, pidfd);
}

}  // namespace

ProcessLauncher::Child ProcessLauncher::operator()(Executor executor,
                                                   const ProcessSpec& spec) const {
  Process process = Process::Spawn(spec);
  return Adopt(std::move(executor), process);
}

std::vector<ProcessLauncher::Child> ProcessLauncher::operator()(
    Executor executor, const std::vector<const ProcessSpec*>& specs,
    const OnCreated& on_created) const {
  // Until every exec is confirmed the children are ours: a throw on the way kills each one's
  // group and reaps it (~Process).
  std::vector<Process> started;
  started.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    started.push_back(Process::Start(*specs[i]));
    if (on_created) on_created(i, started.back().pid());
  }
  for (Process& process : started) process.ConfirmStarted();
  std::vector<Child> children;
  children.reserve(started.size());
  for (Process& process : started) children.push_back(Adopt(executor, process));
  return children;
}

}  // namespace pdlaunch
