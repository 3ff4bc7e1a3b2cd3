// The HTTP master's client (docs/master.md, "The wire protocol"), on Boost.Beast: one fresh
// connection per request, each with its own deadline, on the launcher's event loop.
#include "pdlaunch/coord/http_client.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <list>
#include <system_error>

#include "coord/http_feed.h"
#include "coord/http_wire.h"
#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using http_wire::kJobHeader;
using http_wire::kRevisionHeader;
using http_wire::kTokenHeader;
using http_wire::ServerName;

std::chrono::steady_clock::duration Duration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

class Call : public std::enable_shared_from_this<Call> {
 public:
  // The largest answer a master may send: a GET of the largest prefix (KvLimits) with its
  // header; bytes read past it fail the call.
  static constexpr size_t kMaxAnswerBytes = (8u << 20) + (64u << 10);

  Call(asio::io_context& io, std::function<void(const HttpReply&)> done)
      : stream_(io), done_(std::move(done)) {
    parser_.header_limit(64u << 10);
    parser_.body_limit(8u << 20);
  }

  void Start(const tcp::endpoint& endpoint, http::request<http::string_body> request,
             double timeout_seconds) {
    request_ = std::move(request);
    stream_.expires_after(Duration(timeout_seconds));
    stream_.async_connect(endpoint, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->Fail("connect", ec);
      http::async_write(self->stream_, self->request_, [self](beast::error_code ec2, size_t) {
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
  // The answer is read and parsed here, not by http::async_read, so that nothing the parser
  // throws (a master may send any bytes) leaves this handler: the call fails instead.
  void Read() {
    stream_.async_read_some(
        buffer_.prepare(http_feed::ReadSize(buffer_)),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(beast::error_code ec, size_t n) {
    try {
      if (ec && ec != asio::error::eof) return Fail("receive", ec);  // Says "timed out" too.
      std::string error;
      const http_feed::Fed fed =
          http_feed::Take(parser_, buffer_, ec, n, received_, kMaxAnswerBytes, error);
      if (fed == http_feed::Fed::kFailed) return FailWith("receive: " + OneLine(error));
      if (fed == http_feed::Fed::kNeedMore) return Read();
      const auto& response = parser_.get();
      HttpReply reply;
      reply.status = static_cast<int>(response.result_int());
      reply.body = response.body();
      reply.server = OneLine(response[http::field::server].substr(0, 100));
      reply.job = OneLine(response[kJobHeader].substr(0, 256));
      reply.token_required = response[kTokenHeader] == "required";
      const auto revision = response.find(kRevisionHeader);
      if (revision != response.end()) {
        int64_t value = -1;
        const std::string_view text = revision->value();
        const auto [end, rc] = std::from_chars(text.data(), text.data() + text.size(), value);
        reply.revision = rc == std::errc() && end == text.data() + text.size() ? value : -1;
      }
      Finish(reply);
    } catch (const std::exception& e) {
      FailWith(fmt::format("receive: {}", OneLine(e.what())));
    }
  }

  void FailWith(std::string error) {
    HttpReply reply;
    reply.error = std::move(error);
    Finish(reply);
  }

  void Fail(const char* what, beast::error_code ec) {
    FailWith(ec == beast::error::timeout ? fmt::format("{}: timed out", what)
                                         : fmt::format("{}: {}", what, ec.message()));
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
  beast::flat_buffer buffer_{http_feed::kMaxBufferedBytes};
  http::request<http::string_body> request_;
  http::response_parser<http::string_body> parser_;
  uint64_t received_ = 0;
  std::function<void(const HttpReply&)> done_;
};

}  // namespace

struct KvHttpClient::State {
  asio::io_context& io;
  tcp::endpoint endpoint;
  std::string host_header;
  std::list<std::weak_ptr<Call>> calls;
  std::optional<JobToken> token;
};

KvHttpClient::KvHttpClient(asio::io_context& io, const std::string& address, int port)
    : state_(std::make_shared<State>(State{io, {}, {}, {}, {}})) {
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
  if (state_->token) request.set(http::field::authorization, state_->token->Authorization());
  request.body() = body;
  if (method != "GET") request.content_length(body.size());
  state_->calls.remove_if([](const std::weak_ptr<Call>& c) { return c.expired(); });
  auto call = std::make_shared<Call>(state_->io, std::move(done));
  state_->calls.push_back(call);
  call->Start(state_->endpoint, std::move(request), timeout_seconds);
}

void KvHttpClient::set_token(std::optional<JobToken> token) { state_->token = std::move(token); }

}  // namespace pdlaunch
