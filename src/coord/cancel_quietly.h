#pragma once

// Cancelling an Asio timer or socket where nothing may throw (a destructor, a noexcept handler):
// their cancel() throws boost::system::system_error when the reactor refuses (epoll does not,
// but a destructor must not say so by terminating the launcher).

namespace pdlaunch {

template <typename Cancellable>
void CancelQuietly(Cancellable& object) noexcept {
  try {
    object.cancel();
  } catch (...) {  // Nothing is waiting on it that must be told: its owner is going.
  }
}

}  // namespace pdlaunch
