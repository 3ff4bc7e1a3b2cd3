// The ports of this host: the launcher's own lock file, bind tests, the kernel's port settings
// and who holds a port (procfs). The effects around plan/ports.cc's pure rules.
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "base/small_file.h"
#include "base/unique_fd.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/switches.h"
#include "pdlaunch/plan/ports.h"

namespace pdlaunch {
namespace {

using Run = std::pair<int, int>;

/// When the kernel's setting cannot be read (Linux's default).
constexpr Run kDefaultEphemeralRange{32768, 60999};

// The lock file must be this user's own regular file that nobody else may write: another local
// user who could replace it (a symlink to a file of ours) or open it (and hold a lock on every
// port) would block or misdirect every launcher. Opened with O_NOFOLLOW; created 0600.
UniqueFd OpenLockFile(const std::string& path) {
  const auto refuse = [&](int err, std::string_view why) {
    ThrowSystemError(
        err, fmt::format("cannot use port lock file {} (PDLAUNCH_PORT_LOCK_FILE): {}", path, why));
  };
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0 && errno == EACCES) {
    // Another user's file in a sticky directory (fs.protected_regular refuses O_CREAT on it):
    // its owner named, rather than a bare "Permission denied".
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && st.st_uid != ::geteuid()) {
      refuse(EPERM,
             fmt::format("owned by uid {}, not by this user (uid {})", st.st_uid, ::geteuid()));
    }
    errno = EACCES;
  }
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ELOOP) refuse(err, "it is a symbolic link");
    ThrowSystemError(err,
                     fmt::format("cannot open port lock file {} (PDLAUNCH_PORT_LOCK_FILE)", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) refuse(errno, "fstat failed");
  if (!S_ISREG(st.st_mode)) refuse(EINVAL, "not a regular file");
  if (st.st_uid != ::geteuid()) {
    refuse(EPERM,
           fmt::format("owned by uid {}, not by this user (uid {})", st.st_uid, ::geteuid()));
  }
  // A read lock of another user's would block every F_WRLCK as well: nobody else may open it.
  if ((st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) != 0) {
    refuse(EPERM,
           fmt::format("open to other users (mode {:04o}; make it 0600)", st.st_mode & 07777));
  }
  return fd;
}

int SetPortLock(int fd, int port, short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = port;
  lock.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &lock) == 0 ? 0 : errno;
}

// True when this open file description now holds the lock on `port`; false when another holds
// it.
bool TryLockPort(int fd, int port, const std::string& path) {
  int err = SetPortLock(fd, port, F_WRLCK);
  if (err == 0) return true;
  if (err == EAGAIN || err == EACCES) return false;
  ThrowSystemError(err, fmt::format("cannot lock port {} in {}", port, path));
}

struct BindTest {
  bool reuse_address = false;
};

// errno of binding a TCP socket of `family` to the wildcard address and `port`, 0 on success.
// An IPv6 socket is dual-stack (IPV6_V6ONLY off): its bind to [::] conflicts with IPv4 and IPv6
// binds of the port alike, so one socket tests both families.
int BindError(int family, int port, BindTest test) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  UniqueFd socket_fd(fd);
  int on = 1;
  if (test.reuse_address) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  int rc = 0;
  if (family == AF_INET6) {
    int off = 0;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  }
  return rc == 0 ? 0 : errno;
}

// errno of binding the port on every address of both families (one dual-stack socket; 0.0.0.0
// where the kernel has no IPv6), 0 if free. Before, one IPv4 and one v6-only socket: socket()
// and close() cost 7 us each on the project's VM, two per port reserved.
int WildcardBindError(int port, BindTest test) {
  const int err = BindError(AF_INET6, port, test);
  return err == EAFNOSUPPORT ? BindError(AF_INET, port, test) : err;
}

bool IsReserved(int port, const std::vector<Run>& reserved) {
  return std::any_of(reserved.begin(), reserved.end(),
                     [port](const Run& run) { return run.first <= port && port <= run.second; });
}

// Where the scan starts: different for launchers started at the same moment (pid) and for
// successive calls of one launcher (time). A splitmix64 finaliser spreads the bits.
int ScanOffset(int size) {
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  uint64_t seed = static_cast<uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ULL;
  seed ^= static_cast<uint64_t>(now);
  seed ^= seed >> 30;
  seed *= 0xBF58476D1CE4E5B9ULL;
  seed ^= seed >> 27;
  seed *= 0x94D049BB133111EBULL;
  seed ^= seed >> 31;
  return static_cast<int>(seed % static_cast<uint64_t>(size));
}

Run KernelCandidateRange() {
  std::optional<std::string> text = ReadSmallFile("/proc/sys/net/ipv4/ip_local_port_range");
  std::optional<Run> ephemeral = text ? ParseLocalPortRange(*text) : std::nullopt;
  Run eph = ephemeral.value_or(kDefaultEphemeralRange);
  return CandidatePortRange(eph.first, eph.second);
}

std::vector<Run> KernelReservedPorts() {
  std::optional<std::string> text = ReadSmallFile("/proc/sys/net/ipv4/ip_local_reserved_ports");
  return text ? ParseReservedPorts(*text) : std::vector<Run>{};
}

/// Ports locked through one open file description; closing it releases every lock.
class LockingReservation : public PortReservation {
 public:
  LockingReservation(UniqueFd fd, std::vector<int> ports)
      : fd_(std::move(fd)), ports_(std::move(ports)) {}
  const std::vector<int>& ports() const override { return ports_; }

 private:
  UniqueFd fd_;
  std::vector<int> ports_;
};

class LockingPortAllocator : public PortAllocator {
 public:
  LockingPortAllocator(std::string lock_path, std::optional<Run> range)
      : lock_path_(std::move(lock_path)), range_(range) {}
  std::unique_ptr<PortReservation> Reserve(int count) override;

 private:
  std::string lock_path_;
  std::optional<Run> range_;
};

std::unique_ptr<PortReservation> LockingPortAllocator::Reserve(int count) {
  Run range = range_ ? *range_ : KernelCandidateRange();
  std::vector<Run> reserved = KernelReservedPorts();
  UniqueFd fd = OpenLockFile(lock_path_);
  std::vector<int> ports;
  const int size = std::max(0, range.second - range.first + 1);
  const int start = size > 0 ? ScanOffset(size) : 0;
  for (int i = 0; i < size && static_cast<int>(ports.size()) < count; ++i) {
    int port = range.first + (start + i) % size;
    if (IsReserved(port, reserved) || !TryLockPort(fd.get(), port, lock_path_)) continue;
    if (WildcardBindError(port, BindTest{.reuse_address = false}) == 0) {
      ports.push_back(port);
    } else {
      SetPortLock(fd.get(), port, F_UNLCK);
    }
  }
  if (static_cast<int>(ports.size()) < count) {
    throw LaunchError(fmt::format("cannot reserve {} free ports in range {}-{}: only {} available",
                                  count, range.first, range.second, ports.size()));
  }
  std::sort(ports.begin(), ports.end());
  return std::make_unique<LockingReservation>(std::move(fd), std::move(ports));
}

// The directory of the default lock file, made if missing: a directory only this user may write
// to (its own, not a symbolic link, no group or other write), so that nobody else can plant
// the file. Root's is /run/pdlaunch; another user's is /run/user/<uid> (systemd's runtime
// directory) when that is such a directory, else /tmp/pdlaunch-<uid>. From the uid alone, never
// from the environment: every launcher of one user, from a login, cron or Slurm, finds the same.
std::string PrivateDirectory() {
  const uid_t uid = ::geteuid();
  const auto usable = [&](const std::string& dir) {
    struct stat st {};
    return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
           (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
  };
  if (uid != 0) {
    std::string runtime = fmt::format("/run/user/{}", uid);
    if (usable(runtime)) return runtime;
  }
  std::string dir = uid == 0 ? "/run/pdlaunch" : fmt::format("/tmp/pdlaunch-{}", uid);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    const int error = errno;
    ThrowSystemError(error, fmt::format("cannot make the port lock directory {}", dir));
  }
  if (!usable(dir)) {
    ThrowSystemError(EPERM, fmt::format("the port lock directory {} is not this user's own "
                                        "(a directory of uid {} that no one else may write)",
                                        dir, uid));
  }
  return dir;
}

std::string ResolveLockPath(std::optional<std::string> lock_path) {
  if (lock_path && !lock_path->empty()) return *lock_path;
  if (std::optional<std::string> given = ReadSwitch(Switch::kPortLockFile)) return *given;
  return PrivateDirectory() + "/ports.lock";
}

/// A plain list of ports, nothing held.
class PlainReservation : public PortReservation {
 public:
  explicit PlainReservation(std::vector<int> ports) : ports_(std::move(ports)) {}
  const std::vector<int>& ports() const override { return ports_; }

 private:
  std::vector<int> ports_;
};

// The first pid (in /proc order) with an fd on one of `targets` ("socket:[inode]"), preferring
// the targets in their order.
std::optional<int> PidWithSocket(const std::vector<std::string>& targets) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::optional<std::pair<size_t, int>> best;  // (index in targets, pid)
  for (fs::directory_iterator proc("/proc", ec), end; !ec && proc != end; proc.increment(ec)) {
    const std::string name = proc->path().filename().native();
    int pid_value = 0;
    const auto [name_end, name_ec] =
        std::from_chars(name.data(), name.data() + name.size(), pid_value);
    if (name.empty() || name_ec != std::errc() || name_end != name.data() + name.size() ||
        pid_value <= 0) {
      continue;  // Not a process's directory.
    }
    const std::optional<long> pid = pid_value;
    std::error_code fd_ec;
    for (fs::directory_iterator fd(proc->path() / "fd", fd_ec), fd_end; !fd_ec && fd != fd_end;
         fd.increment(fd_ec)) {
      std::error_code link_ec;
      std::string link = fs::read_symlink(fd->path(), link_ec).native();
      auto hit = std::find(targets.begin(), targets.end(), link);
      if (link_ec || hit == targets.end()) continue;
      size_t index = static_cast<size_t>(hit - targets.begin());
      if (!best || index < best->first) best = std::pair{index, static_cast<int>(*pid)};
      if (index == 0) return best->second;
    }
  }
  if (!best) return std::nullopt;
  return best->second;
}

std::string ProcessName(int pid) {
  std::string name = ReadSmallFile(fmt::format("/proc/{}/comm", pid)).value_or("");
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

std::string PortInUseMessage(int port) {
  std::optional<PortOwner> owner = FindPortOwnerProcess(port);
  if (!owner) return fmt::format("port {} is already in use", port);
  if (owner->name.empty()) {
    return fmt::format("port {} is already in use (by pid {})", port, owner->pid);
  }
  return fmt::format("port {} is already in use (by pid {}, {})", port, owner->pid, owner->name);
}

}  // namespace

std::unique_ptr<PortAllocator> MakeLockingPortAllocator(std::optional<std::string> lock_path) {
  return std::make_unique<LockingPortAllocator>(ResolveLockPath(std::move(lock_path)),
                                                std::nullopt);
}

std::unique_ptr<PortAllocator> MakeLockingPortAllocator(std::optional<std::string> lock_path,
                                                        std::pair<int, int> range) {
  return std::make_unique<LockingPortAllocator>(ResolveLockPath(std::move(lock_path)), range);
}

void CheckPortsFree(const std::vector<int>& ports) {
  for (int port : ports) {
    if (!IsPortNumber(port)) {
      throw LaunchError(fmt::format("port {} is not a port number", port));
    }
    int err = WildcardBindError(port, BindTest{.reuse_address = true});
    if (err == EADDRINUSE) throw LaunchError(PortInUseMessage(port));
    if (err != 0) {
      throw LaunchError(fmt::format("port {} cannot be bound: {}", port, std::strerror(err)));
    }
  }
}

std::optional<int> FindPortOwner(int port) {
  std::optional<PortOwner> owner = FindPortOwnerProcess(port);
  if (!owner) return std::nullopt;
  return owner->pid;
}

std::optional<PortOwner> FindPortOwnerProcess(int port) {
  // Both tables as one text: the second's header line names no port and is skipped.
  const std::string tables =
      ReadSmallFile("/proc/net/tcp").value_or("") + ReadSmallFile("/proc/net/tcp6").value_or("");
  std::vector<std::string> targets;
  for (unsigned long inode : SocketInodesForPort(tables, port)) {
    targets.push_back(fmt::format("socket:[{}]", inode));
  }
  if (targets.empty()) return std::nullopt;
  std::optional<int> pid = PidWithSocket(targets);
  if (!pid) return std::nullopt;
  return PortOwner{*pid, ProcessName(*pid)};
}

}  // namespace pdlaunch
