// The HTTP master's server (docs/master.md, "The wire protocol"), on Boost.Beast. Everything runs
// on the io_context the launcher's supervisor runs: no threads.
#include "pdlaunch/coord/http_master.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <list>
#include <map>
#include <optional>
#include <system_error>

#include "coord/cancel_quietly.h"
#include "coord/http_feed.h"
#include "coord/http_wire.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"

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

constexpr int kSendBufferBytes = 256 << 10;

using http_wire::kHandshakeAnswer;
using http_wire::kHandshakeRequest;
using http_wire::kJobHeader;
using http_wire::kRevisionHeader;
using http_wire::kTokenHeader;
using http_wire::ServerName;

class Session;

}  // namespace

struct KvHttpServer::State : std::enable_shared_from_this<KvHttpServer::State> {
  State(asio::io_context& io, HttpServerLimits l)
      : acceptor(io), expiry(io), accept_pause(io), limits(l), store(l.store) {}

  void Accept();
  void Admit(tcp::socket socket);
  void EvictOldest(std::list<std::weak_ptr<Session>>& list);
  void Changed();
  void ArmExpiry();

  tcp::acceptor acceptor;
  asio::steady_timer expiry;
  asio::steady_timer accept_pause;  // After EMFILE and the like: accept again later, not at once.
  HttpServerLimits limits;
  KvMemoryStore store;
  std::function<void()> on_change;
  std::string job;
  std::optional<JobToken> token;
  std::list<std::weak_ptr<Session>> sessions;  // Every open connection (each erases its own).
  // The long-polls waiting for a change, by the prefix they wait on: a change costs one test per
  // distinct prefix (at most kMaxParkedPrefixes), not one per parked connection.
  using Parked = std::list<std::weak_ptr<Session>>;
  std::map<std::string, Parked, std::less<>> parked;
  static constexpr size_t kMaxParkedPrefixes = 64;
  // Open connections by client address, oldest first.
  std::map<asio::ip::address, std::list<std::weak_ptr<Session>>> per_address;
  size_t writing = 0;  // Answers being written.
  // Answers being written, oldest first, and the bytes of their bodies: a client that does not
  // read holds its answer (and the kernel's buffers) until its deadline.
  std::list<std::weak_ptr<Session>> writers;
  size_t bytes_writing = 0;
  static constexpr size_t kMaxBytesWriting = 64u << 20;
  bool stopped = false;
};

namespace {

using ServerState = KvHttpServer::State;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<ServerState> state, asio::ip::address peer)
      : stream_(std::move(socket)),
        wait_timer_(stream_.get_executor()),
        state_(std::move(state)),
        peer_(std::move(peer)) {}

  ~Session() {
    Leave();
    if (parked_) Unpark();
  }

  void Start(std::list<std::weak_ptr<Session>>::iterator self_in_sessions,
             std::list<std::weak_ptr<Session>>::iterator self_in_address) {
    self_in_sessions_ = self_in_sessions;
    self_in_address_ = self_in_address;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(state_->limits.max_header_bytes));
    parser_->body_limit(state_->limits.max_body_bytes);
    // Nothing sent within first_byte_seconds: closed; the whole request within idle_seconds.
    request_deadline_ = Clock::now() + Duration(state_->limits.idle_seconds);
    stream_.expires_after(Duration(state_->limits.first_byte_seconds));
    ReadSome();
  }

  /// A key under this long-poll's prefix changed: answer it. Whatever answering throws ends this
  /// connection only.
  void AnswerChange() noexcept {
    if (parked_ && state_->store.revision() > wait_revision_) Guard([&] { Answer(); });
  }

  /// Closed to make room for a newer connection (the server is at a bound): it leaves the
  /// server's books at once, so that the slot is free now, not when its handlers have run.
  void Evict() {
    PDLOG_DEBUG("master: closing the oldest connection of {} to admit a newer one",
                peer_.to_string());
    Leave();
    if (parked_) {
      Unpark();
      wait_timer_.cancel();
    }
    // An abortive close (RST): what the kernel still held for this client goes now, not when
    // an orphaned connection that nobody reads times out.
    beast::error_code ignored;
    stream_.socket().set_option(tcp::socket::linger(true, 0), ignored);
    Close();
  }

  void Close() noexcept {
    beast::error_code ignored;
    CancelQuietly(wait_timer_);
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    try {
      stream_.close();  // Its own timer too; it throws only if the reactor refuses.
    } catch (...) {
    }
  }

 private:
  void ReadSome() {
    stream_.async_read_some(
        buffer_.prepare(http_feed::ReadSize(buffer_)),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  // Every handler of the server runs under Guard: whatever a request makes throw ends that one
  // connection, never the loop (and with it the launcher and every rank of the job).
  template <typename Body>
  void Guard(Body body) noexcept {
    try {
      body();
    } catch (const std::exception& e) {
      Drop(e.what());
    } catch (...) {
      Drop("unknown exception");
    }
  }

  void Drop(std::string_view why) noexcept {
    try {
      PDLOG_DEBUG("master: dropped the connection of {}: {}", peer_.to_string(), OneLine(why));
    } catch (...) {
    }
    Close();
  }

  // Paddle 3's --ips handshake (context/__init__.py, update_by_ips): a node sends the 14 bytes
  // "connect master" and reads "connect success". The master's own port answers it, so that
  // the handshake and the HTTP master are one socket: nothing to close and rebind between
  // them. Paddle's host answers once every node has connected; this one answers at once, and
  // the rendezvous that follows waits for the nodes (docs/multi-node.md, "The nodes meet").
  // Returns true when the bytes so far are (or may still become) the handshake.
  bool TakeHandshake(beast::error_code ec, size_t n) {
    if (!maybe_handshake_ || ec) return false;
    buffer_.commit(n);
    received_ += n;
    n_committed_ = true;
    const std::string_view got(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const std::string_view word = kHandshakeRequest;
    if (got.size() < word.size() && word.starts_with(got)) {
      ReadSome();  // Not all of it yet.
      return true;
    }
    maybe_handshake_ = false;
    if (!got.starts_with(word)) return false;
    PDLOG_DEBUG("master: handshake from {}", peer_.to_string());
    stream_.expires_after(Duration(state_->limits.idle_seconds));
    ++state_->writing;
    asio::async_write(stream_, asio::buffer(kHandshakeAnswer),
                      [self = shared_from_this()](beast::error_code, size_t) {
                        --self->state_->writing;
                        self->Close();
                      });
    return true;
  }

  void OnRead(beast::error_code ec, size_t n) {
    bool request_ready = false;
    Guard([&] {
      if (!ec && !got_bytes_) {
        got_bytes_ = true;
        stream_.expires_at(request_deadline_);
      }
      if (TakeHandshake(ec, n)) return;
      std::string error;
      const uint64_t max_request = state_->limits.max_header_bytes + state_->limits.max_body_bytes +
                                   http_feed::kMaxBufferedBytes;
      // Bytes the handshake's test committed are in the buffer already.
      const size_t fresh = n_committed_ ? 0 : n;
      n_committed_ = false;
      http_feed::Fed fed = http_feed::Take(*parser_, buffer_, ec, fresh, received_, max_request,
                                           error, /*stop_after_header=*/!header_checked_);
      if (fed == http_feed::Fed::kFailed) return Drop(error);
      if (!header_checked_ && parser_->is_header_done()) {
        header_checked_ = true;
        // Paddle's master (Python's http.server) reads Content-Length only; a chunked body and
        // its trailer, which Beast 1.81 bounds by no limit, are refused before they are read.
        if (parser_->chunked()) return Reply(Status(411));
        fed = http_feed::Feed(*parser_, buffer_, error);
        if (fed == http_feed::Fed::kFailed) return Drop(error);
      }
      if (fed == http_feed::Fed::kDone) {
        request_ready = true;
        return;
      }
      if (ec) return Drop("closed before the request ended");
      ReadSome();
    });
    if (request_ready) OnRequest();
  }

  // Whether the request carries `Authorization: Bearer <token>`, compared in constant time.
  static bool Presents(const http::request<http::string_body>& request, const JobToken& token) {
    constexpr std::string_view kScheme = "Bearer ";
    const std::string_view field = request[http::field::authorization];
    return field.starts_with(kScheme) && token.Matches(field.substr(kScheme.size()));
  }

  static KvHttpResponse Status(int status) {
    KvHttpResponse response;
    response.status = status;
    return response;
  }

  // The request's own work runs under Guard; the change it made is reported outside it: what
  // the hosting node does about a change (its rendezvous, its run) must not pass for this one
  // client's fault, and throws as it always did.
  void OnRequest() {
    KvHttpResponse response;
    int64_t before = 0;
    bool handled = false;
    Guard([&] {
      const http::request<http::string_body>& request = parser_->get();
      version_ = request.version();
      if (state_->token && !Presents(request, *state_->token)) {
        response = Status(401);  // Nothing of the job's is read or written, nothing said.
        handled = true;
        return;
      }
      const KvHttpRequest kv{std::string(request.method_string()), std::string(request.target()),
                             request.body()};
      before = state_->store.revision();
      response = state_->store.Handle(kv, Now());
      handled = true;
    });
    if (!handled) return;
    if (state_->store.revision() != before) state_->Changed();
    Guard([&] { Respond(std::move(response)); });
  }

  void Respond(KvHttpResponse response) {
    if (!response.wait_until) return Reply(std::move(response));
    auto group = state_->parked.find(response.wait_prefix);
    if (group == state_->parked.end()) {
      if (state_->parked.size() >= ServerState::kMaxParkedPrefixes) {
        // Past the distinct prefixes one change may test: this long-poll is a plain GET.
        return Reply(state_->store.Answer(response.wait_prefix));
      }
      group = state_->parked.emplace(response.wait_prefix, ServerState::Parked()).first;
    }
    parked_ = true;
    group_ = group;
    self_in_parked_ = group->second.insert(group->second.end(), weak_from_this());
    wait_revision_ = response.wait_revision;
    wait_prefix_ = response.wait_prefix;
    stream_.expires_never();
    wait_timer_.expires_at(TimePoint(*response.wait_until));
    wait_timer_.async_wait([self = shared_from_this()](beast::error_code timer_ec) {
      if (!timer_ec) self->Guard([&] { self->Answer(); });
    });
  }

  void Answer() {
    if (!parked_) return;
    Unpark();
    wait_timer_.cancel();
    Reply(state_->store.Answer(wait_prefix_));
  }

  void Unpark() {
    parked_ = false;
    group_->second.erase(self_in_parked_);
    if (group_->second.empty()) state_->parked.erase(group_);
  }

  void Reply(KvHttpResponse answer) {
    // The body is never copied per client: a shared answer is kept alive while it is written.
    answer_ = std::move(answer);
    const std::string_view body = answer_.Body();
    response_.version(version_ == 10 ? 10 : 11);
    response_.result(static_cast<unsigned>(answer_.status));
    response_.set(http::field::server, ServerName());
    response_.set(http::field::content_type, "application/json; charset=utf8");
    response_.set(kRevisionHeader, std::to_string(state_->store.revision()));
    if (!state_->job.empty()) response_.set(kJobHeader, state_->job);
    if (state_->token) response_.set(kTokenHeader, "required");
    response_.set(http::field::connection, "close");
    response_.body() = http::span_body<const char>::value_type(body.data(), body.size());
    response_.prepare_payload();
    stream_.expires_after(Duration(state_->limits.idle_seconds));
    ++state_->writing;
    StartWriting(body.size());
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, size_t) {
      --self->state_->writing;
      self->StopWriting();
      self->Close();
    });
  }

  // Over kMaxBytesWriting, the oldest answers still being written (their clients do not read)
  // make room: their connections are closed.
  void StartWriting(size_t bytes) {
    while (!state_->writers.empty() &&
           state_->bytes_writing + bytes > ServerState::kMaxBytesWriting) {
      const std::shared_ptr<Session> oldest = state_->writers.front().lock();
      if (!oldest) {
        state_->writers.pop_front();
        continue;
      }
      oldest->Evict();
    }
    writing_bytes_ = bytes;
    state_->bytes_writing += bytes;
    self_in_writers_ = state_->writers.insert(state_->writers.end(), weak_from_this());
  }

  void StopWriting() {
    if (!self_in_writers_) return;
    state_->writers.erase(*self_in_writers_);
    self_in_writers_.reset();
    state_->bytes_writing -= writing_bytes_;
    writing_bytes_ = 0;
  }

  // Off the server's books: its slot, its address's share and its bytes in flight are free.
  void Leave() {
    StopWriting();
    if (self_in_sessions_) state_->sessions.erase(*self_in_sessions_);
    self_in_sessions_.reset();
    if (!self_in_address_) return;
    const auto list = state_->per_address.find(peer_);
    list->second.erase(*self_in_address_);
    if (list->second.empty()) state_->per_address.erase(list);
    self_in_address_.reset();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_{http_feed::kMaxBufferedBytes};
  std::optional<http::request_parser<http::string_body>> parser_;
  KvHttpResponse answer_;
  http::response<http::span_body<const char>> response_;
  asio::steady_timer wait_timer_;
  std::shared_ptr<ServerState> state_;
  asio::ip::address peer_;
  std::optional<std::list<std::weak_ptr<Session>>::iterator> self_in_sessions_;
  std::optional<std::list<std::weak_ptr<Session>>::iterator> self_in_address_;
  std::optional<std::list<std::weak_ptr<Session>>::iterator> self_in_writers_;
  size_t writing_bytes_ = 0;
  std::map<std::string, ServerState::Parked, std::less<>>::iterator group_;
  ServerState::Parked::iterator self_in_parked_;
  Clock::time_point request_deadline_;
  uint64_t received_ = 0;
  bool got_bytes_ = false;
  bool maybe_handshake_ = true;  // Until the first bytes say it is not Paddle's handshake.
  bool n_committed_ = false;     // TakeHandshake committed this read's bytes.
  bool header_checked_ = false;
  unsigned version_ = 11;
  bool parked_ = false;
  int64_t wait_revision_ = 0;
  std::string wait_prefix_;
};

}  // namespace

void KvHttpServer::State::Accept() {
  acceptor.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (self->stopped || ec == asio::error::operation_aborted) return;
    if (ec && ec != asio::error::connection_aborted) {
      // EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays in the backlog; accepting again at
      // once would spin. One pause, then the next try.
      PDLOG_DEBUG("master: accept failed ({}); trying again in 0.1 s", ec.message());
      self->accept_pause.expires_after(std::chrono::milliseconds(100));
      self->accept_pause.async_wait([self](beast::error_code pause_ec) {
        if (!pause_ec && !self->stopped) self->Accept();
      });
      return;
    }
    if (!ec) {
      try {
        self->Admit(std::move(socket));
      } catch (const std::exception& e) {
        PDLOG_DEBUG("master: could not admit a connection: {}", e.what());
      }
    }
    self->Accept();
  });
}

void KvHttpServer::State::EvictOldest(std::list<std::weak_ptr<Session>>& list) {
  while (!list.empty()) {
    const std::shared_ptr<Session> oldest = list.front().lock();
    if (oldest) return oldest->Evict();  // Takes it off `list`.
    list.pop_front();
  }
}

void KvHttpServer::State::Admit(tcp::socket socket) {
  beast::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) return;  // Gone already; the socket closes with this scope.
  // At a bound, the oldest connection (of this address, or of all) is closed to admit this one:
  // a flood of long-polls or idle connections can delay a node's next request by nothing, since
  // a node's heartbeat is always the newest, and a request takes milliseconds (docs/master.md,
  // "Exposure"). O(1) a connection.
  // An eviction may erase an address's entry (its last connection gone): the list of this
  // address is looked up after them, never held across one.
  const asio::ip::address address = remote.address();
  if (const auto held = per_address.find(address);
      held != per_address.end() && held->second.size() >= limits.max_per_address) {
    EvictOldest(held->second);
  }
  if (sessions.size() >= limits.max_connections) EvictOldest(sessions);
  const auto held = per_address.find(address);
  const size_t mine = held == per_address.end() ? 0 : held->second.size();
  if (sessions.size() >= limits.max_connections || mine >= limits.max_per_address) {
    return;  // Nothing to close (a bound of 0): this one is closed at once.
  }
  // A fixed send buffer: an answer a client does not read holds 256 KiB of the kernel's memory,
  // not the 4 MiB autotuning grows to, and writing it costs the loop as much (enough for a LAN:
  // 10 Gb/s at 0.2 ms is 250 KB in flight).
  socket.set_option(asio::socket_base::send_buffer_size(kSendBufferBytes), ec);
  auto session = std::make_shared<Session>(std::move(socket), shared_from_this(), remote.address());
  const auto in_sessions = sessions.insert(sessions.end(), session);
  std::list<std::weak_ptr<Session>>& of_address = per_address[address];
  session->Start(in_sessions, of_address.insert(of_address.end(), session));  // Undone by Leave.
}

void KvHttpServer::State::Changed() {
  // Only the long-polls under a changed prefix, each answered from one shared encoding.
  std::vector<std::string> woken;
  for (const auto& [prefix, waiting] : parked) {
    if (store.ChangedUnder({prefix})) woken.push_back(prefix);
  }
  for (const std::string& prefix : woken) {
    const auto group = parked.find(prefix);
    if (group == parked.end()) continue;
    const Parked waiting = group->second;  // Answering erases each from the group.
    for (const std::weak_ptr<Session>& weak : waiting) {
      if (const std::shared_ptr<Session> session = weak.lock()) session->AnswerChange();
    }
  }
  ArmExpiry();
  if (on_change) on_change();
  store.ClearChanged();
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

HttpServerLimits ServerLimitsFor(int nnodes, size_t open_files) {
  HttpServerLimits limits;
  const size_t nodes = static_cast<size_t>(std::max(nnodes, 1));
  const size_t budget = open_files > 256 ? open_files - 128 : 128;
  limits.max_connections = std::min(std::max<size_t>(8 * nodes + 64, 512), budget);
  limits.max_per_address = std::min(3 * nodes + 16, limits.max_connections / 2);
  // The world record and a Paddle node's read of every peer grow with the job: 2 KiB a node, as
  // much as a client reads (KvHttpClient's 8 MiB).
  limits.store.max_answer_bytes = std::clamp<size_t>(nodes * 2048, 4u << 20, 8u << 20);
  return limits;
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
  CancelQuietly(state_->expiry);
  CancelQuietly(state_->accept_pause);
  for (const std::weak_ptr<Session>& weak : state_->sessions) {
    if (auto session = weak.lock()) session->Close();
  }
  state_->on_change = nullptr;
}

int KvHttpServer::port() const { return state_->acceptor.local_endpoint().port(); }

KvMemoryStore& KvHttpServer::store() { return state_->store; }

size_t KvHttpServer::answers_in_flight() const { return state_->writing; }

void KvHttpServer::Changed() { state_->Changed(); }

void KvHttpServer::set_job(std::string job_id) { state_->job = std::move(job_id); }

void KvHttpServer::set_token(std::optional<JobToken> token) { state_->token = std::move(token); }

void KvHttpServer::set_on_change(std::function<void()> on_change) {
  state_->on_change = std::move(on_change);
}

}  // namespace pdlaunch
