#pragma once

// The HTTP KV master's server (docs/master.md, "The wire protocol"), wire-compatible with
// Paddle's, on the launcher's one event loop (event_loop.h); its client is http_client.h.
// Boost.Asio and Beast stay inside http_master.cc; callers see only this.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "pdlaunch/coord/job_token.h"
#include "pdlaunch/coord/kv_http.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace pdlaunch {

/// Bounds of the server, beyond the store's own (KvLimits).
struct HttpServerLimits {
  size_t max_header_bytes = 16 << 10;  ///< Request line and header fields.
  size_t max_body_bytes = 4 << 20;
  size_t max_connections = 512;  ///< Further connections are closed at once.
  /// Connections one client address may hold open (parked long-polls included); more are closed
  /// at once, so that one address cannot take every slot.
  size_t max_per_address = 64;
  double first_byte_seconds = 2;  ///< A connection that sends nothing for this long is closed.
  double idle_seconds = 10;       ///< To receive a whole request, and to send the answer.
  KvLimits store;
};

/// The bounds of the master of a job of `nnodes` nodes on a launcher allowed `open_files`
/// descriptors (its RLIMIT_NOFILE): room for 8 connections per node plus 64, at least 512, and
/// at most the descriptors left after 128 for the launcher itself; one address may hold 3 per
/// node plus 16 (nodes simulated on one host share one address), at most half of them; an answer
/// may carry 2 KiB per node, between 4 and 8 MiB.
HttpServerLimits ServerLimitsFor(int nnodes, size_t open_files);

/// Paddle's KV server, served from `io`: concurrent connections, one request each (the answer
/// closes the connection, as Paddle's HTTP/1.0 server does), long-polls parked without a thread.
/// Every answer carries `Server: pdlaunch/<version>` and `X-Pdlaunch-Revision: <revision>`.
class KvHttpServer {
 public:
  /// Binds `address:port` (no SO_REUSEPORT: a second launcher on the same port fails with
  /// EADDRINUSE, which is how launchers racing for one --master agree on one host) and listens.
  /// Throws std::system_error with the errno of bind/listen.
  KvHttpServer(boost::asio::io_context& io, const std::string& address, int port,
               HttpServerLimits limits = {});
  ~KvHttpServer();
  KvHttpServer(const KvHttpServer&) = delete;
  KvHttpServer& operator=(const KvHttpServer&) = delete;

  int port() const;
  /// The store, for the hosting node's own reads and writes; call Changed() after writing.
  KvMemoryStore& store();
  /// Answers whose writing has not ended: a host that leaves lets them go out first.
  size_t answers_in_flight() const;
  /// Answers the long-polls a change satisfies and re-arms the expiry timer; then calls the
  /// on_change callback. Requests from the network call it themselves.
  void Changed();
  /// Every answer says `X-Pdlaunch-Job: <job_id>`: the job this master serves.
  void set_job(std::string job_id);
  /// With a job token, a request that does not present it (`Authorization: Bearer <token>`) is
  /// answered 401 and touches nothing; Paddle's nodes cannot present one (docs/master.md).
  void set_token(std::optional<JobToken> token);
  /// Called on the loop after every change of the store (a request's or an expiry's);
  /// store().ChangedUnder() tells which keys it touched.
  void set_on_change(std::function<void()> on_change);

  struct State;  ///< Opaque; its connections share it.

 private:
  std::shared_ptr<State> state_;
};

}  // namespace pdlaunch
