// The HTTP master's connection bounds (coord/http_master.cc) with real sockets on loopback: at a
// bound, the oldest connection (of the address, or of all) is closed to admit the new one.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "pdlaunch/coord/event_loop.h"
#include "pdlaunch/coord/http_client.h"
#include "pdlaunch/coord/http_master.h"

namespace pdlaunch {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class HttpServerBoundsTest : public ::testing::Test {
 protected:
  HttpServerBoundsTest() {
    HttpServerLimits limits;
    limits.max_connections = 3;
    limits.max_per_address = 2;
    limits.first_byte_seconds = 60;  // Idle connections stay until a bound closes them.
    server_ = std::make_unique<KvHttpServer>(io_, "127.0.0.1", 0, limits);
  }

  // A connection from `source` to the server, accepted by the server's loop before it returns.
  std::unique_ptr<tcp::socket> Connect(const std::string& source) {
    auto socket = std::make_unique<tcp::socket>(client_io_);
    socket->open(tcp::v4());
    socket->bind(tcp::endpoint(asio::ip::make_address(source), 0));
    socket->connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                                  static_cast<unsigned short>(server_->port())));
    io_.run_for(std::chrono::milliseconds(100));
    return socket;
  }

  // Whether the server closed `socket` (end of file or reset), waiting at most 5 s.
  static bool Closed(tcp::socket& socket) {
    socket.non_blocking(false);
    ::timeval timeout{5, 0};
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    char byte = 0;
    boost::system::error_code ec;
    socket.read_some(asio::buffer(&byte, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }

  asio::io_context io_;
  asio::io_context client_io_;
  std::unique_ptr<KvHttpServer> server_;
};

TEST_F(HttpServerBoundsTest, TheOldestOfTheAddressMakesRoomForItsNewest) {
  auto first = Connect("127.0.0.1");
  auto second = Connect("127.0.0.1");
  auto third = Connect("127.0.0.1");  // Past the address's 2: the first goes.
  EXPECT_TRUE(Closed(*first));
  // The newest is served: a request through it is answered.
  const std::string request = "GET /healthy HTTP/1.0\r\n\r\n";
  asio::write(*third, asio::buffer(request));
  io_.run_for(std::chrono::milliseconds(200));
  std::string answer(256, '\0');
  boost::system::error_code ec;
  answer.resize(third->read_some(asio::buffer(answer), ec));
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.0 200") << answer;
}

TEST_F(HttpServerBoundsTest, TheOldestOfAllMakesRoomEvenWhenItIsItsAddressesLast) {
  // The oldest connection is the only one of 127.0.0.4; the server is full; a new one from
  // 127.0.0.4 closes it (its address's entry goes and comes back: nothing of it is held).
  auto lone = Connect("127.0.0.4");
  auto b = Connect("127.0.0.2");
  auto c = Connect("127.0.0.3");
  auto newest = Connect("127.0.0.4");
  EXPECT_TRUE(Closed(*lone));
  auto next = Connect("127.0.0.5");  // Full again: b, the oldest now, goes.
  EXPECT_TRUE(Closed(*b));
}

}  // namespace
}  // namespace pdlaunch
