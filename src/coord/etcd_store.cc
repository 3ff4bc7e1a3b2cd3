#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "coord/http_feed.h"
#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/coord/etcd_protocol.h"
#include "pdlaunch/coord/kv_store.h"

namespace pdlaunch {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

// The largest answer of a unary call (docs/elastic.md, "Bounds"): a range of a job's prefix is a
// few kilobytes per node. Over it the call fails (KvUnavailable) and is retried.
constexpr uint64_t kMaxResponseBytes = uint64_t{8} << 20;
constexpr uint32_t kMaxHeaderBytes = 64u << 10;
constexpr size_t kReadChunkBytes = 64 * 1024;
// Bytes one Read() takes from the watch socket at most; more stays readable for the next call.
constexpr size_t kMaxReadBytes = 16 * kReadChunkBytes;

// Where to connect: `endpoint` is "host:port"; "http://host:port" (as etcd prints it) is accepted.
struct Target {
  std::string host;
  std::string port;
};

Target ParseTarget(std::string_view endpoint) {
  if (endpoint.starts_with("http://")) endpoint.remove_prefix(7);
  if (endpoint.ends_with('/')) endpoint.remove_suffix(1);
  const Endpoint parsed = ParseEndpoint(endpoint);
  std::string host = parsed.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // "[::1]:2379"
  }
  return {host, std::to_string(parsed.port)};
}

void CloseQuietly(tcp::socket& socket) {
  error_code ignored;
  socket.close(ignored);
}

// Runs `io` until the operation that `start` begins completes or `deadline` passes; then
// `cancel` aborts it. Returns the operation's error, asio::error::timed_out on the deadline.
template <typename Start, typename Cancel>
error_code RunUntil(asio::io_context& io, Clock::time_point deadline, Start start, Cancel cancel) {
  std::optional<error_code> result;
  start([&result](error_code error, auto&&...) { result = error; });
  io.restart();
  io.run_until(deadline);
  if (result) return *result;
  cancel();
  io.restart();
  io.run();  // Lets the cancelled operation finish before its buffers go away.
  return asio::error::timed_out;
}

// The addresses of `target`. A numeric host needs no resolver (whose thread Asio would start).
error_code Resolve(asio::io_context& io, const Target& target, Clock::time_point deadline,
                   std::vector<tcp::endpoint>& endpoints) {
  error_code error;
  const auto address = asio::ip::make_address(target.host, error);
  if (!error) {
    endpoints = {tcp::endpoint(address, static_cast<uint16_t>(std::stoi(target.port)))};
    return {};
  }
  tcp::resolver resolver(io);
  return RunUntil(
      io, deadline,
      [&](auto done) {
        resolver.async_resolve(
            target.host, target.port,
            [&endpoints, done](error_code e, const tcp::resolver::results_type& r) {
              endpoints.assign(r.begin(), r.end());
              done(e);
            });
      },
      [&resolver] { resolver.cancel(); });
}

error_code Connect(asio::io_context& io, tcp::socket& socket, const Target& target,
                   Clock::time_point deadline) {
  std::vector<tcp::endpoint> endpoints;
  error_code error = Resolve(io, target, deadline, endpoints);
  if (error) return error;
  error = RunUntil(
      io, deadline,
      [&](auto done) {
        asio::async_connect(socket, endpoints,
                            [done](error_code e, const tcp::endpoint&) { done(e); });
      },
      [&socket] { CloseQuietly(socket); });
  // Children of the launcher must not hold etcd connections open.
  if (!error) ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
  return error;
}

http::request<http::string_body> MakeRequest(const Target& target, std::string_view path,
                                             std::string body) {
  http::request<http::string_body> request(http::verb::post, path, 11);
  request.set(http::field::host, target.host + ":" + target.port);
  request.set(http::field::content_type, "application/json");
  request.keep_alive(true);
  request.body() = std::move(body);
  request.prepare_payload();
  return request;
}

// The peer closed or reset the connection before any byte of the answer arrived.
bool IsClosedConnection(error_code error) {
  return error == asio::error::eof || error == http::error::end_of_stream ||
         error == asio::error::connection_reset || error == asio::error::broken_pipe;
}

std::string Describe(error_code error, std::chrono::milliseconds timeout) {
  if (error == asio::error::timed_out) return fmt::format("timed out after {} ms", timeout.count());
  if (IsClosedConnection(error) || error == http::error::partial_message) {
    return "connection closed by the server";
  }
  return error.message();
}

// A reply of the gateway to a unary call.
struct Answer {
  int status = 0;
  std::string reason;
  std::string body;
  bool keep_alive = false;
};

// One watch: its own connection, whose socket is fd(); events arrive as a chunked response.
class EtcdWatch : public KvWatch {
 public:
  explicit EtcdWatch(std::string endpoint) : endpoint_(std::move(endpoint)) {}

  // Connects, sends the create request and waits for the "created" message.
  void Start(const Target& target, std::string body, std::chrono::milliseconds timeout);

  int fd() const override { return fd_; }
  std::vector<KvEvent> Read() override;

 private:
  [[noreturn]] void Fail(std::string_view what, std::string_view reason) const {
    throw KvUnavailable(fmt::format("etcd {}: {}: {}", endpoint_, what, reason));
  }
  void WaitCreated(Clock::time_point deadline, std::chrono::milliseconds timeout);
  void EnableKeepAlive();

  std::string endpoint_;
  asio::io_context io_;
  tcp::socket socket_{io_};
  int fd_ = -1;  // socket_'s, once connected.
  etcd::WatchStreamDecoder decoder_;
  std::vector<char> buffer_ = std::vector<char>(kReadChunkBytes);
  std::string failure_;  // Once the stream broke: the message every later Read() throws.
};

void EtcdWatch::Start(const Target& target, std::string body, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  error_code error = Connect(io_, socket_, target, deadline);
  if (error) Fail("connect", Describe(error, timeout));
  fd_ = socket_.native_handle();
  EnableKeepAlive();
  const auto request = MakeRequest(target, "/v3/watch", std::move(body));
  error = RunUntil(
      io_, deadline, [&](auto done) { http::async_write(socket_, request, done); },
      [this] { CloseQuietly(socket_); });
  if (error) Fail("POST /v3/watch", Describe(error, timeout));
  WaitCreated(deadline, timeout);
}

// Reads only up to the end of the "created" message (peeking, then consuming what the decoder
// took) so that every later byte is still in the socket and makes fd() readable.
void EtcdWatch::WaitCreated(Clock::time_point deadline, std::chrono::milliseconds timeout) {
  while (!decoder_.created()) {
    const error_code error = RunUntil(
        io_, deadline, [&](auto done) { socket_.async_wait(tcp::socket::wait_read, done); },
        [this] { CloseQuietly(socket_); });
    if (error) Fail("POST /v3/watch", Describe(error, timeout));
    const ssize_t peeked = ::recv(fd(), buffer_.data(), buffer_.size(), MSG_PEEK | MSG_DONTWAIT);
    if (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (peeked < 0) Fail("POST /v3/watch", std::strerror(errno));
    if (peeked == 0) {
      decoder_.FeedEof();
    } else {
      const size_t taken =
          decoder_.FeedUntilCreated(std::string_view(buffer_.data(), static_cast<size_t>(peeked)));
      // The bytes were peeked, so this takes exactly `taken` of them at once.
      if (::recv(fd(), buffer_.data(), taken, MSG_DONTWAIT) < 0) {
        Fail("POST /v3/watch", std::strerror(errno));
      }
    }
    if (decoder_.broken()) Fail("watch", decoder_.error());
  }
}

// Without traffic a dead peer would go unnoticed forever: probe after 10 s of silence.
void EtcdWatch::EnableKeepAlive() {
  const int on = 1, idle = 10, interval = 5, count = 3;
  ::setsockopt(fd(), SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  ::setsockopt(fd(), IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(fd(), IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(fd(), IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

std::vector<KvEvent> EtcdWatch::Read() {
  if (!failure_.empty()) throw KvUnavailable(failure_);
  std::vector<KvEvent> events;
  for (size_t total = 0; total < kMaxReadBytes && !decoder_.broken();) {
    const ssize_t got = ::recv(fd(), buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (got < 0) {
      failure_ = fmt::format("etcd {}: watch: {}", endpoint_, std::strerror(errno));
      break;
    }
    if (got == 0) {
      decoder_.FeedEof();
      break;
    }
    for (KvEvent& event :
         decoder_.Feed(std::string_view(buffer_.data(), static_cast<size_t>(got)))) {
      events.push_back(std::move(event));
    }
    total += static_cast<size_t>(got);
  }
  if (failure_.empty() && decoder_.broken()) {
    failure_ = fmt::format("etcd {}: watch: {}", endpoint_, decoder_.error());
  }
  if (!failure_.empty()) {
    // Keeps fd() readable (EOF) so that the caller comes back for the error.
    ::shutdown(fd(), SHUT_RDWR);
    if (events.empty()) throw KvUnavailable(failure_);
  }
  return events;
}

class EtcdStore : public KvStore {
 public:
  EtcdStore(std::string endpoint, std::chrono::milliseconds timeout)
      : endpoint_(std::move(endpoint)), target_(ParseTarget(endpoint_)), timeout_(timeout) {}

  int64_t Put(const std::string& key, const std::string& value, int64_t lease) override {
    return Call("/v3/kv/put", etcd::PutRequest(key, value, lease), etcd::ParsePutResponse);
  }
  bool PutIf(const std::string& key, int64_t expected_mod_revision, const std::string& value,
             int64_t lease) override {
    return Call("/v3/kv/txn", etcd::PutIfRequest(key, expected_mod_revision, value, lease),
                etcd::ParseTxnResponse);
  }
  Range Get(const std::string& key) override {
    return Call("/v3/kv/range", etcd::RangeRequest(key, ""), etcd::ParseRangeResponse);
  }
  Range GetPrefix(const std::string& prefix) override {
    const etcd::KeyRange range = etcd::PrefixRange(prefix);
    return Call("/v3/kv/range", etcd::RangeRequest(range.key, range.range_end),
                etcd::ParseRangeResponse);
  }
  int64_t Delete(const std::string& key) override {
    return Call("/v3/kv/deleterange", etcd::DeleteRangeRequest(key, ""),
                etcd::ParseDeleteRangeResponse);
  }
  int64_t DeletePrefix(const std::string& prefix) override {
    const etcd::KeyRange range = etcd::PrefixRange(prefix);
    return Call("/v3/kv/deleterange", etcd::DeleteRangeRequest(range.key, range.range_end),
                etcd::ParseDeleteRangeResponse);
  }
  int64_t GrantLease(int ttl_seconds) override {
    return Call("/v3/lease/grant", etcd::LeaseGrantRequest(ttl_seconds),
                etcd::ParseLeaseGrantResponse);
  }
  int64_t KeepAlive(int64_t lease) override {
    return Call("/v3/lease/keepalive", etcd::LeaseIdRequest(lease), etcd::ParseKeepAliveResponse);
  }
  void RevokeLease(int64_t lease) override;
  std::unique_ptr<KvWatch> Watch(const std::string& prefix, int64_t start_revision) override;

 private:
  // POSTs `body` to `path` and parses the answer with `parse`; every error becomes
  // KvUnavailable (EtcdError for etcd's own) naming endpoint and path.
  template <typename Parse>
  std::invoke_result_t<Parse, std::string_view> Call(std::string_view path, std::string body,
                                                     Parse parse) {
    const std::lock_guard lock(mutex_);
    const Answer answer = Exchange(path, std::move(body));
    try {
      etcd::CheckHttpStatus(answer.status, answer.reason, answer.body);
      return parse(answer.body);
    } catch (const etcd::EtcdError& error) {
      throw etcd::EtcdError(error.code(), Message(path, error.what()));
    } catch (const KvUnavailable& error) {
      throw KvUnavailable(Message(path, error.what()));
    }
  }
  Answer Exchange(std::string_view path, std::string body);
  error_code RoundTrip(const http::request<http::string_body>& request, Answer& answer,
                       Clock::time_point deadline);
  void ConnectOrThrow(Clock::time_point deadline);
  void Close();
  std::string Message(std::string_view path, std::string_view reason) const {
    return fmt::format("etcd {}: POST {}: {}", endpoint_, path, reason);
  }

  const std::string endpoint_;
  const Target target_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;  // One call at a time on the cached connection.
  asio::io_context io_;
  tcp::socket socket_{io_};
  beast::flat_buffer buffer_{http_feed::kMaxBufferedBytes};
};

void EtcdStore::RevokeLease(int64_t lease) {
  try {
    Call("/v3/lease/revoke", etcd::LeaseIdRequest(lease), etcd::ParseRevokeResponse);
  } catch (const etcd::EtcdError& error) {
    if (error.code() != etcd::kCodeNotFound) throw;  // Unknown or already expired: nothing to do.
  }
}

std::unique_ptr<KvWatch> EtcdStore::Watch(const std::string& prefix, int64_t start_revision) {
  const etcd::KeyRange range = etcd::PrefixRange(prefix);
  auto watch = std::make_unique<EtcdWatch>(endpoint_);
  watch->Start(target_, etcd::WatchCreateRequest(range.key, range.range_end, start_revision),
               timeout_);
  return watch;
}

Answer EtcdStore::Exchange(std::string_view path, std::string body) {
  const auto deadline = Clock::now() + timeout_;
  const bool reused = socket_.is_open();
  if (!reused) ConnectOrThrow(deadline);
  const auto request = MakeRequest(target_, path, std::move(body));
  Answer answer;
  error_code error = RoundTrip(request, answer, deadline);
  // The server closed the idle cached connection (timeout, restart): one attempt on a fresh one.
  // Such a request normally never reached etcd, so retrying does not apply it twice.
  if (error && reused && IsClosedConnection(error)) {
    Close();
    ConnectOrThrow(deadline);
    error = RoundTrip(request, answer, deadline);
  }
  if (error) {
    Close();
    const bool malformed = error == http::error::bad_value && !answer.reason.empty();
    throw KvUnavailable(Message(
        path, malformed ? "malformed answer: " + answer.reason : Describe(error, timeout_)));
  }
  if (!answer.keep_alive) Close();
  return answer;
}

error_code EtcdStore::RoundTrip(const http::request<http::string_body>& request, Answer& answer,
                                Clock::time_point deadline) {
  const auto cancel = [this] { CloseQuietly(socket_); };
  error_code error = RunUntil(
      io_, deadline, [&](auto done) { http::async_write(socket_, request, done); }, cancel);
  if (error) return error;
  http::response_parser<http::string_body> parser;
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(kMaxResponseBytes);
  // Read and parsed here rather than by http::async_read, so that nothing the parser throws (a
  // gateway may send any bytes; Beast 1.81 throws for a trailer field over 65 534 bytes) leaves
  // this call: it fails like any other etcd error, and the caller retries.
  // Bytes a kept-alive connection left in the buffer come first.
  std::string why;
  if (buffer_.size() > 0 && http_feed::Feed(parser, buffer_, why) == http_feed::Fed::kFailed) {
    answer.reason = OneLine(why);
    return http::error::bad_value;
  }
  for (uint64_t received = buffer_.size(); !parser.is_done();) {
    size_t got = 0;
    error = RunUntil(
        io_, deadline,
        [&](auto done) {
          socket_.async_read_some(buffer_.prepare(http_feed::ReadSize(buffer_)),
                                  [&got, done](error_code e, size_t n) {
                                    got = n;
                                    done(e);
                                  });
        },
        cancel);
    if (error && error != asio::error::eof) return error;
    if (error && received == 0) return error;  // Closed before a byte: Exchange may retry.
    const http_feed::Fed fed = http_feed::Take(parser, buffer_, error, got, received,
                                               kMaxResponseBytes + kMaxHeaderBytes, why);
    if (fed == http_feed::Fed::kDone) break;
    if (fed == http_feed::Fed::kFailed) {
      answer.reason = OneLine(why);
      return http::error::bad_value;
    }
  }
  auto& response = parser.get();
  answer.status = static_cast<int>(response.result_int());
  answer.reason = std::string(response.reason());
  answer.keep_alive = response.keep_alive();
  answer.body = std::move(response.body());
  return {};
}

void EtcdStore::ConnectOrThrow(Clock::time_point deadline) {
  buffer_.clear();
  const error_code error = Connect(io_, socket_, target_, deadline);
  if (error) {
    Close();
    throw KvUnavailable(fmt::format("etcd {}: connect: {}", endpoint_, Describe(error, timeout_)));
  }
}

void EtcdStore::Close() {
  CloseQuietly(socket_);
  buffer_.clear();
}

}  // namespace

std::unique_ptr<KvStore> MakeEtcdStore(const std::string& endpoint,
                                       std::chrono::milliseconds timeout) {
  return std::make_unique<EtcdStore>(endpoint, timeout);
}

}  // namespace pdlaunch
