#include "pdlaunch/options/address_syntax.h"

#include <gtest/gtest.h>

#include <string>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

std::string HostError(const std::string& token) {
  try {
    CheckHostToken(token, "--ips");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string EndpointError(const std::string& token, bool port_required = true) {
  try {
    CheckEndpointToken(token, "--servers", port_required);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(AddressSyntaxTest, HostsThatAreAccepted) {
  for (const char* host : {"10.0.0.1", "127.0.0.1", "255.255.255.255", "node-b", "gpu008",
                           "n1.cluster.local", "n1.cluster.local.", "my_host", "::1", "fd00::2",
                           "fe80::1%eth0", "0:0::1", "trainer-0.svc"}) {
    EXPECT_EQ(HostError(host), "") << host;
  }
}

TEST(AddressSyntaxTest, MalformedHostsNameTheToken) {
  const struct {
    const char* token;
    const char* message;
  } cases[] = {
      {"10.0.0.300", "--ips: '10.0.0.300' is not an IPv4 address (four numbers 0-255, a.b.c.d)"},
      {"1.2.3", "--ips: '1.2.3' is not an IPv4 address (four numbers 0-255, a.b.c.d)"},
      {"12345", "--ips: '12345' is not an IPv4 address (four numbers 0-255, a.b.c.d)"},
      {"1..2.3.4", "--ips: '1..2.3.4' is not an IPv4 address (four numbers 0-255, a.b.c.d)"},
      {"10.0.0.1.", "--ips: '10.0.0.1.' is not an IPv4 address (four numbers 0-255, a.b.c.d)"},
      {"::gg", "--ips: '::gg' is not an IPv6 address"},
      {"fd00:::1", "--ips: 'fd00:::1' is not an IPv6 address"},
      {"host:port:port", "--ips: 'host:port:port' is not an IPv6 address"},
      {"10.0.0.1:80",
       "--ips: '10.0.0.1:80' is not a host: --ips takes addresses or host names, without ports"},
      {"node-b:6070",
       "--ips: 'node-b:6070' is not a host: --ips takes addresses or host names, without ports"},
      {"a/b", "--ips: 'a/b' is not a host name or an address (letters, digits, '-', '_' and '.')"},
      {"a..b",
       "--ips: 'a..b' is not a host name or an address (letters, digits, '-', '_' and '.')"},
      {".a", "--ips: '.a' is not a host name or an address (letters, digits, '-', '_' and '.')"},
      {"ho st",
       "--ips: 'ho st' is not a host name or an address (letters, digits, '-', '_' and "
       "'.')"},
  };
  for (const auto& c : cases) EXPECT_EQ(HostError(c.token), c.message) << c.token;
  EXPECT_EQ(HostError(std::string(254, 'a')).substr(0, 7), "--ips: ");
}

TEST(AddressSyntaxTest, Endpoints) {
  for (const char* endpoint : {"10.0.0.1:6000", "node-b:1", "[fd00::1]:6000", "[::1]:65535"}) {
    EXPECT_EQ(EndpointError(endpoint), "") << endpoint;
  }
  EXPECT_EQ(EndpointError("10.0.0.1", false), "");  // --servers entries may omit the port
  EXPECT_EQ(EndpointError("[fd00::1]", false), "");
  EXPECT_EQ(EndpointError("10.0.0.1"),
            "--servers: '10.0.0.1' is not host:port (the port is missing)");
  EXPECT_EQ(EndpointError("host:1:2"),
            "--servers: 'host:1:2' is not host:port (an IPv6 address is written [address]:port)");
  EXPECT_EQ(EndpointError("fd00::1:80"),
            "--servers: 'fd00::1:80' is not host:port (an IPv6 address is written [address]:port)");
  EXPECT_EQ(EndpointError("[fd00::1"), "--servers: '[fd00::1' is not [IPv6 address]:port");
  EXPECT_EQ(EndpointError("[gg::1]:80"), "--servers: '[gg::1]:80' is not [IPv6 address]:port");
  EXPECT_EQ(EndpointError("[fd00::1]80"), "--servers: '[fd00::1]80' is not [IPv6 address]:port");
  EXPECT_EQ(EndpointError(":80"), "--servers: ':80' is not host:port (the host is missing)");
  EXPECT_EQ(EndpointError("10.0.0.300:80"),
            "--servers: '10.0.0.300' is not an IPv4 address (four numbers 0-255, a.b.c.d)");
  EXPECT_EQ(EndpointError("h:0"),
            "--servers: port of endpoint 'h:0': '0' must be between 1 and 65535");
  EXPECT_EQ(EndpointError("h:x"), "--servers: port of endpoint 'h:x': 'x' is not an integer");
}

TEST(AddressSyntaxTest, EveryFlagIsChecked) {
  auto error = [](auto set) {
    LaunchOptions options;
    set(options);
    try {
      CheckAddressArguments(options);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error([](LaunchOptions&) {}), "");  // the default --ips 127.0.0.1
  EXPECT_NE(error([](LaunchOptions& o) {
              o.ips = "10.0.0.1,10.0.0.300";
              o.given.insert("ips");
            }).find("--ips: '10.0.0.300'"),
            std::string::npos);
  EXPECT_NE(error([](LaunchOptions& o) { o.host = "1.2.3"; }).find("--host: '1.2.3'"),
            std::string::npos);
  EXPECT_NE(error([](LaunchOptions& o) { o.workers = "127.0.0.1:1,::gg:2"; }).find("--workers"),
            std::string::npos);
  EXPECT_NE(error([](LaunchOptions& o) {
              o.heter_workers = "127.0.0.1:1;10.0.0.300:2";
            }).find("--heter_workers: '10.0.0.300'"),
            std::string::npos);
  EXPECT_NE(error([](LaunchOptions& o) { o.master = "etcd://1.2.3:2379"; }).find("--master"),
            std::string::npos);
  EXPECT_EQ(error([](LaunchOptions& o) { o.master = "http://10.0.0.1:8090"; }), "");
  EXPECT_EQ(error([](LaunchOptions& o) { o.elastic_server = "http://10.0.0.1:2379/"; }), "");
  EXPECT_NE(error([](LaunchOptions& o) { o.elastic_server = "10.0.0.1"; }).find("port is missing"),
            std::string::npos);
}

}  // namespace
}  // namespace pdlaunch
