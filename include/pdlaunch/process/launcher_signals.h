#pragma once

namespace pdlaunch {

/// Blocks, in the calling thread and for good, the signals the supervisor reads from signalfds:
/// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT, and SIGIO (the console
/// echo's dnotify). Main calls it first thing, so that every thread made later (Asio's
/// resolver's) inherits the block, and a Ctrl-C before the first loop runs, or between two
/// (the planning, the rendezvous's start), is not met by its default action (the launcher gone
/// without its last lines, exit -2): it waits for the next loop, which reads it. Processes
/// started get an empty mask. Idempotent.
void BlockLauncherSignals() noexcept;

/// A pending SIGINT, SIGTERM, SIGHUP or SIGQUIT (blocked, see above), taken without blocking; 0
/// when none. For work done outside a loop that must stop when asked (the auto tuner's memory
/// estimates, one tool call at a time).
int TakeTerminationSignal() noexcept;

}  // namespace pdlaunch
