#pragma once

// A private header: it brings Asio, so only the .cc files of the event loop include it
// (process/supervisor.cc, process/echo_watcher.cc).

#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>

namespace pdlaunch {

/// SIGIO alone: the console echo's dnotify wake-ups.
sigset_t EchoSignalSet();

/// What the supervisor acts on (Supervision::OnSignal): SIGINT, SIGTERM, SIGHUP, SIGQUIT,
/// SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT.
sigset_t SupervisedSignalSet();

/// SIGINT, SIGTERM, SIGHUP, SIGQUIT: the signals that stop a job.
sigset_t TerminationSignalSet();

/// A non-blocking signalfd for `set` (blocked first, for good), or a thrown system error.
int OpenSignalFd(const sigset_t& set);

/// The signals of one set, read from a signalfd on an event loop and handed, one at a time and
/// in the order they came, to `on_signal`. The set stays blocked after it is gone: a signal that
/// comes while no intake exists waits in the kernel for the next (launcher_signals.h).
class SignalIntake {
 public:
  SignalIntake(boost::asio::io_context& io, const sigset_t& set,
               std::function<void(int)> on_signal);
  ~SignalIntake();
  SignalIntake(const SignalIntake&) = delete;
  SignalIntake& operator=(const SignalIntake&) = delete;

  /// Waits for signals until Stop; `on_signal` is called from the loop.
  void Start();
  /// No more signals are taken; those pending stay pending.
  void Stop();

 private:
  void Wait();
  void TakePending();

  boost::asio::posix::stream_descriptor fd_;
  std::function<void(int)> on_signal_;
  bool stopped_ = false;
  // Expires with this object: a handler the loop runs after it (one that had completed before
  // the object was destroyed, on a loop shared with the master) touches nothing of it.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
};

}  // namespace pdlaunch
