#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "pdlaunch/plan/ports.h"
#include "test_util.h"

namespace pdlaunch::testutil {

/// A free TCP port on 127.0.0.1 right now (bound to port 0, then released).
inline int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind a loopback port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

/// A single-member etcd (Debian's etcd-server, /usr/bin/etcd) on free locked ports with a
/// temporary data dir, for tests. Start() waits until it answers /health; Stop() and Start() again
/// restart it on the same ports and data. Killed on destruction. Throws std::runtime_error (the
/// test fails, never skips) when etcd is missing or does not come up.
class EtcdServer {
 public:
  static constexpr const char* kBinary = "/usr/bin/etcd";

  explicit EtcdServer(std::chrono::milliseconds ready_timeout = std::chrono::seconds(10))
      : ports_(MakeLockingPortAllocator()->Reserve(2)),
        client_port_(ports_->ports()[0]),
        peer_port_(ports_->ports()[1]),
        ready_timeout_(ready_timeout) {
    if (::access(kBinary, X_OK) != 0) {
      throw std::runtime_error(std::string(kBinary) +
                               " not found: install Debian's etcd-server (scripts/test.sh does)");
    }
    Start();
  }
  ~EtcdServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  /// "127.0.0.1:<client port>".
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  int client_port() const { return client_port_; }
  /// etcd's own log (stdout and stderr), for failure messages.
  std::string Log() const { return ReadFile(log_path()); }

  /// Starts etcd (again) and waits until it answers.
  void Start() {
    if (pid_ > 0) throw std::runtime_error("etcd is already running");
    const std::vector<std::string> args = Arguments();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork() failed");
    if (pid_ == 0) ExecEtcd(args);
    const auto deadline = std::chrono::steady_clock::now() + ready_timeout_;
    while (!Healthy()) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("etcd exited at start-up; its log:\n" + Log());
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("etcd did not answer within " +
                                 std::to_string(ready_timeout_.count()) + " ms; its log:\n" +
                                 Log());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  /// SIGTERM and wait (SIGKILL after 10 s).
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    if (!WaitFor([this] { return ::waitpid(pid_, nullptr, WNOHANG) == pid_; })) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }

 private:
  std::string log_path() const { return dir_.File("etcd.log"); }

  std::vector<std::string> Arguments() const {
    const std::string client = "http://127.0.0.1:" + std::to_string(client_port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    return {kBinary,
            "--name=default",
            "--data-dir=" + dir_.File("data"),
            "--listen-client-urls=" + client,
            "--advertise-client-urls=" + client,
            "--listen-peer-urls=" + peer,
            "--initial-advertise-peer-urls=" + peer,
            "--initial-cluster=default=" + peer};
  }

  // In the child: never returns.
  [[noreturn]] void ExecEtcd(const std::vector<std::string>& args) const {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // No stray etcd when the test binary dies.
    const int log = ::open(log_path().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log >= 0) {
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
    }
    std::vector<char*> argv;
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(kBinary, argv.data());
    ::_exit(127);
  }

  // GET /health answers {"health":"true"} once etcd serves requests.
  bool Healthy() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(client_port_));
    timeval timeout{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    std::string answer;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      const std::string request = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
      if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
        char buffer[1024];
        for (ssize_t got; (got = ::recv(fd, buffer, sizeof(buffer), 0)) > 0;) {
          answer.append(buffer, static_cast<size_t>(got));
        }
      }
    }
    ::close(fd);
    return answer.find(R"("health":"true")") != std::string::npos;
  }

  ScopedTempDir dir_;
  // Ports of the launcher's own allocator: outside the ephemeral range (where any outgoing
  // connection, e.g. another test's client, may take a port bind(0) just reported free) and
  // locked in the default lock file for the fixture's life, restarts included.
  std::unique_ptr<PortReservation> ports_;
  const int client_port_;
  const int peer_port_;
  const std::chrono::milliseconds ready_timeout_;
  pid_t pid_ = -1;
};

}  // namespace pdlaunch::testutil
