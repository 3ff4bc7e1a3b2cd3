#pragma once

// A private header: it brings Boost.Process v2 and Asio, so only the .cc files that start the
// job's processes include it (process/supervisor.cc and the tests).

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/process/v2/process.hpp>
#include <cstddef>
#include <functional>
#include <vector>

#include "pdlaunch/process/process.h"

namespace pdlaunch {

/// The launcher of the job's processes (ranks, servers, the elastic pre-hook), in the shape of
/// Boost.Process v2's launchers (`default_launcher`, `vfork_launcher`): called with an executor
/// and what to start, it returns a v2 `basic_process` that owns the child through its pidfd and
/// is waited on through Asio. v2's own launchers do not do what a rank needs, so the child is
/// created by `Process::Start` (process/process-posix.cc; docs/design.md, "Child hygiene"):
///
/// - `clone3` with `CLONE_VM` on x86-64, so the launcher goes on while each child prepares and
///   execs on another core (v2's fork launcher copies the page tables per child; its vfork
///   launcher suspends the launcher until each exec);
/// - `CLONE_INTO_CGROUP`: the child is in the job's cgroup before its first instruction;
/// - its own process group, SIGKILL as parent-death signal with the `getppid()` race check, the
///   signal dispositions and mask reset, `_exit` after a failed exec, the NUMA binding, its log
///   file opened by the child itself;
/// - a batch start in two halves: every child created before any exec is awaited, so that N
///   children exec in parallel, where a v2 launcher returns each child only after its exec.
///
/// A failed start throws `std::system_error` (or `LaunchError`) naming the program, as v2's
/// throwing calls do, and leaves no process of the batch behind. v2's `terminate()` signals the
/// child alone; the job's processes are stopped through their groups (`SignalProcessGroup`).
class ProcessLauncher {
 public:
  using Executor = boost::asio::io_context::executor_type;
  using Child = boost::process::v2::basic_process<Executor>;
  /// Called for each child of a batch as soon as it exists (before its exec is confirmed):
  /// its index in the batch and its pid.
  using OnCreated = std::function<void(size_t index, pid_t pid)>;

  /// v2's call for one child: returns once it has exec'ed.
  Child operator()(Executor executor, const ProcessSpec& spec) const;

  /// A batch: creates every child, then confirms every exec. `specs` must stay alive and
  /// unchanged until it returns (the children read them until their exec).
  std::vector<Child> operator()(const Executor& executor,
                                const std::vector<const ProcessSpec*>& specs,
                                const OnCreated& on_created = {}) const;
};

}  // namespace pdlaunch
