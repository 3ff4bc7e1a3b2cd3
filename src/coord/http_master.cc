// The only translation unit that includes Boost.Beast for the HTTP master (etcd_store.cc has its
// own client). Everything runs on the io_context the launcher's supervisor runs: no threads.
#include "pdlaunch/coord/http_master.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <list>
#include <optional>
#include <system_error>

#include "pdlaunch/base/version.h"

namespace pdlaunch {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

double Now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

Clock::time_point TimePoint(double seconds) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
}

Clock::duration Duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

const std::string& ServerName() {
  static const std::string name = fmt::format("pdlaunch/{}", kVersion);
  return name;
}

constexpr char kRevisionHeader[] = "X-Pdlaunch-Revision";

class Session;

}  // namespace

struct KvHttpServer::State : std::enable_shared_from_this<KvHttpServer::State> {
  State(asio::io_context& io, HttpServerLimits l)
      : acceptor(io), expiry(io), limits(l), store(l.store) {}

  void Accept();
  void Changed();
  void ArmExpiry();

  tcp::acceptor acceptor;
  asio::steady_timer expiry;
  HttpServerLimits limits;
  KvMemoryStore store;
  std::function<void()> on_change;
  std::list<std::weak_ptr<Session>> sessions;
  bool stopped = false;
};

namespace {

using ServerState = KvHttpServer::State;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<ServerState> state)
      : stream_(std::move(socket)), wait_timer_(stream_.get_executor()), state_(std::move(state)) {}

  void Start() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(state_->limits.max_header_bytes));
    parser_->body_limit(state_->limits.max_body_bytes);
    stream_.expires_after(Duration(state_->limits.idle_seconds));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->Close();
                       self->OnRequest();
                     });
  }

  /// A change happened: answer if this session is a long-poll the change satisfies.
  void MaybeAnswer() {
    if (parked_ && state_->store.revision() > wait_revision_) Answer();
  }

  bool parked() const { return parked_; }

  void Close() {
    beast::error_code ignored;
    wait_timer_.cancel();
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

 private:
  void OnRequest() {
    const http::request<http::string_body>& request = parser_->get();
    version_ = request.version();
    const KvHttpRequest kv{std::string(request.method_string()), std::string(request.target()),
                           request.body()};
    const int64_t before = state_->store.revision();
    KvHttpResponse response = state_->store.Handle(kv, Now());
    if (state_->store.revision() != before) state_->Changed();
    if (!response.wait_until) return Reply(response);
    parked_ = true;
    wait_revision_ = response.wait_revision;
    wait_prefix_ = response.wait_prefix;
    stream_.expires_never();
    wait_timer_.expires_at(TimePoint(*response.wait_until));
    wait_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->Answer();
    });
  }

  void Answer() {
    if (!parked_) return;
    parked_ = false;
    wait_timer_.cancel();
    Reply(state_->store.Answer(wait_prefix_));
  }

  void Reply(const KvHttpResponse& answer) {
    response_.version(version_ == 10 ? 10 : 11);
    response_.result(static_cast<unsigned>(answer.status));
    response_.set(http::field::server, ServerName());
    response_.set(http::field::content_type, "application/json; charset=utf8");
    response_.set(kRevisionHeader, std::to_string(state_->store.revision()));
    response_.set(http::field::connection, "close");
    response_.body() = answer.body;
    response_.prepare_payload();
    stream_.expires_after(Duration(state_->limits.idle_seconds));
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code, size_t) { self->Close(); });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  asio::steady_timer wait_timer_;
  std::shared_ptr<ServerState> state_;
  unsigned version_ = 11;
  bool parked_ = false;
  int64_t wait_revision_ = 0;
  std::string wait_prefix_;
};

}  // namespace

void KvHttpServer::State::Accept() {
  acceptor.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (self->stopped) return;
    if (!ec) {
      self->sessions.remove_if([](const std::weak_ptr<Session>& s) { return s.expired(); });
      if (self->sessions.size() >= self->limits.max_connections) {
        beast::error_code ignored;
        socket.close(ignored);  // Over the bound: refused without affecting the others.
      } else {
        auto session = std::make_shared<Session>(std::move(socket), self);
        self->sessions.push_back(session);
        session->Start();
      }
    }
    self->Accept();
  });
}

void KvHttpServer::State::Changed() {
  for (const std::weak_ptr<Session>& weak : sessions) {
    if (auto session = weak.lock()) session->MaybeAnswer();
  }
  ArmExpiry();
  if (on_change) on_change();
}

void KvHttpServer::State::ArmExpiry() {
  const std::optional<double> next = store.NextExpiry();
  if (!next) {
    expiry.cancel();
    return;
  }
  expiry.expires_at(TimePoint(*next));
  expiry.async_wait([weak = weak_from_this()](beast::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || self->stopped) return;
    if (!self->store.Expire(Now()).empty()) {
      self->Changed();
    } else {
      self->ArmExpiry();
    }
  });
}

KvHttpServer::KvHttpServer(asio::io_context& io, const std::string& address, int port,
                           HttpServerLimits limits)
    : state_(std::make_shared<State>(io, limits)) {
  beast::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(address, ec);
  if (ec) throw std::system_error(EINVAL, std::generic_category(), "bad address " + address);
  const tcp::endpoint endpoint(ip, static_cast<uint16_t>(port));
  tcp::acceptor& acceptor = state_->acceptor;
  const auto check = [&](const char* what) {
    if (ec) {
      throw std::system_error(ec.value(), std::generic_category(),
                              fmt::format("{} {}:{}", what, address, port));
    }
  };
  acceptor.open(endpoint.protocol(), ec);
  check("socket for");
  acceptor.set_option(tcp::acceptor::reuse_address(true), ec);  // TIME_WAIT only, not a listener.
  acceptor.bind(endpoint, ec);
  check("bind");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  check("listen on");
  ::fcntl(acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
  state_->Accept();
}

KvHttpServer::~KvHttpServer() {
  state_->stopped = true;
  beast::error_code ignored;
  state_->acceptor.close(ignored);
  state_->expiry.cancel();
  for (const std::weak_ptr<Session>& weak : state_->sessions) {
    if (auto session = weak.lock()) session->Close();
  }
  state_->on_change = nullptr;
}

int KvHttpServer::port() const { return state_->acceptor.local_endpoint().port(); }

KvMemoryStore& KvHttpServer::store() { return state_->store; }

void KvHttpServer::Changed() { state_->Changed(); }

void KvHttpServer::set_on_change(std::function<void()> on_change) {
  state_->on_change = std::move(on_change);
}

// --- Client ---

namespace {

class Call : public std::enable_shared_from_this<Call> {
 public:
  Call(asio::io_context& io, std::function<void(const HttpReply&)> done)
      : stream_(io), done_(std::move(done)) {
    parser_.body_limit(64u << 20);
  }

  void Start(const tcp::endpoint& endpoint, http::request<http::string_body> request,
             double timeout_seconds) {
    request_ = std::move(request);
    stream_.expires_after(Duration(timeout_seconds));
    stream_.async_connect(endpoint, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->Fail("connect", ec);
      http::async_write(self->stream_, self->request_,
                        [self](beast::error_code ec2, size_t) {
                          if (ec2) return self->Fail("send", ec2);
                          self->Read();
                        });
    });
  }

  /// No callback after this; in-flight operations end with operation_aborted.
  void Cancel() {
    done_ = nullptr;
    beast::error_code ignored;
    stream_.socket().close(ignored);
  }

 private:
  void Read() {
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->Fail("receive", ec);
                       const auto& response = self->parser_.get();
                       HttpReply reply;
                       reply.status = static_cast<int>(response.result_int());
                       reply.body = response.body();
                       reply.server = std::string(response[http::field::server]);
                       const auto revision = response.find(kRevisionHeader);
                       if (revision != response.end()) {
                         try {
                           reply.revision = std::stoll(std::string(revision->value()));
                         } catch (const std::exception&) {
                           reply.revision = -1;
                         }
                       }
                       self->Finish(reply);
                     });
  }

  void Fail(const char* what, beast::error_code ec) {
    HttpReply reply;
    reply.error = ec == beast::error::timeout ? fmt::format("{}: timed out", what)
                                              : fmt::format("{}: {}", what, ec.message());
    Finish(reply);
  }

  void Finish(const HttpReply& reply) {
    beast::error_code ignored;
    stream_.socket().close(ignored);
    if (!done_) return;
    auto done = std::move(done_);
    done_ = nullptr;
    done(reply);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response_parser<http::string_body> parser_;
  std::function<void(const HttpReply&)> done_;
};

}  // namespace

struct KvHttpClient::State {
  asio::io_context& io;
  tcp::endpoint endpoint;
  std::string host_header;
  std::list<std::weak_ptr<Call>> calls;
};

KvHttpClient::KvHttpClient(asio::io_context& io, const std::string& address, int port)
    : state_(std::make_shared<State>(State{io, {}, {}, {}})) {
  beast::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(address, ec);
  if (ec) throw std::system_error(EINVAL, std::generic_category(), "bad address " + address);
  state_->endpoint = tcp::endpoint(ip, static_cast<uint16_t>(port));
  state_->host_header =
      ip.is_v6() ? fmt::format("[{}]:{}", address, port) : fmt::format("{}:{}", address, port);
}

KvHttpClient::~KvHttpClient() {
  for (const std::weak_ptr<Call>& weak : state_->calls) {
    if (auto call = weak.lock()) call->Cancel();
  }
}

void KvHttpClient::Request(const std::string& method, const std::string& target,
                           const std::string& body, double timeout_seconds,
                           std::function<void(const HttpReply&)> done) {
  http::request<http::string_body> request;
  request.method_string(method);
  request.target(target);
  request.version(11);
  request.set(http::field::host, state_->host_header);
  request.set(http::field::user_agent, ServerName());
  request.set(http::field::connection, "close");
  request.body() = body;
  if (method != "GET") request.content_length(body.size());
  state_->calls.remove_if([](const std::weak_ptr<Call>& c) { return c.expired(); });
  auto call = std::make_shared<Call>(state_->io, std::move(done));
  state_->calls.push_back(call);
  call->Start(state_->endpoint, std::move(request), timeout_seconds);
}

// --- Loop ---

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

// --- Timer ---

struct LoopTimer::State : std::enable_shared_from_this<LoopTimer::State> {
  State(asio::io_context& io, double s, std::function<void()> t)
      : timer(io), seconds(s), tick(std::move(t)) {}
  void Arm() {
    timer.expires_after(Duration(seconds));
    timer.async_wait([weak = weak_from_this()](beast::error_code ec) {
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
  state_->timer.cancel();
}

}  // namespace pdlaunch
