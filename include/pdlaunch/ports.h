#pragma once

#include <memory>
#include <optional>
#include <string>
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
std::unique_ptr<PortAllocator> MakeLockingPortAllocator(
    std::optional<std::string> lock_path = std::nullopt);

/// Candidate range of MakeLockingPortAllocator for a given ephemeral range [eph_lo, eph_hi]:
/// the largest run of ports in [20000, 65535] outside it. Pure; exposed for tests.
std::pair<int, int> CandidatePortRange(int eph_lo, int eph_hi);

/// A fake for unit tests: hands out `first`, `first+1`, ...
class FakePortAllocator : public PortAllocator {
 public:
  explicit FakePortAllocator(int first) : next_(first) {}
  std::unique_ptr<PortReservation> Reserve(int count) override;

 private:
  int next_;
};

/// The fixed start port, by precedence: `start_port` (--start_port), env FLAGS_START_PORT, env
/// PADDLE_START_PORT. Throws UsageError naming the variable and value when not a port number.
std::optional<int> FixedStartPort(const std::optional<int>& start_port,
                                  const std::optional<std::string>& flags_start_port,
                                  const std::optional<std::string>& paddle_start_port);

/// Checks that each port can be bound on all interfaces right now. Throws LaunchError for the
/// first busy one: "port 6070 is already in use (by pid 1234, python3)" (owner from /proc when
/// visible).
void CheckPortsFree(const std::vector<int>& ports);

/// The pid listening on TCP `port` (from /proc/net/tcp{,6} and /proc/*/fd), if visible.
std::optional<int> FindPortOwner(int port);

}  // namespace pdlaunch
