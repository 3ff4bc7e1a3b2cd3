#pragma once

// The launcher's event loop for the master path and a repeating timer on it. Boost.Asio stays
// inside event_loop.cc.

#include <functional>
#include <memory>

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace pdlaunch {

/// Owns the launcher's event loop for the master path (Asio stays in http_master.cc).
class EventLoopHandle {
 public:
  EventLoopHandle();
  ~EventLoopHandle();
  boost::asio::io_context& get() { return *io_; }
  /// Runs the loop until `done()` holds or `max_seconds` pass (sending what is in flight before
  /// the launcher exits, e.g. a failure record). Signals keep their default action meanwhile.
  void RunUntil(const std::function<bool()>& done, double max_seconds);

 private:
  std::unique_ptr<boost::asio::io_context> io_;
};

/// A repeating timer on `io` that calls `tick` every `seconds` until destroyed.
class LoopTimer {
 public:
  LoopTimer(boost::asio::io_context& io, double seconds, std::function<void()> tick);
  ~LoopTimer();
  LoopTimer(const LoopTimer&) = delete;
  LoopTimer& operator=(const LoopTimer&) = delete;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace pdlaunch
