#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/plan/ports.h"
#include "support/scoped_env.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

namespace fs = std::filesystem;

/// A lock file path in a fresh temp directory, so that tests do not meet other runs' locks.
class ScopedLockFile {
 public:
  std::string path() const { return dir_.File("ports.lock"); }

 private:
  testutil::ScopedTempDir dir_;
};

/// Closes a file descriptor on destruction.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::pair<int, int> EphemeralRange() {
  return ParseLocalPortRange(ReadFile("/proc/sys/net/ipv4/ip_local_port_range"))
      .value_or(std::pair{32768, 60999});
}

// True when an open file description other than a fresh one holds the lock on `port`.
bool IsPortLocked(const std::string& lock_path, int port) {
  Fd fd(::open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
  EXPECT_GE(fd.get(), 0) << lock_path;
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = port;
  lock.l_len = 1;
  EXPECT_EQ(::fcntl(fd.get(), F_OFD_GETLK, &lock), 0);
  return lock.l_type != F_UNLCK;
}

// A TCP socket bound to 0.0.0.0:`port` (0: any), listening when `listen` is set; -1 on failure.
int BoundSocket(int port, bool reuse_address, bool listen) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  if (reuse_address) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      (listen && ::listen(fd, 8) != 0)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int LocalPort(int fd) {
  sockaddr_in address{};
  socklen_t size = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  return ntohs(address.sin_port);
}

std::string OwnComm() {
  std::string comm = ReadFile("/proc/self/comm");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

// Reads exactly `size` bytes, waiting at most 30 s in all; false on EOF, error or timeout.
bool ReadFully(int fd, void* buffer, size_t size) {
  auto* bytes = static_cast<char*>(buffer);
  size_t done = 0;
  while (done < size) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, 30000) <= 0) return false;
    ssize_t n = ::read(fd, bytes + done, size - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

constexpr int kLaunchers = 16;
constexpr int kPortsPerLauncher = 9;
using PortRecord = std::array<int, kPortsPerLauncher>;

// Child of the concurrency test: waits for the start barrier (EOF), reserves, reports, and
// holds the reservation until the release barrier (EOF). Never returns.
[[noreturn]] void RunLauncherChild(const std::string& lock_path,
                                   const std::optional<std::pair<int, int>>& range, int start_fd,
                                   int result_fd, int release_fd) {
  char byte;
  while (::read(start_fd, &byte, 1) > 0) {
  }
  PortRecord record;
  record.fill(-1);
  std::unique_ptr<PortReservation> reservation;
  try {
    auto allocator =
        range ? MakeLockingPortAllocator(lock_path, *range) : MakeLockingPortAllocator(lock_path);
    reservation = allocator->Reserve(kPortsPerLauncher);
    std::copy(reservation->ports().begin(), reservation->ports().end(), record.begin());
  } catch (...) {
  }
  ssize_t written = ::write(result_fd, record.data(), sizeof record);
  while (::read(release_fd, &byte, 1) > 0) {
  }
  ::_exit(written == sizeof record && record[0] != -1 ? 0 : 1);
}

/// `count` consecutive ports of the candidate range, bindable now and held in the system-wide
/// lock file for the life of the object, so that launchers run by concurrent tests (which use
/// that file) stay out of it while the test drives an allocator with a private lock file.
class FreeWindow {
 public:
  explicit FreeWindow(int count) {
    auto [eph_lo, eph_hi] = EphemeralRange();
    auto [lo, hi] = CandidatePortRange(eph_lo, eph_hi);
    for (int first = lo + 1000; first + count - 1 <= hi; first += count) {
      try {
        hold_ = MakeLockingPortAllocator(std::nullopt, {first, first + count - 1})->Reserve(count);
        first_ = first;
        last_ = first + count - 1;
        return;
      } catch (const LaunchError&) {  // Some port is busy or held: try the next window.
      }
    }
    ADD_FAILURE() << "no window of " << count << " free ports in " << lo << "-" << hi;
  }
  int first() const { return first_; }
  int last() const { return last_; }
  std::vector<int> ports() const {
    std::vector<int> all;
    for (int port = first_; port <= last_; ++port) all.push_back(port);
    return all;
  }

 private:
  std::unique_ptr<PortReservation> hold_;
  int first_ = 0;
  int last_ = -1;
};

TEST(LockingPortAllocatorTest, ReservesAscendingDistinctPortsOutsideTheEphemeralRange) {
  ScopedLockFile lock;
  auto [eph_lo, eph_hi] = EphemeralRange();
  auto [lo, hi] = CandidatePortRange(eph_lo, eph_hi);
  std::unique_ptr<PortReservation> reservation =
      MakeLockingPortAllocator(lock.path())->Reserve(kPortsPerLauncher);
  const std::vector<int>& ports = reservation->ports();
  ASSERT_EQ(ports.size(), static_cast<size_t>(kPortsPerLauncher));
  EXPECT_TRUE(std::is_sorted(ports.begin(), ports.end()));
  EXPECT_EQ(std::set<int>(ports.begin(), ports.end()).size(), ports.size());
  for (int port : ports) {
    EXPECT_TRUE(port < eph_lo || port > eph_hi) << port;
    EXPECT_TRUE(lo <= port && port <= hi) << port;
  }
}

TEST(LockingPortAllocatorTest, ReservationsOfOneProcessNeverOverlap) {
  ScopedLockFile lock;
  std::unique_ptr<PortAllocator> allocator = MakeLockingPortAllocator(lock.path());
  std::unique_ptr<PortAllocator> other = MakeLockingPortAllocator(lock.path());
  std::vector<std::unique_ptr<PortReservation>> reservations;
  std::set<int> seen;
  for (int i = 0; i < 10; ++i) {
    reservations.push_back((i % 2 == 0 ? allocator : other)->Reserve(20));
    for (int port : reservations.back()->ports()) EXPECT_TRUE(seen.insert(port).second) << port;
  }
  EXPECT_EQ(seen.size(), 200u);
}

TEST(LockingPortAllocatorTest, ReservationsOfOneProcessSplitASmallRange) {
  ScopedLockFile lock;
  FreeWindow window(10);
  std::unique_ptr<PortAllocator> allocator =
      MakeLockingPortAllocator(lock.path(), {window.first(), window.last()});
  std::unique_ptr<PortReservation> a = allocator->Reserve(5);
  std::unique_ptr<PortReservation> b = allocator->Reserve(5);
  std::set<int> all(a->ports().begin(), a->ports().end());
  all.insert(b->ports().begin(), b->ports().end());
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(*all.begin(), window.first());
  EXPECT_EQ(*all.rbegin(), window.last());
}

TEST(LockingPortAllocatorTest, ReservedPortsAreBindable) {
  ScopedLockFile lock;
  std::unique_ptr<PortReservation> reservation = MakeLockingPortAllocator(lock.path())->Reserve(4);
  for (int port : reservation->ports()) {
    Fd socket(BoundSocket(port, /*reuse_address=*/false, /*listen=*/true));
    EXPECT_GE(socket.get(), 0) << "port " << port;
  }
}

TEST(LockingPortAllocatorTest, DestroyingAReservationReleasesItsLocks) {
  ScopedLockFile lock;
  std::unique_ptr<PortReservation> reservation = MakeLockingPortAllocator(lock.path())->Reserve(3);
  const std::vector<int> ports = reservation->ports();
  for (int port : ports) EXPECT_TRUE(IsPortLocked(lock.path(), port)) << port;
  reservation.reset();
  for (int port : ports) EXPECT_FALSE(IsPortLocked(lock.path(), port)) << port;
}

TEST(LockingPortAllocatorTest, ExhaustedRangeFailsAndIsReusableAfterRelease) {
  ScopedLockFile lock;
  FreeWindow window(8);
  const int first = window.first(), last = window.last();
  std::unique_ptr<PortAllocator> allocator = MakeLockingPortAllocator(lock.path(), {first, last});
  std::unique_ptr<PortReservation> all = allocator->Reserve(8);
  EXPECT_EQ(all->ports(), window.ports());
  try {
    allocator->Reserve(1);
    ADD_FAILURE() << "no LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot reserve 1 free ports in range " +
                                         std::to_string(first) + "-" + std::to_string(last) +
                                         ": only 0 available");
  }
  all.reset();
  EXPECT_EQ(allocator->Reserve(8)->ports(), window.ports());
}

TEST(LockingPortAllocatorTest, BusyPortInRangeIsSkipped) {
  ScopedLockFile lock;
  FreeWindow window(4);
  const int first = window.first(), last = window.last();
  Fd busy(BoundSocket(first + 1, /*reuse_address=*/true, /*listen=*/true));
  ASSERT_GE(busy.get(), 0);
  std::unique_ptr<PortAllocator> allocator = MakeLockingPortAllocator(lock.path(), {first, last});
  EXPECT_EQ(allocator->Reserve(3)->ports(), (std::vector<int>{first, first + 2, first + 3}));
  try {
    allocator->Reserve(4);
    ADD_FAILURE() << "no LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot reserve 4 free ports in range " +
                                         std::to_string(first) + "-" + std::to_string(last) +
                                         ": only 3 available");
  }
  EXPECT_FALSE(IsPortLocked(lock.path(), first + 1));
}

// Starts kLaunchers children at once, each reserving kPortsPerLauncher ports from `range` (or
// the default range) while the others hold theirs; returns all ports (-1 for a failed child).
std::vector<int> ReserveConcurrently(const std::optional<std::pair<int, int>>& range) {
  ScopedLockFile lock;
  int start[2], result[2], release[2];
  if (::pipe2(start, O_CLOEXEC) != 0 || ::pipe2(result, O_CLOEXEC) != 0 ||
      ::pipe2(release, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2 failed";
    return {};
  }
  std::vector<pid_t> children;
  for (int i = 0; i < kLaunchers; ++i) {
    pid_t pid = ::fork();
    EXPECT_GE(pid, 0);
    if (pid == 0) {
      ::close(start[1]);
      ::close(release[1]);
      RunLauncherChild(lock.path(), range, start[0], result[1], release[0]);
    }
    children.push_back(pid);
  }
  ::close(start[1]);  // Every child is waiting: go.
  std::vector<int> ports;
  for (int i = 0; i < kLaunchers; ++i) {
    PortRecord record;
    record.fill(-1);
    EXPECT_TRUE(ReadFully(result[0], record.data(), sizeof record)) << "record " << i;
    ports.insert(ports.end(), record.begin(), record.end());
  }
  ::close(release[1]);
  for (pid_t pid : children) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid;
  }
  for (int fd : {start[0], result[0], result[1], release[0]}) ::close(fd);
  return ports;
}

TEST(LockingPortAllocatorTest, ConcurrentLaunchersNeverShareAPort) {
  std::vector<int> ports = ReserveConcurrently(std::nullopt);
  EXPECT_EQ(std::count(ports.begin(), ports.end(), -1), 0);
  EXPECT_EQ(std::set<int>(ports.begin(), ports.end()).size(),
            static_cast<size_t>(kLaunchers * kPortsPerLauncher));
}

TEST(LockingPortAllocatorTest, ConcurrentLaunchersShareOutAnExactlyLargeEnoughRange) {
  // Without the locks, random scan starts in a range this small would collide at once.
  FreeWindow window(kLaunchers * kPortsPerLauncher);
  std::vector<int> ports = ReserveConcurrently(std::pair{window.first(), window.last()});
  std::sort(ports.begin(), ports.end());
  EXPECT_EQ(ports, window.ports());
}

TEST(LockingPortAllocatorTest, LocksOfAKilledLauncherAreReleased) {
  ScopedLockFile lock;
  int result[2];
  ASSERT_EQ(::pipe2(result, O_CLOEXEC), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::array<int, 3> ports{-1, -1, -1};
    try {
      auto reservation = MakeLockingPortAllocator(lock.path())->Reserve(3);
      std::copy(reservation->ports().begin(), reservation->ports().end(), ports.begin());
      if (::write(result[1], ports.data(), sizeof ports) == sizeof ports) {
        while (true) ::pause();
      }
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(result[1]);
  std::array<int, 3> ports{};
  bool reported = ReadFully(result[0], ports.data(), sizeof ports);
  ::close(result[0]);
  if (reported) {
    for (int port : ports) EXPECT_TRUE(IsPortLocked(lock.path(), port)) << port;
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(reported);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  for (int port : ports) EXPECT_FALSE(IsPortLocked(lock.path(), port)) << port;
}

TEST(LockingPortAllocatorTest, LockFileIsThisUsersOwn) {
  ScopedLockFile lock;
  const mode_t old_umask = ::umask(0);
  MakeLockingPortAllocator(lock.path())->Reserve(1);
  ::umask(old_umask);
  EXPECT_EQ(fs::status(lock.path()).permissions() & fs::perms::all, fs::perms(0600));
}

// What another local user could plant or hold is refused, naming the file: a symbolic link, a
// file of another owner, a file others may write.
TEST(LockingPortAllocatorTest, RefusesALockFileAnotherUserCouldPlantOrHold) {
  ScopedLockFile lock;
  const auto refusal = [&]() -> std::string {
    try {
      MakeLockingPortAllocator(lock.path())->Reserve(1);
    } catch (const std::system_error& e) {
      return e.what();
    }
    return "";
  };
  const std::string target = lock.path() + ".target";
  ASSERT_EQ(::close(::open(target.c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  ASSERT_EQ(::symlink(target.c_str(), lock.path().c_str()), 0);
  EXPECT_NE(refusal().find("cannot use port lock file " + lock.path() +
                           " (PDLAUNCH_PORT_LOCK_FILE): it is a symbolic link"),
            std::string::npos);
  ::unlink(lock.path().c_str());
  ::unlink(target.c_str());

  ASSERT_EQ(::close(::open(lock.path().c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  ASSERT_EQ(::chmod(lock.path().c_str(), 0666), 0);
  EXPECT_NE(refusal().find("open to other users (mode 0666; make it 0600)"), std::string::npos);
  ASSERT_EQ(::chmod(lock.path().c_str(), 0640), 0);  // Readable is enough to hold a read lock.
  EXPECT_NE(refusal().find("open to other users (mode 0640"), std::string::npos);
  ASSERT_EQ(::chmod(lock.path().c_str(), 0600), 0);

  if (::geteuid() == 0) {  // Only root can give a file away.
    ASSERT_EQ(::chown(lock.path().c_str(), 65534, 65534), 0);
    EXPECT_NE(refusal().find("owned by uid 65534, not by this user (uid 0)"), std::string::npos);
  }
}

TEST(LockingPortAllocatorTest, DefaultLockFileIsInADirectoryOnlyThisUserMayWrite) {
  std::unique_ptr<PortReservation> reservation;
  {
    const testutil::ScopedEnv unset("PDLAUNCH_PORT_LOCK_FILE", std::nullopt);
    reservation = MakeLockingPortAllocator()->Reserve(1);
  }
  const std::string runtime = "/run/user/" + std::to_string(::geteuid());
  const std::string dir = ::geteuid() == 0 ? "/run/pdlaunch"
                          : fs::is_directory(runtime)
                              ? runtime
                              : "/tmp/pdlaunch-" + std::to_string(::geteuid());
  struct stat st {};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0) << dir;
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_mode & (S_IWGRP | S_IWOTH), 0u);
  EXPECT_TRUE(IsPortLocked(dir + "/ports.lock", reservation->ports()[0]));
}

TEST(LockingPortAllocatorTest, LockPathComesFromTheEnvironmentWhenNotGiven) {
  ScopedLockFile lock;
  std::unique_ptr<PortAllocator> allocator;
  {
    const testutil::ScopedEnv given("PDLAUNCH_PORT_LOCK_FILE", lock.path());
    allocator = MakeLockingPortAllocator();
  }
  std::unique_ptr<PortReservation> reservation = allocator->Reserve(1);
  EXPECT_TRUE(IsPortLocked(lock.path(), reservation->ports()[0]));
}

TEST(LockingPortAllocatorTest, UnopenableLockFileIsASystemError) {
  try {
    MakeLockingPortAllocator("/nonexistent-dir/ports.lock")->Reserve(1);
    ADD_FAILURE() << "no std::system_error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
    EXPECT_NE(
        std::string(e.what()).find(
            "cannot open port lock file /nonexistent-dir/ports.lock (PDLAUNCH_PORT_LOCK_FILE)"),
        std::string::npos)
        << e.what();
  }
}

TEST(CheckPortsFreeTest, ListeningPortNamesTheOwner) {
  Fd listener(BoundSocket(0, /*reuse_address=*/true, /*listen=*/true));
  ASSERT_GE(listener.get(), 0);
  int port = LocalPort(listener.get());
  try {
    CheckPortsFree({port});
    ADD_FAILURE() << "no LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()), "port " + std::to_string(port) +
                                         " is already in use (by pid " +
                                         std::to_string(::getpid()) + ", " + OwnComm() + ")");
    EXPECT_EQ(e.exit_code(), kExitSetupError);
  }
}

TEST(CheckPortsFreeTest, BoundButNotListeningPortIsBusyWithoutAVisibleOwner) {
  // A socket that is only bound is in no table of /proc/net/tcp: the owner cannot be named.
  Fd bound(BoundSocket(0, /*reuse_address=*/false, /*listen=*/false));
  ASSERT_GE(bound.get(), 0);
  int port = LocalPort(bound.get());
  try {
    CheckPortsFree({port});
    ADD_FAILURE() << "no LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()), "port " + std::to_string(port) + " is already in use");
  }
}

TEST(CheckPortsFreeTest, FreePortsPass) {
  ScopedLockFile lock;
  std::unique_ptr<PortReservation> reservation = MakeLockingPortAllocator(lock.path())->Reserve(3);
  EXPECT_NO_THROW(CheckPortsFree(reservation->ports()));
  EXPECT_NO_THROW(CheckPortsFree({}));
}

TEST(CheckPortsFreeTest, OutOfRangePortIsAnError) {
  try {
    CheckPortsFree({65536});
    ADD_FAILURE() << "no LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()), "port 65536 is not a port number");
  }
}

// Leaves 0.0.0.0:port of a closed connection in TIME_WAIT (the server closes first); returns port.
int TimeWaitPort(bool reuse_address) {
  Fd listener(BoundSocket(0, reuse_address, /*listen=*/true));
  int port = LocalPort(listener.get());
  Fd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(client.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address),
            0);
  Fd server(::accept(listener.get(), nullptr, nullptr));
  server.Reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  client.Reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return port;
}

TEST(CheckPortsFreeTest, TimeWaitRemnantOfAReuseAddressSocketIsFree) {
  int port = TimeWaitPort(/*reuse_address=*/true);
  // The remnant is there: a bind without SO_REUSEADDR fails.
  Fd plain(BoundSocket(port, /*reuse_address=*/false, /*listen=*/false));
  EXPECT_LT(plain.get(), 0);
  EXPECT_NO_THROW(CheckPortsFree({port}));
}

TEST(FindPortOwnerTest, FindsTheListeningProcess) {
  Fd listener(BoundSocket(0, /*reuse_address=*/true, /*listen=*/true));
  ASSERT_GE(listener.get(), 0);
  int port = LocalPort(listener.get());
  EXPECT_EQ(FindPortOwner(port), ::getpid());
  std::optional<PortOwner> owner = FindPortOwnerProcess(port);
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ(owner->pid, ::getpid());
  EXPECT_EQ(owner->name, OwnComm());
}

TEST(FindPortOwnerTest, UnusedPortHasNoOwner) {
  ScopedLockFile lock;
  std::unique_ptr<PortReservation> reservation = MakeLockingPortAllocator(lock.path())->Reserve(1);
  EXPECT_EQ(FindPortOwner(reservation->ports()[0]), std::nullopt);
}

}  // namespace
}  // namespace pdlaunch
