#pragma once

// The HTTP KV master's client (docs/master.md, "The wire protocol"): asynchronous, on the
// launcher's one event loop. Boost.Asio and Beast stay inside http_client.cc.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "pdlaunch/coord/job_token.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace pdlaunch {

/// One answer from the master. status 0: no answer (connect, send or receive failed, or the
/// deadline passed); `error` says which.
struct HttpReply {
  int status = 0;
  std::string body;
  std::string server;           ///< The Server header ("pdlaunch/0.x", "BaseHTTP/0.6 Python/3.10").
  int64_t revision = -1;        ///< X-Pdlaunch-Revision, -1 when absent (not a pdlaunch master).
  std::string job;              ///< X-Pdlaunch-Job (escaped, bounded): the job the master serves.
  bool token_required = false;  ///< X-Pdlaunch-Token: required: the master takes a job token.
  std::string error;
};

/// An HTTP client of one master address, on `io`. Each request uses a fresh connection and has
/// its own deadline. Callbacks run on the loop, exactly once each, never after the client is
/// destroyed (destruction cancels what is in flight).
class KvHttpClient {
 public:
  /// `address` is a numeric IPv4 or IPv6 address (resolve names first).
  KvHttpClient(boost::asio::io_context& io, const std::string& address, int port);
  ~KvHttpClient();
  KvHttpClient(const KvHttpClient&) = delete;
  KvHttpClient& operator=(const KvHttpClient&) = delete;

  void Request(const std::string& method, const std::string& target, const std::string& body,
               double timeout_seconds, std::function<void(const HttpReply&)> done);
  /// Every request from now on presents `token` (see KvHttpServer::set_token).
  void set_token(std::optional<JobToken> token);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace pdlaunch
