// The launcher's signals: which it blocks, and how the event loop reads them (a signalfd).
#include "process/signal_intake.h"

#include <errno.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <utility>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/process/launcher_signals.h"

namespace pdlaunch {

sigset_t EchoSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGIO);
  return set;
}

sigset_t SupervisedSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT}) {
    sigaddset(&set, signal);
  }
  return set;
}

sigset_t TerminationSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, signal);
  return set;
}

int OpenSignalFd(const sigset_t& set) {
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) ThrowSystemError(errno, "signalfd");
  return fd;
}

void BlockLauncherSignals() noexcept {
  sigset_t set = SupervisedSignalSet();
  sigaddset(&set, SIGIO);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int TakeTerminationSignal() noexcept {
  const sigset_t termination = TerminationSignalSet();
  const timespec now{0, 0};
  const int signal = ::sigtimedwait(&termination, nullptr, &now);
  return signal > 0 ? signal : 0;
}

SignalIntake::SignalIntake(boost::asio::io_context& io, const sigset_t& set,
                           std::function<void(int)> on_signal)
    : fd_(io, OpenSignalFd(set)), on_signal_(std::move(on_signal)) {}

SignalIntake::~SignalIntake() = default;

void SignalIntake::Start() {
  stopped_ = false;
  Wait();
}

void SignalIntake::Stop() {
  stopped_ = true;
  boost::system::error_code ignored;
  fd_.cancel(ignored);
}

void SignalIntake::Wait() {
  fd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                 [this, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code ec) {
                   if (life.expired()) return;  // Gone: a handler that completed before then.
                   if (ec) return;
                   TakePending();
                   if (!stopped_) Wait();
                 });
}

/// Acts on every signal pending on the signalfd, in the order they are read.
void SignalIntake::TakePending() {
  signalfd_siginfo taken[8];
  for (;;) {
    const ssize_t n = ::read(fd_.native_handle(), taken, sizeof taken);
    if (n <= 0) return;  // EAGAIN: none left.
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof taken[0]; ++i) {
      on_signal_(static_cast<int>(taken[i].ssi_signo));  // Read is taken: each is told.
    }
  }
}

}  // namespace pdlaunch
