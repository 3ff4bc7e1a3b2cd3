// The launcher's event loop for the master path, and a repeating timer on it (Boost.Asio).
#include "pdlaunch/coord/event_loop.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <utility>

#include "coord/cancel_quietly.h"

namespace pdlaunch {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

Clock::duration Duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

EventLoopHandle::EventLoopHandle() : io_(std::make_unique<asio::io_context>()) {}

EventLoopHandle::~EventLoopHandle() = default;

void EventLoopHandle::RunUntil(const std::function<bool()>& done, double max_seconds) {
  const Clock::time_point deadline = Clock::now() + Duration(max_seconds);
  io_->restart();
  while (!done() && Clock::now() < deadline) {
    io_->run_one_until(deadline);
    if (io_->stopped()) io_->restart();
  }
}

struct LoopTimer::State : std::enable_shared_from_this<LoopTimer::State> {
  State(asio::io_context& io, double s, std::function<void()> t)
      : timer(io), seconds(s), tick(std::move(t)) {}
  void Arm() {
    timer.expires_after(Duration(seconds));
    timer.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || self->cancelled) return;
      self->tick();
      if (!self->cancelled) self->Arm();
    });
  }
  asio::steady_timer timer;
  double seconds;
  std::function<void()> tick;
  bool cancelled = false;
};

LoopTimer::LoopTimer(asio::io_context& io, double seconds, std::function<void()> tick)
    : state_(std::make_shared<State>(io, seconds, std::move(tick))) {
  state_->Arm();
}

LoopTimer::~LoopTimer() {
  state_->cancelled = true;
  CancelQuietly(state_->timer);
}

}  // namespace pdlaunch
