// Paddle 3's --ips handshake, client side (include/pdlaunch/coord/handshake.h). The only
// translation unit that includes Asio for it; everything runs on the launcher's loop.
#include "pdlaunch/coord/handshake.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <random>
#include <string_view>

#include "coord/cancel_quietly.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/base/random_seed.h"
#include "pdlaunch/base/seconds.h"

namespace pdlaunch {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

constexpr std::string_view kRequest = "connect master";
constexpr std::string_view kAnswer = "connect success";
/// Paddle's client socket timeout, for the connection.
constexpr std::chrono::seconds kConnectTimeout{5};
constexpr double kFirstPause = 0.01;
constexpr double kMaxPause = 1.0;

}  // namespace

struct HandshakeClient::State : std::enable_shared_from_this<HandshakeClient::State> {
  State(asio::io_context& io, const std::string& a, int first, int last, std::function<void(int)> f)
      : socket(io),
        timer(io),
        address(asio::ip::make_address(a)),
        first_port(first),
        last_port(last),
        port(first),
        found(std::move(f)) {}

  void Try() {
    if (stopped) return;
    error_code ignored;
    socket.close(ignored);
    got.clear();
    socket = tcp::socket(timer.get_executor());
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
    timer.expires_after(kConnectTimeout);
    timer.async_wait([weak = weak_from_this()](error_code ec) {
      if (auto self = weak.lock(); self && !ec && !self->connected) {
        error_code ignored2;
        self->socket.close(ignored2);  // The connect fails with operation_aborted.
      }
    });
    connected = false;
    socket.async_connect(endpoint, [self = shared_from_this()](error_code ec) {
      self->timer.cancel();
      if (self->stopped) return;
      if (ec)
        return self->Pass(ec == asio::error::operation_aborted ? "no answer in 5 s" : ec.message());
      self->connected = true;
      self->Say(fmt::format("{} accepted; waiting for its answer", self->Where()));
      asio::async_write(self->socket, asio::buffer(kRequest), [self](error_code ec2, size_t) {
        if (self->stopped) return;
        if (ec2) return self->Pass(ec2.message());
        self->Read();
      });
    });
  }

  void Read() {
    socket.async_read_some(
        asio::buffer(chunk), [self = shared_from_this()](error_code ec, size_t n) {
          if (self->stopped) return;
          if (ec) {
            return self->Pass(ec == asio::error::eof ? "closed without answering" : ec.message());
          }
          self->got.append(self->chunk.data(), n);
          if (self->got == kAnswer) {
            self->stopped = true;
            error_code ignored;
            self->socket.close(ignored);
            self->found(self->port);
            return;
          }
          if (!kAnswer.starts_with(self->got)) return self->Pass("answered something else");
          self->Read();
        });
  }

  // This port is not the master's handshake (yet): the next, or after a pause the first again.
  void Pass(const std::string& why) {
    Say(fmt::format("{}: {}", Where(), why));
    error_code ignored;
    socket.close(ignored);
    if (port < last_port) {
      ++port;
      return Try();
    }
    port = first_port;
    const double delay = pause + pause * std::uniform_real_distribution<double>()(jitter);
    pause = std::min(kMaxPause, pause * 2);
    timer.expires_after(SteadyDuration(delay));
    timer.async_wait([weak = weak_from_this()](error_code ec) {
      if (auto self = weak.lock(); self && !ec) self->Try();
    });
  }

  std::string Where() const {
    const std::string host = address.to_string();
    return address.is_v6() ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
  }

  void Say(std::string text) { status = std::move(text); }

  tcp::socket socket;
  asio::steady_timer timer;
  asio::ip::address address;
  int first_port;
  int last_port;
  int port;
  std::function<void(int)> found;
  std::string got;
  std::array<char, 64> chunk{};
  std::string status = "not tried yet";
  double pause = kFirstPause;
  std::minstd_rand jitter{static_cast<std::minstd_rand::result_type>(RandomSeed())};
  bool connected = false;
  bool stopped = false;
};

HandshakeClient::HandshakeClient(asio::io_context& io, const std::string& address, int first_port,
                                 int last_port, std::function<void(int port)> found)
    : state_(std::make_shared<State>(io, address, first_port, last_port, std::move(found))) {
  state_->Try();
}

HandshakeClient::~HandshakeClient() {
  state_->stopped = true;
  error_code ignored;
  CancelQuietly(state_->timer);
  state_->socket.close(ignored);
}

std::string HandshakeClient::status() const { return state_->status; }

}  // namespace pdlaunch
