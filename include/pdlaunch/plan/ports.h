#pragma once
// A job's ports. The rules are pure (plan/ports.cc); the allocator, the bind tests and the
// search for a port's owner are effects on this host (plan/port_allocator.cc).

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pdlaunch {

/// Ports held for this launcher until destroyed. Move-only; the real one keeps a lock on each port
/// so that no other pdlaunch on the host hands it out while the job runs.
class PortReservation {
 public:
  virtual ~PortReservation() = default;
  /// The reserved ports, ascending.
  virtual const std::vector<int>& ports() const = 0;
};

/// Hands out TCP ports for trainers.
class PortAllocator {
 public:
  virtual ~PortAllocator() = default;
  /// Reserves `count` distinct free ports, ascending. Throws LaunchError if it cannot.
  virtual std::unique_ptr<PortReservation> Reserve(int count) = 0;
};

/// The race-free allocator (docs/design.md "Ports"): candidates lie outside the kernel's
/// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range) and its reserved ports, so no
/// connect() or bind(0) of another program receives them; each candidate is locked across
/// processes with an open-file-description byte lock (F_OFD_SETLK) at offset `port` of one shared
/// lock file, then checked free with bind(). Locks die with the launcher, even on SIGKILL.
/// `lock_path` defaults to env PDLAUNCH_PORT_LOCK_FILE or /tmp/pdlaunch-ports.lock.
///
/// Each Reserve() opens the lock file anew (one open file description per reservation), so two
/// reservations of one process exclude each other too; destroying a reservation releases its
/// locks. The scan starts at an offset derived from pid and time (concurrent launchers spread
/// out), walks the candidate range upwards with wrap-around, skips ip_local_reserved_ports, and
/// keeps a port only if it is locked and bindable right now on 0.0.0.0 and, when IPv6 exists,
/// on [::] (without SO_REUSEADDR, so a port with a TIME_WAIT remnant is skipped). Not enough
/// ports: LaunchError "cannot reserve 9 free ports in range 20000-32767: only 3 available".
/// The lock file cannot be opened: std::system_error naming it.
std::unique_ptr<PortAllocator> MakeLockingPortAllocator(
    std::optional<std::string> lock_path = std::nullopt);

/// As above, but scanning exactly [range.first, range.second] instead of CandidatePortRange of
/// the kernel's ephemeral range (reserved ports are still skipped). For tests and tools.
std::unique_ptr<PortAllocator> MakeLockingPortAllocator(std::optional<std::string> lock_path,
                                                        std::pair<int, int> range);

/// Candidate range of MakeLockingPortAllocator for a given ephemeral range [eph_lo, eph_hi]:
/// the largest run of ports in [20000, 65535] outside it (on a tie the lower run). Pure; exposed
/// for tests. Corner cases:
/// - eph_lo > eph_hi (no valid ephemeral range): the whole [20000, 65535].
/// - that run has fewer than 1024 ports: the largest run in [1024, 65535] outside the ephemeral
///   range, if it is larger (ports below 20000 are a last resort: common services live there).
/// - the ephemeral range covers all of [1024, 65535]: the whole [20000, 65535]; the locks still
///   keep launchers apart, only the protection against other programs' bind(0) is lost.
std::pair<int, int> CandidatePortRange(int eph_lo, int eph_hi);

/// Parses /proc/sys/net/ipv4/ip_local_port_range ("32768\t60999\n"). nullopt when malformed.
std::optional<std::pair<int, int>> ParseLocalPortRange(std::string_view text);

/// Parses /proc/sys/net/ipv4/ip_local_reserved_ports ("8080,9000-9010\n", may be empty) into
/// inclusive ranges. Malformed items are skipped.
std::vector<std::pair<int, int>> ParseReservedPorts(std::string_view text);

/// The fixed start port, by precedence: `start_port` (--start_port), env FLAGS_START_PORT, env
/// PADDLE_START_PORT. Throws UsageError naming the variable and value when not a port number.
/// An empty variable counts as unset. Only the winning source is validated. A port number is
/// 1..65535; environment values are decimal digits, surrounding whitespace allowed (as Python's
/// int()). Errors: "FLAGS_START_PORT: 'abc' is not a port number",
/// "--start_port: 70000 is not a port number".
std::optional<int> FixedStartPort(const std::optional<int>& start_port,
                                  const std::optional<std::string>& flags_start_port,
                                  const std::optional<std::string>& paddle_start_port);

/// Checks that each port can be bound on all interfaces right now. Throws LaunchError for the
/// first busy one: "port 6070 is already in use (by pid 1234, python3)" (owner from /proc when
/// visible). The test binds 0.0.0.0 and (IPv6-only) [::] WITH SO_REUSEADDR, as trainers' servers
/// do: a port held only by a TIME_WAIT remnant of an earlier run's SO_REUSEADDR socket is free
/// (Linux lets a bind pass such a remnant only when both sockets set SO_REUSEADDR); a listening
/// socket, or any socket bound without SO_REUSEADDR, is busy. Out of 1..65535: "port 65536 is
/// not a port number". Other bind errors: "port 80 cannot be bound: <strerror>".
void CheckPortsFree(const std::vector<int>& ports);

/// The process owning a TCP socket.
struct PortOwner {
  int pid = 0;
  std::string name;  ///< /proc/<pid>/comm, e.g. "python3"; empty when unreadable.
};

/// The pid listening on TCP `port` (from /proc/net/tcp{,6} and /proc/*/fd), if visible.
std::optional<int> FindPortOwner(int port);

/// As FindPortOwner, with the process name. Prefers a LISTEN socket; otherwise any socket bound
/// to the port. nullopt when no such socket or its process is not visible (another user's), and
/// for a socket that is only bound (neither listening nor connected): the kernel lists those in
/// no table of /proc/net/tcp.
std::optional<PortOwner> FindPortOwnerProcess(int port);

/// Socket inodes with local port `port` in the text of /proc/net/tcp or /proc/net/tcp6, LISTEN
/// sockets first, inode 0 (TIME_WAIT) left out. Pure.
std::vector<unsigned long> SocketInodesForPort(std::string_view proc_net_tcp, int port);

/// True for 1..65535.
bool IsPortNumber(long value);

}  // namespace pdlaunch
