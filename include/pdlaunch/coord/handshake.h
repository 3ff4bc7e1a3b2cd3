#pragma once

// Paddle 3's `--ips` handshake, the side of a node that does not host the master
// (docs/multi-node.md, "The nodes meet"). The hosting node answers it on the master's own port
// (http_master.cc). Boost.Asio stays inside handshake.cc; callers see only this.

#include <functional>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace pdlaunch {

/// Finds the port of `address` in [first_port, last_port] that answers "connect success" to
/// "connect master", as Paddle 3's update_by_ips does, on the launcher's loop `io`:
/// - the ports are tried in order, each connection with a 5 s deadline (Paddle's); a refused,
///   unreachable or closed port, or one that answers anything else, is passed;
/// - after a round without an answer it pauses (10 to 20 ms, doubling to 1 s) and starts again
///   at the first port, until the caller gives up (its deadline): a host started later is found;
/// - a port that accepted is waited on until it answers or closes: Paddle's host answers only
///   once every node has connected.
/// `found` runs once, on the loop, never after destruction (which cancels what is in flight).
class HandshakeClient {
 public:
  HandshakeClient(boost::asio::io_context& io, const std::string& address, int first_port,
                  int last_port, std::function<void(int port)> found);
  ~HandshakeClient();
  HandshakeClient(const HandshakeClient&) = delete;
  HandshakeClient& operator=(const HandshakeClient&) = delete;

  /// What the client is doing or last saw, for the waiting lines: "10.0.0.1:6768: Connection
  /// refused", or "10.0.0.1:6768 accepted; waiting for its answer".
  std::string status() const;

  struct State;  ///< Opaque; its handlers share it.

 private:
  std::shared_ptr<State> state_;
};

}  // namespace pdlaunch
