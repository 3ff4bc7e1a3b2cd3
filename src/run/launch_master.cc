// The master-rendezvous controller (docs/master.md): one node of a collective job whose nodes find
// each other through an HTTP KV master (`--master ip:port --nnodes N`, or no --master: this node
// hosts it). Phases, all on one event loop shared with the master's server and clients:
//   1. rendezvous: publish this node, wait (with a deadline) until --nnodes nodes have;
//   2. run: the ranks, supervised; heartbeats and the job's failure record watched meanwhile;
//   3. completion: report done; the hosting node stays until every node has.
// Decisions come from rendezvous.h (pure); this file carries them out.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <list>
#include <random>
#include <system_error>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/exit_status.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/base/random_seed.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/cli/master_config.h"
#include "pdlaunch/cli/options.h"
#include "pdlaunch/coord/handshake.h"
#include "pdlaunch/coord/http_master.h"
#include "pdlaunch/coord/job_ledger.h"
#include "pdlaunch/coord/rendezvous.h"
#include "pdlaunch/plan/address_lookup.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/process/run_recorder.h"
#include "pdlaunch/process/supervisor.h"
#include "run/job_status.h"
#include "run/launch_support.h"
#include "run/master_jobs.h"

namespace pdlaunch::internal {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// Seconds between two "waiting" lines.
constexpr double kStatusInterval = 5.0;
/// How long a participant's long-poll may be parked at the master.
constexpr double kPollSeconds = 20.0;
/// Polling period against a master that is not pdlaunch's (Paddle's cannot long-poll).
constexpr double kForeignPollSeconds = 0.5;
/// Longest pause between two attempts to reach the master.
constexpr double kMaxBackoff = 1.0;
/// How long an exiting launcher keeps the loop running to deliver its last record.
constexpr double kFlushSeconds = 3.0;
/// How long a host whose world cannot form serves for the nodes to read why, at most.
constexpr double kHeardSeconds = 5.0;
/// How long after the rendezvous deadline a participant waits for the host's own timeout record.
constexpr double kTimeoutGrace = 2.0;
/// Why a node of --ips is refused, said by every node: its --nnodes is its list's length.
constexpr const char* kIpsRefusalHint =
    "an --ips node counts its list: give every node the same --ips, and the same interface and "
    "run mode";
/// Pause between two tries of a write the master refused (PutConfirmed).
constexpr double kConfirmRetrySeconds = 0.25;
// How long a node waits for the node whose --host is a local master address to host it before
// hosting it itself (nodes simulated on one host; MasterNode::hosting_deferred_).
constexpr double kDeferredHostingSeconds = 3.0;

// The master's connection bounds for this job, within the descriptors this launcher may open.
HttpServerLimits JobServerLimits(int nnodes) {
  struct rlimit files {};
  const bool known = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY;
  const size_t open_files = known ? static_cast<size_t>(files.rlim_cur) : 1024;
  return ServerLimitsFor(nnodes, open_files);
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool IsLocalAddress(const std::string& address) {
  if (IsLoopbackAddress(address)) return true;
  for (const std::string& local : LocalInterfaceAddresses()) {
    if (local == address) return true;
  }
  return false;
}

/// This node's address without a master to route to: --host/POD_IP, else the first
/// non-loopback IPv4 address of an interface, else 127.0.0.1.
std::string AddressWithoutMaster(const std::optional<std::string>& host) {
  if (host) return *host;
  for (const std::string& address : LocalInterfaceAddresses()) {
    if (address.find(':') == std::string::npos && !IsLoopbackAddress(address)) return address;
  }
  PDLOG_WARN("no non-loopback IPv4 address found; this node is 127.0.0.1 (set --host)");
  return "127.0.0.1";
}

std::string DescribePeer(const PeerInfo& peer) {
  return fmt::format("{} ({})", ParseEndpoint(peer.candidate).host, peer.name);
}

/// The node of an info entry as the messages name it, "10.0.0.2 (abcdef)"; its key, escaped,
/// when the record is not a collective peer's.
std::string PeerName(const std::string& key, const std::string& value) {
  try {
    return DescribePeer(DecodePeerInfo(key, value));
  } catch (const LaunchError&) {
    return OneLine(key);
  }
}

class MasterNode {
 public:
  MasterNode(const LaunchOptions& options, const MasterSettings& settings,
             std::unique_ptr<MasterJob> job, std::string mode, JobDeadline* deadline = nullptr)
      : options_(options),
        deadline_(deadline),
        settings_(settings),
        job_(std::move(job)),
        keys_(settings.job_id),
        pod_(NewPodName()),
        terms_{settings.nnodes, std::move(mode), {}} {}

  int Run();

 private:
  enum class Phase { kRendezvous, kRunning, kCompleting, kDone };

  std::optional<int> Plan();
  std::optional<int> ChooseHost();
  std::optional<int> MeetAtIps(Clock::time_point deadline);
  void ServeHandshakePorts();
  std::optional<int> FindHandshakePort(Clock::time_point deadline);
  std::string MissingNodes() const;
  std::optional<int> ResolveMaster(Clock::time_point deadline);
  std::optional<std::string> TokenError(const HttpReply& reply) const;
  std::vector<std::string> NamesOf(const std::vector<std::string>& pods) const;
  double RunningBound() const;
  bool TryToServe();
  void SetOwnKey();
  void StartRendezvous();
  void StartServing();
  std::optional<int> WaitForWorld();
  std::optional<int> WaitIdle(std::string waiting_for);
  int RunRanks();
  int Complete();
  int Finish(int code);
  void ServeUntilHeard(const std::vector<std::string>& pods);

  // The participant's side of the wire.
  void Contact();
  void Register();
  void Poll();
  void ReadWorld();
  void TimeOut();
  void Heartbeat();
  /// Why the master did not answer, for a message: the last transport error or refusal, or
  /// that requests are simply unanswered (a stopped host, a network cut that drops packets).
  std::string UnansweredWhy() const {
    return last_error_.empty() ? "requests sent to it are unanswered" : last_error_;
  }
  void Retry(std::function<void()> call, const std::string& error);
  void Put(const std::string& key, const std::string& value, const std::string& query,
           std::function<void(bool)> done);
  void PutConfirmed(const std::string& key, const std::string& value, const std::string& query,
                    const std::string& what, Clock::time_point first);

  void OnTick();
  // The participant's decisions, from the news; a node of Paddle's master's, from the peers.
  void OnNews(const std::map<std::string, std::string>& kvs);
  void OnForeignPeers(const std::map<std::string, std::string>& info);
  // The host's, from its ledger.
  void OnStoreChange();
  void HostDecide();
  void FormWorld();
  void OnJobFailed(const JobFailure& failure);
  void OnNodesLost(const std::vector<std::string>& lost);
  bool Adopt(const std::function<MasterWorld()>& form);
  bool AdoptPeers(const std::map<std::string, std::string>& info);
  std::vector<std::string> RegisteredNames(const std::map<std::string, std::string>& info) const;
  std::string TooManyNodes(const std::map<std::string, std::string>& info) const;
  std::string TimeoutError(size_t registered, const std::vector<std::string>& names) const;
  void PublishFailure(const JobFailure& failure);
  void PublishDone();
  void Stop();
  std::string MasterText() const { return Endpoint{settings_.master_host, port_}.ToString(); }

  const LaunchOptions& options_;
  JobDeadline* deadline_;  // JobControls::deadline: null, or armed as the processes start.
  MasterSettings settings_;
  std::unique_ptr<MasterJob> job_;
  MasterKeys keys_;
  std::string pod_;
  JobTerms terms_;  // This node's --nnodes and run mode: the job's on the host.

  EventLoopHandle loop_;
  std::unique_ptr<KvHttpServer> server_;  // Set on the hosting node.
  std::unique_ptr<KvHttpClient> client_;  // Set on the others.
  std::unique_ptr<LoopTimer> tick_;
  std::unique_ptr<LoopTimer> retry_;
  std::function<void()> stop_;  // The running Supervise call's stop hook.

  std::unique_ptr<PortReservation> master_port_;
  std::unique_ptr<HandshakeClient> handshake_;  // Set while an --ips node looks for the port.
  std::string master_address_;                  // Numeric.
  bool master_is_local_ = false;  // master_address_ is this host's: it may serve the master.
  // ...but it is another local address than this node's --host (nodes simulated on one host):
  // the node whose --host it is serves it; this one only after nobody has answered there for
  // kDeferredHostingSeconds (ChooseHost).
  bool hosting_deferred_ = false;
  std::optional<Clock::time_point> unanswered_since_;
  int port_ = 0;
  std::string node_ip_;
  std::string value_;  // What this node publishes under own_key_.
  std::string own_key_;

  Phase phase_ = Phase::kRendezvous;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_status_ = Clock::now();
  Clock::time_point last_contact_ = Clock::now();
  Clock::time_point last_heartbeat_{};
  std::unique_ptr<LoopTimer> running_check_;    // The host's, armed when the world forms.
  Clock::time_point last_tick_ = Clock::now();  // OnTick's: a gap is this node's own stall.
  /// The master has not answered for --heartbeat_timeout while the job ran: this node stops
  /// and exits at once, without trying to deliver anything more to it.
  bool master_lost_ = false;
  double backoff_ = 0.1;
  bool foreign_ = false;     // The master is not pdlaunch's (Paddle's own): no long-poll, no TTL.
  bool registered_ = false;  // Our keys are at the master.
  bool answered_ = false;    // The master has answered this participant once.
  bool polling_ = false;
  int64_t revision_ = 0;
  std::string last_error_;
  std::unique_ptr<JobLedger> ledger_;  // Set on the hosting node.
  WorldEntries world_;                 // The members' keys and records, in node order.
  bool reading_world_ = false;
  bool timing_out_ = false;
  std::vector<std::string> members_;
  std::vector<std::string> peer_keys_;
  std::vector<std::string> member_addresses_;
  int own_index_ = 0;
  std::optional<std::string> rendezvous_error_;
  std::optional<JobFailure> failure_;  // The job's root cause, once known.
  bool lost_reported_ = false;
  bool complete_seen_ = false;             // news/complete: every node's processes are done.
  std::string waiting_for_;                // news/waiting: the entries of --ips the host waits for.
  std::vector<std::string> refused_pods_;  // The host's refusals: they read why before it goes.
  int pending_puts_ = 0;
  int last_put_status_ = 0;
  bool last_put_elsewhere_ =
      false;  // The last Put reached a master serving another job.  // Of the Put whose callback
              // runs: 0 when the master did not answer.
  std::minstd_rand jitter_{
      static_cast<std::minstd_rand::result_type>(RandomSeed())};  // Not the pid: 1 in a container.
  // Writes that matter (this node's done report, a failure record) are retried until the master
  // takes them or --heartbeat_timeout passes: how many are unsettled, what could not be
  // delivered, and the pauses between tries.
  int confirming_ = 0;
  bool done_published_ = false;
  std::optional<std::string> unconfirmed_;
  std::list<std::unique_ptr<LoopTimer>> write_retries_;
};

int MasterNode::Run() {
  // A log directory that cannot be made fails the node now, not after the rendezvous; one made
  // here is removed again if the world never forms (it is still empty then).
  const std::vector<fs::path> made = MissingDirectories(options_.log_dir);
  PrepareLogDir(options_.log_dir);
  if (const std::optional<int> code = Plan()) {  // Stopped by a signal.
    RemoveEmptyDirectories(made);
    return Finish(*code);
  }
  StartRendezvous();
  if (const std::optional<int> code = WaitForWorld()) {
    RemoveEmptyDirectories(made);
    return Finish(*code);
  }
  return RunRanks();
}

// A one-node job (--nnodes 1: a PS or RPC job of today's interface) contacts no master, as
// Paddle's: its world is itself.
bool Solo(const MasterSettings& settings) { return settings.nnodes == 1; }

std::optional<int> MasterNode::Plan() {
  if (!settings_.ips.empty()) {
    // This node's address is its entry of the list: its job is planned (and refused if it must
    // be) before it meets, or hosts for, any other node.
    node_ip_ = settings_.host.value_or("127.0.0.1");
    job_->Plan(node_ip_);
    if (const std::optional<int> code = ChooseHost()) return code;
    value_ = job_->Value(pod_, settings_.rank);
    SetOwnKey();
    return std::nullopt;
  }
  if (Solo(settings_)) {
    node_ip_ = settings_.host.value_or("127.0.0.1");
  } else if (const std::optional<int> code = ChooseHost()) {
    return code;
  }
  job_->Plan(node_ip_);
  value_ = job_->Value(pod_, settings_.rank);
  SetOwnKey();
  return std::nullopt;
}

// The address of the master's host into master_address_, resolved (forward only). A host name
// is tried again every 0.5 s until the rendezvous deadline, from the loop (signals handled): a
// Kubernetes service name resolves only once its pod exists. Each try is a blocking
// getaddrinfo, as long as the resolver's own timeout at most. Returns the exit code when a
// signal stopped the wait.
std::optional<int> MasterNode::ResolveMaster(Clock::time_point deadline) {
  const std::string& host = settings_.master_host;
  if (IsIpLiteral(host)) {
    master_address_ = host;
    return std::nullopt;
  }
  std::optional<std::string> failure;
  Clock::time_point last_line{};
  bool in_loop = false;           // The waiting line only from the loop, once signals are handled.
  auto attempt = [&]() -> bool {  // True when done: resolved, or failed for good.
    try {
      const std::vector<std::string> addresses = ResolveHostName(host, "--master");
      if (addresses.empty()) return false;
      PDLOG_INFO("master host {} is {}", host, addresses.front());
      master_address_ = addresses.front();
      return true;
    } catch (const LaunchError& e) {
      if (Clock::now() >= deadline) {
        failure = fmt::format(
            "cannot resolve the master's host name '{}' before the rendezvous "
            "deadline: {}",
            host, e.what());
        return true;
      }
      if (in_loop && SecondsSince(last_line) >= kStatusInterval) {
        PDLOG_WARN("waiting for the master's host name '{}' to resolve ({})", host, e.what());
        last_line = Clock::now();
      }
      return false;
    }
  };
  if (!attempt()) {
    in_loop = true;
    LoopTimer retry(loop_.get(), 0.5, [&] {
      if (stop_ && master_address_.empty() && !failure && attempt()) stop_();
    });
    const std::optional<int> code =
        WaitIdle(fmt::format("the master's host name '{}' to resolve", host));
    if (code) return code;
  }
  if (failure) throw LaunchError(*failure);
  return std::nullopt;
}

void MasterNode::SetOwnKey() {
  const bool hosting = server_ != nullptr || Solo(settings_);
  own_key_ =
      keys_.info(hosting && settings_.rank < 0 ? std::string(kHostKeyName) : pod_, settings_.rank);
}

// Serving a master on this host's address: true when this launcher now serves it, false when
// the port is taken. Taken is not proof that another launcher serves it: two sockets bound with
// SO_REUSEADDR can both fail listen() at the same instant (each sees the other already in
// LISTEN state), so Contact() tries again when nobody answers there.
bool MasterNode::TryToServe() {
  try {
    server_ = std::make_unique<KvHttpServer>(loop_.get(), master_address_, port_,
                                             JobServerLimits(settings_.nnodes));
    return true;
  } catch (const std::system_error& e) {
    if (e.code().value() != EADDRINUSE) {
      throw LaunchError(fmt::format("cannot serve the master at {}: {}", MasterText(), e.what()));
    }
    return false;
  }
}

std::optional<int> MasterNode::ChooseHost() {
  const Clock::time_point deadline =
      start_ + std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(settings_.rendezvous_timeout));
  if (!settings_.ips.empty()) return MeetAtIps(deadline);
  if (!settings_.master_given) {
    node_ip_ = AddressWithoutMaster(settings_.host);
    master_port_ = MakeLockingPortAllocator()->Reserve(1);
    port_ = master_port_->ports().front();
    server_ = std::make_unique<KvHttpServer>(loop_.get(), node_ip_, port_,
                                             JobServerLimits(settings_.nnodes));
    master_address_ = node_ip_;
    settings_.master_host = node_ip_;
    // This node's own --host and --rank would make every node that pastes the command claim
    // them (Paddle copies its whole argv).
    std::string others;
    for (const std::string& arg : WithoutOptions(options_.command_line, {"host", "rank"})) {
      others += " " + arg;
    }
    fmt::print("Copy the following command to other nodes to run.\n{}\n{} --master {}{}\n{}\n",
               std::string(80, '-'), options_.program, Endpoint{node_ip_, port_}.ToString(), others,
               std::string(80, '-'));
    std::fflush(stdout);
    if (settings_.rank >= 0) {
      PDLOG_WARN("--rank set in the command may not compatible in auto mode");
      // The command above leaves this node's --rank out, and a world with ranks on some nodes
      // only is refused: say what the others need.
      PDLOG_WARN(
          "the command above has no --rank: give each other node its own (--rank 0..{} "
          "but {}), or drop --rank here",
          settings_.nnodes - 1, settings_.rank);
    }
  } else {
    port_ = settings_.master_port;
    if (const std::optional<int> code = ResolveMaster(deadline)) return code;
    if (settings_.host) {
      node_ip_ = *settings_.host;
    } else if (auto source = SourceAddressFor(master_address_)) {
      node_ip_ = *source;
    } else {
      throw LaunchError(fmt::format("no route from this host to the master {} ({})", MasterText(),
                                    master_address_));
    }
    master_is_local_ = IsLocalAddress(master_address_);
    // 127.0.0.1 (or ::1) is nobody's --host where nodes are simulated on one host (each has its
    // own 127.x address): any node hosts it at once, as without --host.
    hosting_deferred_ = master_is_local_ && settings_.host && *settings_.host != master_address_ &&
                        master_address_ != "127.0.0.1" && master_address_ != "::1";
    if (hosting_deferred_) {
      PDLOG_INFO(
          "the master {} is on this host but is not this node's address ({}): the node of that "
          "address hosts it (this node does if none has in {:g} s)",
          MasterText(), *settings_.host, kDeferredHostingSeconds);
    } else if (master_is_local_ && !TryToServe()) {
      PDLOG_INFO(
          "the master's port {} is taken on this host (by another launcher, serving it, "
          "or by another program); this node contacts it",
          MasterText());
    }
  }
  if (server_) {
    PDLOG_INFO("this node ({}) hosts the master at {} for job {} ({} nodes)", node_ip_,
               MasterText(), settings_.job_id, settings_.nnodes);
  } else {
    PDLOG_INFO("this node is {}; master {} for job {} ({} nodes)", node_ip_, MasterText(),
               settings_.job_id, settings_.nnodes);
  }
  return std::nullopt;
}

// A node of an --ips job (docs/multi-node.md, "The nodes meet"): the node at
// ips[master_index] hosts the master, on the port given or on the first of Paddle's handshake
// ports it can bind; the others find that port by Paddle's handshake when none was given. Only
// that node hosts, even where every address of the list is local (nodes simulated on one host).
std::optional<int> MasterNode::MeetAtIps(Clock::time_point deadline) {
  node_ip_ = settings_.host.value_or("127.0.0.1");  // The run set it: this node's entry.
  master_is_local_ = settings_.hosting.value_or(false);
  if (const std::optional<int> code = ResolveMaster(deadline)) return code;
  const std::string node = fmt::format("node {} of {} in --ips", settings_.rank, settings_.nnodes);
  if (master_is_local_) {
    if (settings_.handshake) {
      ServeHandshakePorts();
    } else {
      port_ = settings_.master_port;
      if (!TryToServe()) {
        throw LaunchError(fmt::format(
            "cannot serve the master at {}: the port is taken on this host (another job's master, "
            "or another program)",
            MasterText()));
      }
    }
    PDLOG_INFO("this node ({}, {}) hosts the master at {} for job {}{}", node_ip_, node,
               MasterText(), settings_.job_id,
               settings_.handshake ? "; the other nodes find its port by Paddle's handshake" : "");
    return std::nullopt;
  }
  if (settings_.handshake) {
    if (const std::optional<int> code = FindHandshakePort(deadline)) return code;
  } else {
    port_ = settings_.master_port;
  }
  PDLOG_INFO("this node is {}, {}; master {} for job {}", node_ip_, node, MasterText(),
             settings_.job_id);
  return std::nullopt;
}

// The master on the first of Paddle's handshake ports that binds, as Paddle 3's host does; it
// answers the handshake on that same socket (http_master.cc).
void MasterNode::ServeHandshakePorts() {
  for (int port = kHandshakeFirstPort; port <= kHandshakeLastPort; ++port) {
    port_ = port;
    try {
      server_ = std::make_unique<KvHttpServer>(loop_.get(), master_address_, port_,
                                               JobServerLimits(settings_.nnodes));
      return;
    } catch (const std::system_error& e) {
      PDLOG_INFO("Port {} is not available for listening. ({})", port, e.what());
    }
  }
  throw LaunchError(fmt::format(
      "No available ports between {} and {}. (this node hosts the master of --ips at {}; free "
      "one, or give the port: --master :PORT or PADDLE_PORT)",
      kHandshakeFirstPort, kHandshakeLastPort, master_address_));
}

// The port of the master's node, by Paddle's handshake, waited for in the loop (signals
// handled) until the rendezvous deadline. Returns the exit code when a signal stopped the wait.
std::optional<int> MasterNode::FindHandshakePort(Clock::time_point deadline) {
  port_ = 0;
  handshake_ = std::make_unique<HandshakeClient>(
      loop_.get(), master_address_, kHandshakeFirstPort, kHandshakeLastPort, [this](int port) {
        port_ = port;
        PDLOG_INFO("Success found the master and port: {}, {}", settings_.master_host, port);
        Stop();
      });
  Clock::time_point last_line = Clock::now();
  const LoopTimer tick(loop_.get(), 0.25, [&] {
    if (port_ != 0) return;
    if (Clock::now() >= deadline) return Stop();
    if (SecondsSince(last_line) < kStatusInterval) return;
    last_line = Clock::now();
    PDLOG_INFO(
        "waiting for node {} ({}) to answer Paddle's handshake on ports {}-{} ({}); {:.0f} s of "
        "{} s",
        settings_.master_index, settings_.master_host, kHandshakeFirstPort, kHandshakeLastPort,
        handshake_->status(), SecondsSince(start_), settings_.rendezvous_timeout);
  });
  const std::optional<int> code =
      WaitIdle(fmt::format("the master's handshake at {} (node {} of --ips)", settings_.master_host,
                           settings_.master_index));
  const std::string last = handshake_->status();
  handshake_.reset();
  if (code) return code;
  if (port_ == 0) {
    throw LaunchError(fmt::format(
        "rendezvous timed out after {} s (--rendezvous_timeout): node {} ({}) of --ips never "
        "answered Paddle's handshake on ports {}-{} (last: {}); is its launcher started, with "
        "the same --ips?",
        settings_.rendezvous_timeout, settings_.master_index, settings_.master_host,
        kHandshakeFirstPort, kHandshakeLastPort, last));
  }
  return std::nullopt;
}

// The entries of --ips whose node has not registered yet, for the host's waiting lines: the
// first few, and how many.
std::string MasterNode::MissingNodes() const {
  std::vector<bool> seen(settings_.ips.size(), false);
  for (const auto& [key, value] : ledger_->counted()) {
    const std::optional<int> rank = job_->RankOf(value);
    if (rank && *rank >= 0 && static_cast<size_t>(*rank) < seen.size()) {
      seen[static_cast<size_t>(*rank)] = true;
    }
  }
  constexpr size_t kShown = 8;
  std::vector<std::string> missing;
  size_t count = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (seen[i]) continue;
    if (++count <= kShown) missing.push_back(fmt::format("{} (node {})", settings_.ips[i], i));
  }
  return fmt::format("{}{}", fmt::join(missing, ", "),
                     count > kShown ? fmt::format(", ... {} more", count - kShown) : "");
}

void MasterNode::StartRendezvous() {
  if (Solo(settings_)) {
    registered_ = true;
    AdoptPeers({{own_key_, value_}});
    return;
  }
  PDLOG_INFO("Waiting peer start...");
  tick_ = std::make_unique<LoopTimer>(loop_.get(), 0.25, [this] { OnTick(); });
  if (server_) return StartServing();
  client_ = std::make_unique<KvHttpClient>(loop_.get(), master_address_, port_);
  if (const JobToken* token = TheJobToken()) client_->set_token(*token);
  Contact();
}

void MasterNode::StartServing() {
  server_->set_job(settings_.job_id);
  if (const JobToken* token = TheJobToken()) server_->set_token(*token);
  KvMemoryStore& store = server_->store();
  // Room for the job's own records (info, alive, done, terms, the world) beyond the limits: any
  // client may write to the store, and one that fills it must not shut the job's nodes out.
  const size_t job_keys = 4 * static_cast<size_t>(std::max(settings_.nnodes, 1)) + 16;
  store.Reserve(keys_.job_prefix(), job_keys, job_keys * 4096);
  // The host's decisions are the host's alone: written here, refused from the network (a
  // stranger who rewrote the world made a participant start 40 ranks on its endpoints). A
  // participant's failure record stays writable, once (?create=1).
  store.Protect(keys_.world(), /*prefix=*/false);
  store.Protect(keys_.news_prefix(), /*prefix=*/true, keys_.failure());
  ledger_ = std::make_unique<JobLedger>(keys_, terms_, pod_);
  store.Put(keys_.terms(), EncodeJobTerms(terms_), std::nullopt, /*within_limits=*/false);
  store.Put(keys_.alive(pod_), "1", std::nullopt, /*within_limits=*/false);
  store.Put(own_key_, value_, std::nullopt, /*within_limits=*/false);
  registered_ = true;
  server_->set_on_change([this] { OnStoreChange(); });
  server_->Changed();
}

// The host learns of every change of the store here: only the keys it touched are read (a join
// costs O(log n), not a read of the job), then the ledger's decisions are carried out.
void MasterNode::OnStoreChange() {
  KvMemoryStore& store = server_->store();
  if (const std::vector<std::string>* changed = store.ChangedKeys()) {
    for (const std::string& key : *changed) ledger_->Update(key, store.Find(key));
  } else {
    ledger_->Resync(store.Prefix(keys_.job_prefix()));
  }
  store.ClearChanged();
  HostDecide();
}

void MasterNode::HostDecide() {
  KvMemoryStore& store = server_->store();
  bool wrote = false;
  // A node whose --nnodes or run mode is not the job's would form a world of its own (silent
  // wrong training): the host refuses it, naming it, and the node stops when it reads why.
  for (const auto& [key, value] : ledger_->TakeLate()) {
    PDLOG_WARN(
        "node {} registered for job {} after its world of {} nodes formed: it is not part "
        "of the job (one too many, or late from an earlier run)",
        PeerName(key, value), settings_.job_id, settings_.nnodes);
  }
  for (const JobLedger::Refusal& refusal : ledger_->TakeRefusals()) {
    PDLOG_WARN("refused node {} for job {}: {}", refusal.node, settings_.job_id, refusal.why);
    store.Put(keys_.refused(refusal.pod), refusal.why, std::nullopt, /*within_limits=*/false);
    wrote = true;
    refused_pods_.push_back(refusal.pod);  // It reads why before the host leaves (Finish).
    if (!settings_.ips.empty() && phase_ == Phase::kRendezvous && !rendezvous_error_) {
      // The list names every node: no other can take the refused one's place.
      // Its --nnodes is its list's length: a different one is a different list.
      rendezvous_error_ = fmt::format("node {} of --ips was refused: {}; {}", refusal.node,
                                      refusal.why, kIpsRefusalHint);
      store.Put(keys_.formed(), EncodeFormed({0, *rendezvous_error_}), std::nullopt,
                /*within_limits=*/false);
      Stop();
    }
  }
  // A node that left before the job started (its heartbeat expired) is forgotten, so that a
  // restarted node can take its place.
  std::vector<std::string> left;
  for (const std::string& key : ledger_->TakeStaleInfo(&left)) wrote |= store.Delete(key);
  for (const std::string& pod : std::set<std::string>(left.begin(), left.end())) {
    PDLOG_WARN(
        "node {} left before the job started (no heartbeat for {} s); forgetting it until its "
        "heartbeat comes back",
        OneLine(pod), settings_.heartbeat_timeout);
  }
  // A node that was only slow (paused, or starved on a loaded host) counts again: its records
  // go back where it wrote them, and it never knew it was forgotten.
  for (const auto& [key, value] : ledger_->TakeRevived()) {
    PDLOG_INFO("node {} is back: its heartbeat resumed before the world formed",
               PeerName(key, value));
    store.Put(key, value, std::nullopt, /*within_limits=*/false);
    ledger_->Update(key, &value);
    wrote = true;
  }
  if (phase_ == Phase::kRendezvous && !rendezvous_error_) {
    FormWorld();
  } else if (phase_ == Phase::kRunning || phase_ == Phase::kCompleting) {
    const MasterStep step = ledger_->Step();
    switch (step.kind) {
      case MasterStep::Kind::kContinue:
        break;
      case MasterStep::Kind::kJobFailed:
        OnJobFailed(step.failure);
        break;
      case MasterStep::Kind::kNodesLost:
        OnNodesLost(step.lost);
        break;
      case MasterStep::Kind::kAllDone:
        // A PS node's servers wait for this to stop.
        wrote |= store.PutIfAbsent(keys_.complete(), "1", /*within_limits=*/false);
        if (phase_ == Phase::kCompleting) Stop();
        break;
    }
  }
  if (wrote) server_->Changed();
}

// The world forms when --nnodes nodes count: the host orders them (OrderKeys, as Paddle's nodes
// do) and publishes the world once; every participant reads it once.
void MasterNode::FormWorld() {
  const std::map<std::string, std::string>& counted = ledger_->counted();
  if (static_cast<int>(counted.size()) < settings_.nnodes) return;
  KvMemoryStore& store = server_->store();
  if (static_cast<int>(counted.size()) > settings_.nnodes) {
    rendezvous_error_ = TooManyNodes(counted);
    Stop();
  } else if (AdoptPeers(counted)) {
    store.Put(keys_.world(), EncodeWorld(world_), std::nullopt, /*within_limits=*/false);
    store.Put(keys_.formed(), EncodeFormed({settings_.nnodes, {}}), std::nullopt,
              /*within_limits=*/false);
    ledger_->Form(members_);
    // A member that joined and never runs ranks (a stranger's records, say) would keep the host
    // waiting for its done report for as long as it keeps a heartbeat: it is given a bound.
    const double bound = RunningBound();
    running_check_ = std::make_unique<LoopTimer>(loop_.get(), bound, [this, bound] {
      auto keep = std::move(running_check_);  // Destroyed after the call: no re-arm.
      const std::vector<std::string> idle = ledger_->NotRunning();
      if (idle.empty()) return;
      PublishFailure(JobFailure{
          node_ip_, "",
          fmt::format("node {} joined the world of job {} but started no rank within {} s: a "
                      "stranger's records, or a launcher of another version; stopping the job",
                      fmt::join(NamesOf(idle), ", "), settings_.job_id, bound),
          1});
    });
    return server_->Changed();
  }
  // Every node exits with the host's reason (two nodes with one --rank, say).
  store.Put(keys_.formed(), EncodeFormed({0, *rendezvous_error_}), std::nullopt,
            /*within_limits=*/false);
  server_->Changed();
}

// This node's world, from `form` (which throws LaunchError on bad peers or ranks): true when it
// is formed, and the rendezvous ends; false with rendezvous_error_ set.
bool MasterNode::Adopt(const std::function<MasterWorld()>& form) {
  try {
    const MasterWorld world = form();
    members_ = world.members;
    member_addresses_ = world.addresses;
    peer_keys_ = world.keys;
    own_index_ = world.own_index;
    if (job_->RunsProcesses()) {  // An exchange's order is its own: the report keeps the job's.
      TheRunReport().node_rank = own_index_;
      TheRunReport().nodes = static_cast<int>(member_addresses_.size());
    }
  } catch (const LaunchError& e) {
    rendezvous_error_ = e.what();
    Stop();
    return false;
  }
  phase_ = Phase::kRunning;
  last_heartbeat_ = {};  // The next tick says "running" at once.
  if (!Solo(settings_)) {
    // A thousand addresses on every node's console say nothing: the first ones, and how many.
    constexpr size_t kShown = 16;
    const size_t shown = std::min(member_addresses_.size(), kShown);
    const std::string more = member_addresses_.size() > shown
                                 ? fmt::format(", ... {} more", member_addresses_.size() - shown)
                                 : std::string();
    PDLOG_INFO("all {} nodes joined in {:.3f} s; this node is rank {} of [{}{}]", settings_.nnodes,
               SecondsSince(start_), own_index_,
               fmt::join(member_addresses_.begin(), member_addresses_.begin() + shown, ", "), more);
  }
  Stop();
  return true;
}

// The world formed here from every peer (the host, a one-node job, a node of Paddle's master),
// ordered by Paddle's rule; world_ keeps the members' records for the pod log.
bool MasterNode::AdoptPeers(const std::map<std::string, std::string>& info) {
  if (!Adopt([&] { return job_->Form(info, own_key_, settings_.sort_ip); })) return false;
  for (const std::string& key : peer_keys_) world_.emplace_back(key, info.at(key));
  return true;
}

// Phase 1 waits in the supervisor's loop (signals handled) with no processes. Returns the exit
// code when the rendezvous did not complete.
// A wait in the supervisor's loop with no processes, until stop_ is called (the loop's handlers
// on the shared io) or a signal comes: then its exit code, 128 + n. Today's console says
// "Terminating with signal N" and "Exit with signal N" here too, as Paddle's handler does from
// the start of its rendezvous; `waiting_for` is told with the signal.
std::optional<int> MasterNode::WaitIdle(std::string waiting_for) {
  SupervisorOptions wait;
  wait.io = &loop_.get();
  wait.stop_hook = &stop_;
  ConsoleSettings console;
  if (UsesNewInterface(options_)) console.pod_name = pod_;
  console.waiting_for = std::move(waiting_for);
  wait.status = JobStatus(std::move(console));
  const SupervisorResult result = Supervise({}, wait);
  if (result.signal) return 128 + *result.signal;
  return std::nullopt;
}

std::optional<int> MasterNode::WaitForWorld() {
  if (phase_ == Phase::kRendezvous && !rendezvous_error_) {
    if (const std::optional<int> code = WaitIdle("the other nodes")) return code;
  }
  if (rendezvous_error_) {
    std::fflush(stdout);
    fmt::print(stderr, "launch: error: {}\n", OneLine(*rendezvous_error_));
    TheRunReport().reason = OneLine(*rendezvous_error_);  // --report's reason: the message.
    return kExitSetupError;
  }
  if (phase_ == Phase::kRendezvous && failure_) {  // Another node failed before the world came.
    PDLOG_ERROR("job failed before this node started: {}", failure_->cause);
    return failure_->exit_code;
  }
  return std::nullopt;
}

// The job token on both sides or on neither (docs/master.md, "Exposure"): a node without it is
// refused by the master (401), and a node with it refuses a master that does not check it.
std::optional<std::string> MasterNode::TokenError(const HttpReply& reply) const {
  const bool has_token = TheJobToken() != nullptr;
  if (reply.status == 401 && reply.token_required) {
    return fmt::format(
        "the master at {} takes a job token, and this node {}: give every node the same {} "
        "(docs/master.md, \"Exposure\")",
        MasterText(), has_token ? "presents another one" : "has none in its environment",
        kJobTokenVariable);
  }
  if (reply.status != 0 && has_token && !reply.token_required) {
    return fmt::format(
        "this node has a job token ({}), and the master at {} does not check one ({}): give "
        "every node the same token, or none (a master of Paddle's cannot check one; "
        "docs/master.md, \"Exposure\")",
        kJobTokenVariable, MasterText(),
        reply.server.starts_with("pdlaunch/") ? "its node has none" : reply.server);
  }
  return std::nullopt;
}

void MasterNode::Contact() {
  client_->Request("GET", "/healthy", "", 5.0, [this](const HttpReply& reply) {
    if (reply.status != 0) {
      unanswered_since_.reset();
    } else if (!unanswered_since_) {
      unanswered_since_ = Clock::now();
    }
    const bool may_host =
        !hosting_deferred_ ||
        (unanswered_since_ && SecondsSince(*unanswered_since_) >= kDeferredHostingSeconds);
    if (reply.status == 0 && master_is_local_ && may_host && TryToServe()) {
      // Nobody listens at the master's port on this host, and now this launcher does: the
      // launcher that had it is gone, or both lost the race described at TryToServe().
      PDLOG_INFO(
          "nobody answered at the master {} ({}); this node ({}) hosts it now for job {} "
          "({} nodes)",
          MasterText(), reply.error, node_ip_, settings_.job_id, settings_.nnodes);
      client_.reset();
      SetOwnKey();
      return StartServing();
    }
    if (auto error = TokenError(reply)) {
      rendezvous_error_ = std::move(*error);
      return Stop();
    }
    if (reply.status != 200) {
      return Retry([this] { Contact(); },
                   reply.status == 0 ? reply.error : fmt::format("HTTP {}", reply.status));
    }
    foreign_ = !reply.server.starts_with("pdlaunch/");
    // One master serves one job: a node of another job would wait on a host that leaves when
    // its own job is done (docs/master.md, "Several jobs on one master").
    if (auto error = ForeignJobError(MasterText(), reply.server, reply.job, settings_.job_id)) {
      // In a sequence of jobs (the auto tuner's), the master of the previous one may still be
      // answering its last reports: asked again until it is gone and the next is served.
      if (settings_.sequential) return Retry([this] { Contact(); }, *error);
      rendezvous_error_ = std::move(*error);
      return Stop();
    }
    if (foreign_) {
      PDLOG_WARN("the master at {} is not pdlaunch's ({}): no failure detection between nodes",
                 MasterText(), reply.server);
    }
    backoff_ = 0.1;
    last_contact_ = Clock::now();
    answered_ = true;
    Register();
  });
}

void MasterNode::Register() {
  const std::string ttl = fmt::format("?ttl={}", settings_.heartbeat_timeout);
  const auto put_info = [this](bool ok) {
    if (!ok) return Retry([this] { Register(); }, last_error_);
    Put(own_key_, value_, "", [this](bool ok2) {
      if (!ok2) return Retry([this] { Register(); }, last_error_);
      registered_ = true;
      last_heartbeat_ = Clock::now();
      Poll();
    });
  };
  if (foreign_) return put_info(true);
  // The terms before the info key: the host never counts a node whose terms it has not seen.
  Put(keys_.alive(pod_), "1", ttl, [this, put_info](bool ok) {
    if (!ok) return put_info(false);
    JobTerms mine = terms_;
    mine.node = node_ip_;
    Put(keys_.node_terms(pod_), EncodeJobTerms(mine), "", put_info);
  });
}

void MasterNode::Put(const std::string& key, const std::string& value, const std::string& query,
                     std::function<void(bool)> done) {
  ++pending_puts_;
  client_->Request(
      "PUT", key + query, value, 5.0, [this, done = std::move(done)](const HttpReply& reply) {
        --pending_puts_;
        last_put_status_ = reply.status;
        // A master that serves another job now is not this job's: its host left
        // (its job was over) and a job of a sequence, or another, took the port.
        // What is sent there is not delivered, nor does it count as contact.
        last_put_elsewhere_ = !foreign_ && !reply.job.empty() && reply.job != settings_.job_id;
        const bool ok = !last_put_elsewhere_ && (reply.status == 200 || reply.status == 412);
        if (ok) {
          last_contact_ = Clock::now();
        } else if (last_put_elsewhere_) {
          last_error_ = fmt::format("the master now serves job {}", reply.job);
        } else {
          last_error_ = reply.status == 0 ? reply.error : fmt::format("HTTP {}", reply.status);
        }
        if (done) done(ok);
      });
}

void MasterNode::PutConfirmed(const std::string& key, const std::string& value,
                              const std::string& query, const std::string& what,
                              Clock::time_point first) {
  ++confirming_;
  Put(key, value, query, [=, this](bool ok) {
    if (ok) {
      --confirming_;
      return;
    }
    if (last_put_elsewhere_) {
      // The job's master is gone and another job serves its port: the job is over there.
      --confirming_;
      PDLOG_DEBUG("not delivering this node's {}: {}", what, last_error_);
      return;
    }
    // A master that answers and refuses (413: its store is full) is given --heartbeat_timeout;
    // one that does not answer (gone: its job ended or failed, or the network) the flush time.
    const double limit = last_put_status_ != 0 ? settings_.heartbeat_timeout : kFlushSeconds;
    if (SecondsSince(first) >= limit) {
      --confirming_;
      if (!unconfirmed_) {
        unconfirmed_ = fmt::format("the master at {} did not take this node's {} in {:.0f} s ({})",
                                   MasterText(), what, SecondsSince(first), UnansweredWhy());
      }
      return;
    }
    const auto it = write_retries_.insert(write_retries_.end(), nullptr);
    // In a sequence of jobs the next one takes the port within milliseconds: asked again soon.
    const double pause = settings_.sequential ? 0.02 : kConfirmRetrySeconds;
    *it = std::make_unique<LoopTimer>(loop_.get(), pause, [=, this] {
      const std::unique_ptr<LoopTimer> keep = std::move(*it);  // Destroyed after: no re-arm.
      write_retries_.erase(it);
      --confirming_;
      PutConfirmed(key, value, query, what, first);
    });
  });
}

// A participant long-polls the news (small: terms, refusals, the world formed, a failure), which
// no join, heartbeat or report touches; a node of Paddle's master polls the peers.
void MasterNode::Poll() {
  if (polling_ || phase_ == Phase::kDone) return;
  polling_ = true;
  const std::string target =
      foreign_ ? keys_.info_prefix()
               : fmt::format("{}?wait={}&timeout={}", keys_.news_prefix(), revision_, kPollSeconds);
  client_->Request("GET", target, "", kPollSeconds + 5.0, [this](const HttpReply& reply) {
    polling_ = false;
    if (reply.status != 200 && reply.status != 404) {
      return Retry([this] { Poll(); },
                   reply.status == 0 ? reply.error : fmt::format("HTTP {}", reply.status));
    }
    last_contact_ = Clock::now();
    backoff_ = 0.1;
    if (reply.revision >= 0) revision_ = reply.revision;
    std::map<std::string, std::string> kvs;
    if (reply.status == 200) {
      try {
        kvs = DecodeJsonObject(reply.body);
      } catch (const LaunchError& e) {
        return Retry([this] { Poll(); }, e.what());
      }
    }
    if (foreign_) {
      OnForeignPeers(kvs);
      retry_ = std::make_unique<LoopTimer>(loop_.get(), kForeignPollSeconds, [this] {
        retry_.reset();
        Poll();
      });
      return;
    }
    OnNews(kvs);
    Poll();
  });
}

// The world the host formed, read once (one shared answer at the master for every node).
void MasterNode::ReadWorld() {
  if (phase_ != Phase::kRendezvous || rendezvous_error_) return;
  reading_world_ = true;
  client_->Request("GET", keys_.world(), "", 30.0, [this](const HttpReply& reply) {
    if (phase_ != Phase::kRendezvous || rendezvous_error_) return;
    if (reply.status != 200) {
      return Retry([this] { ReadWorld(); },
                   reply.status == 0 ? reply.error : fmt::format("HTTP {}", reply.status));
    }
    last_contact_ = Clock::now();
    try {
      const std::map<std::string, std::string> kvs = DecodeJsonObject(reply.body);
      const auto it = kvs.find(keys_.world());
      if (it == kvs.end()) throw LaunchError("no world record in the master's answer");
      world_ = DecodeWorld(it->second, static_cast<size_t>(settings_.nnodes));
      if (static_cast<int>(world_.size()) != settings_.nnodes) {
        throw LaunchError(fmt::format("the master's world has {} nodes, --nnodes is {}",
                                      world_.size(), settings_.nnodes));
      }
    } catch (const LaunchError& e) {
      // A record that will not change: waiting would only hide it.
      rendezvous_error_ = fmt::format("cannot read the world of job {} from the master at {}: {}",
                                      settings_.job_id, MasterText(), OneLine(e.what()));
      return Stop();
    }
    const bool member = std::any_of(world_.begin(), world_.end(),
                                    [&](const auto& entry) { return entry.first == own_key_; });
    if (!member) {
      // One node too many, or a node late from an earlier run: named by address, as are the
      // members (not by store key).
      std::vector<std::string> members;
      for (const auto& [key, value] : world_) members.push_back(PeerName(key, value));
      rendezvous_error_ = fmt::format(
          "the world of job {} formed at master {} with its {} nodes [{}] without this node ({} "
          "({})): is this node one too many (--nnodes {}), or late from an earlier run?",
          settings_.job_id, MasterText(), world_.size(), fmt::join(members, ", "), node_ip_, pod_,
          settings_.nnodes);
      return Stop();
    }
    const auto own = std::find_if(world_.begin(), world_.end(),
                                  [&](const auto& entry) { return entry.first == own_key_; });
    if (own->second != value_) {
      // Not what this node published: someone else wrote its record, or the world.
      rendezvous_error_ = fmt::format(
          "the world of job {} at master {} holds another record for this node ({}) than the "
          "one it published: it was written by someone else; not starting",
          settings_.job_id, MasterText(), node_ip_);
      return Stop();
    }
    Adopt([&] { return job_->Take(world_, own_key_); });
  });
}

void MasterNode::Retry(std::function<void()> call, const std::string& error) {
  last_error_ = error;
  // Before the world forms, a thousand nodes may be knocking at once: a short pause with jitter
  // (50 to 100 ms) spreads them without leaving a node idle for seconds; afterwards, back-off
  // doubling from 0.1 s to 1 s.
  // In a sequence of jobs (the auto tuner's), the master is away only between two jobs, for
  // milliseconds: 10 to 20 ms, so that the gap between trials stays that short.
  const double pause = settings_.sequential ? 0.01 : 0.05;
  const double delay = phase_ == Phase::kRendezvous
                           ? pause + pause * std::uniform_real_distribution<double>()(jitter_)
                           : backoff_;
  backoff_ = std::min(kMaxBackoff, backoff_ * 2);
  retry_ = std::make_unique<LoopTimer>(loop_.get(), delay, [this, call = std::move(call)] {
    auto keep = std::move(retry_);  // Destroyed after the call: no re-arm.
    call();
  });
}

void MasterNode::Heartbeat() {
  if (!registered_ || foreign_ || !client_ || phase_ == Phase::kDone) return;
  if (SecondsSince(last_heartbeat_) < settings_.heartbeat_timeout / 4) return;
  last_heartbeat_ = Clock::now();
  // Once its world formed, the heartbeat says so: the host fails a member that never does.
  const std::string_view value = phase_ == Phase::kRendezvous ? "1" : kRunningHeartbeat;
  Put(keys_.alive(pod_), std::string(value), fmt::format("?ttl={}", settings_.heartbeat_timeout),
      nullptr);
}

void MasterNode::OnTick() {
  if (phase_ == Phase::kDone) return;
  // This launcher itself did not run for a while (stopped, or starved on a loaded host): the
  // master's silence over that time says nothing about the master. It is given a fresh
  // --heartbeat_timeout from now, while this node's heartbeat goes out at once.
  const double stalled = SecondsSince(last_tick_);
  last_tick_ = Clock::now();
  if (stalled > std::max(1.0, settings_.heartbeat_timeout / 2)) {
    PDLOG_INFO("this node did not run for {:.1f} s; the master gets {} s from now", stalled,
               settings_.heartbeat_timeout);
    last_contact_ = Clock::now();
    last_heartbeat_ = {};
  }
  Heartbeat();
  if (client_ && registered_ && !foreign_ && phase_ != Phase::kRendezvous &&
      SecondsSince(last_contact_) > settings_.heartbeat_timeout && !failure_) {
    failure_ = JobFailure{MasterText(), "",
                          fmt::format("lost the master at {}: no answer for {} s ({})",
                                      MasterText(), settings_.heartbeat_timeout, UnansweredWhy()),
                          1};
    master_lost_ = true;  // Nothing more is sent to it: Finish does not wait for it.
    PDLOG_ERROR("{}", failure_->cause);
    Stop();
    return;
  }
  if (phase_ != Phase::kRendezvous) return;
  // Registered, then the master went away (its launcher failed or was killed before the world
  // formed): waiting for the rendezvous deadline would only hide that.
  if (client_ && answered_ && !foreign_ &&
      SecondsSince(last_contact_) > settings_.heartbeat_timeout) {
    rendezvous_error_ = fmt::format(
        "lost the master at {} during the rendezvous: no answer for {} s ({}); see the log of "
        "the node that hosted it",
        MasterText(), settings_.heartbeat_timeout, UnansweredWhy());
    Stop();
    return;
  }
  // A registered participant gives the host a moment to say why first (it names the nodes).
  const double grace = !ledger_ && registered_ ? kTimeoutGrace : 0;
  if (SecondsSince(start_) > settings_.rendezvous_timeout + grace) return TimeOut();
  if (SecondsSince(last_status_) >= kStatusInterval) {
    last_status_ = Clock::now();
    if (!registered_) {
      PDLOG_WARN("master not ready: {} does not answer yet ({}); retrying until {} s", MasterText(),
                 last_error_.empty() ? "no answer to the first request yet: the connection is "
                                       "queued at the master or its answer is on the way"
                                     : last_error_,
                 settings_.rendezvous_timeout);
    } else if (ledger_ && !settings_.ips.empty()) {
      const std::string missing = MissingNodes();
      PDLOG_INFO("waiting for {} more node(s) of {} at master {}: {} (job {}, {:.0f} s of {} s)",
                 settings_.nnodes - static_cast<int>(ledger_->counted().size()), settings_.nnodes,
                 MasterText(), missing, settings_.job_id, SecondsSince(start_),
                 settings_.rendezvous_timeout);
      // Every node of the list says whom the job waits for, not only this one.
      KvMemoryStore& store = server_->store();
      const std::string* said = store.Find(keys_.waiting());
      if (said == nullptr || *said != missing) {
        store.Put(keys_.waiting(), missing, std::nullopt, /*within_limits=*/false);
        server_->Changed();
      }
    } else if (!settings_.ips.empty() && registered_ && !waiting_for_.empty()) {
      PDLOG_INFO(
          "waiting for the world of {} nodes at master {}, which waits for {} (job {}, {:.0f} s "
          "of {} s)",
          settings_.nnodes, MasterText(), waiting_for_, settings_.job_id, SecondsSince(start_),
          settings_.rendezvous_timeout);
    } else if (ledger_) {
      PDLOG_INFO("waiting for {} more node(s) of {} at master {} (job {}, {:.0f} s of {} s)",
                 settings_.nnodes - static_cast<int>(ledger_->counted().size()), settings_.nnodes,
                 MasterText(), settings_.job_id, SecondsSince(start_),
                 settings_.rendezvous_timeout);
    } else {
      PDLOG_INFO("waiting for the world of {} nodes at master {} (job {}, {:.0f} s of {} s)",
                 settings_.nnodes, MasterText(), settings_.job_id, SecondsSince(start_),
                 settings_.rendezvous_timeout);
    }
  }
}

// More nodes registered than --nnodes (Paddle waits forever): the error names them.
std::string MasterNode::TooManyNodes(const std::map<std::string, std::string>& info) const {
  // By address and pod name, as the deadline's line names them (not by store key).
  return fmt::format("{} nodes registered at master {} for job {} but --nnodes is {}: {}",
                     info.size(), MasterText(), settings_.job_id, settings_.nnodes,
                     fmt::join(RegisteredNames(info), ", "));
}

std::vector<std::string> MasterNode::RegisteredNames(
    const std::map<std::string, std::string>& info) const {
  std::vector<std::string> names;
  for (const auto& [key, value] : info) {
    if (key.starts_with(keys_.info_prefix())) names.push_back(PeerName(key, value));
  }
  return names;
}

std::string MasterNode::TimeoutError(size_t registered,
                                     const std::vector<std::string>& names) const {
  return fmt::format(
      "rendezvous timed out after {} s (--rendezvous_timeout) at master {}: {} of {} nodes "
      "registered [{}], {} missing{}",
      settings_.rendezvous_timeout, MasterText(), registered, settings_.nnodes,
      fmt::join(names, ", "), settings_.nnodes - static_cast<int>(registered),
      registered_ ? "" : fmt::format("; this node never reached the master ({})", UnansweredWhy()));
}

// The rendezvous deadline passed: the error names the nodes that registered. The host knows
// them and publishes its error for every node; a participant that did not hear it asks the
// master once (for at most 2 s).
void MasterNode::TimeOut() {
  if (timing_out_) return;
  timing_out_ = true;
  if (ledger_) {
    rendezvous_error_ =
        TimeoutError(ledger_->counted().size(), RegisteredNames(ledger_->counted()));
    server_->store().Put(keys_.formed(), EncodeFormed({0, *rendezvous_error_}), std::nullopt,
                         /*within_limits=*/false);
    server_->Changed();
    return Stop();
  }
  if (!client_ || !answered_) {
    rendezvous_error_ = TimeoutError(0, {});
    return Stop();
  }
  client_->Request("GET", keys_.info_prefix(), "", 2.0, [this](const HttpReply& reply) {
    std::map<std::string, std::string> info;
    if (reply.status == 200) {
      try {
        info = DecodeJsonObject(reply.body);
      } catch (const LaunchError&) {
      }
    }
    const std::vector<std::string> names = RegisteredNames(info);
    rendezvous_error_ = TimeoutError(names.size(), names);
    Stop();
  });
}

void MasterNode::OnNews(const std::map<std::string, std::string>& kvs) {
  if (!registered_ || phase_ == Phase::kDone) return;
  if (const auto it = kvs.find(keys_.waiting()); it != kvs.end()) {
    waiting_for_ = OneLine(std::string_view(it->second).substr(0, 1024));
  }
  const JobNews news = ParseNews(keys_, pod_, kvs);
  const NodeStep step = DecideNodeStep(news, terms_, phase_ != Phase::kRendezvous);
  switch (step.kind) {
    case NodeStep::Kind::kWait:
      return;
    case NodeStep::Kind::kRefused:
      Put(keys_.heard(pod_), "1", "", nullptr);  // The host may leave once all have read it.
      rendezvous_error_ =
          fmt::format("the master at {} refused this node for job {}: {}; {}", MasterText(),
                      settings_.job_id, step.reason,
                      settings_.ips.empty() ? "give every node the same --nnodes and run mode"
                                            : kIpsRefusalHint);
      return Stop();
    case NodeStep::Kind::kCannotForm:
      rendezvous_error_ = step.reason;
      Put(keys_.heard(pod_), "1", "", nullptr);  // The host may leave once all have read it.
      return Stop();
    case NodeStep::Kind::kReadWorld:
      if (!reading_world_) ReadWorld();
      return;
    case NodeStep::Kind::kJobFailed:
      return OnJobFailed(step.failure);
    case NodeStep::Kind::kComplete:
      if (!complete_seen_ && !settings_.ips.empty()) Put(keys_.heard(pod_), "1", "", nullptr);
      complete_seen_ = true;
      if (phase_ == Phase::kCompleting) Stop();
      return;
  }
}

// A node of Paddle's master: the world forms when --nnodes peers are there, each node ordering
// them itself (as Paddle's do); no failure detection between nodes.
void MasterNode::OnForeignPeers(const std::map<std::string, std::string>& info) {
  if (!registered_ || phase_ != Phase::kRendezvous) return;
  if (static_cast<int>(info.size()) < settings_.nnodes) return;
  if (static_cast<int>(info.size()) > settings_.nnodes) {
    rendezvous_error_ = TooManyNodes(info);
    return Stop();
  }
  AdoptPeers(info);
}

void MasterNode::OnJobFailed(const JobFailure& failure) {
  if (!failure_ || failure_->pod.empty()) {
    const bool first = !failure_;
    failure_ = failure;
    // Another node's launcher was stopped by a signal: a sequence of jobs (the auto tuner's)
    // stops too, rather than wait for that node at its next step.
    if (first && failure.signal != 0 && failure.pod != pod_) {
      TheRunReport().stopped_node = failure.cause;
    }
    if (first && failure.pod != pod_ && phase_ != Phase::kRendezvous) {
      if (!settings_.ips.empty()) {  // The nodes of --ips fail as one, each saying why.
        PDLOG_ERROR("ABORT!!! {}; stopping this node's processes", failure.cause);
      } else {
        PDLOG_ERROR("job failed: {}; stopping this node's processes", failure.cause);
      }
    }
  }
  Stop();
}

// The members' addresses as the world names them ("10.0.0.2 (abcdef)"); the pod, escaped, when
// it is no member.
std::vector<std::string> MasterNode::NamesOf(const std::vector<std::string>& pods) const {
  std::vector<std::string> names;
  for (const std::string& pod : pods) {
    std::string address = OneLine(pod);
    for (size_t i = 0; i < members_.size(); ++i) {
      if (members_[i] == pod) address = member_addresses_[i];
    }
    names.push_back(address);
  }
  return names;
}

// How long after the world formed every member's heartbeat must say that it runs: its first
// heartbeat after the forming goes at once, so two heartbeat periods and 5 s are slack enough
// for a starved node.
double MasterNode::RunningBound() const { return 2 * settings_.heartbeat_timeout + 5; }

// The host found members whose heartbeat expired: their loss is the job's failure.
void MasterNode::OnNodesLost(const std::vector<std::string>& lost) {
  if (lost_reported_) return;
  lost_reported_ = true;
  const std::vector<std::string> names = NamesOf(lost);
  PublishFailure(JobFailure{node_ip_, "",
                            fmt::format("node {} lost: no heartbeat for {} s",
                                        fmt::join(names, ", "), settings_.heartbeat_timeout),
                            1});
}

void MasterNode::Stop() {
  if (stop_) stop_();
}

// The host's own records never meet the store's limits; a participant's are retried until the
// master takes them, or the node fails (Finish).
void MasterNode::PublishFailure(const JobFailure& failure) {
  if (server_) {
    if (server_->store().PutIfAbsent(keys_.failure(), EncodeFailure(failure),
                                     /*within_limits=*/false)) {
      server_->Changed();
    }
    return;
  }
  if (foreign_ || !registered_) return;
  PutConfirmed(keys_.failure(), EncodeFailure(failure), "?create=1", "failure record",
               Clock::now());
}

void MasterNode::PublishDone() {
  if (done_published_) return;  // A PS node reports when its workers end, then completes.
  done_published_ = true;
  if (server_) {
    server_->store().Put(keys_.done(pod_), "0", std::nullopt, /*within_limits=*/false);
    server_->Changed();
    return;
  }
  if (foreign_) return;
  PutConfirmed(keys_.done(pod_), "0", "", "done report", Clock::now());
}

int MasterNode::RunRanks() {
  if (!job_->RunsProcesses()) return Complete();  // An exchange: the world's records were all.
  const fs::path log_dir = PrepareLogDir(options_.log_dir);
  std::vector<std::string> peers;
  for (const auto& [key, value] : world_) peers.push_back(key == own_key_ ? value_ : value);
  job_->WriteRecords(log_dir, log_dir / fmt::format("{}.{}.log", settings_.job_id, pod_), peers,
                     options_.log_overwrite);
  MasterLocal local = job_->Build(log_dir, pod_);
  // Today's console unless --legacy (docs/cli.md, "Console"): the pod lines, not these.
  const bool todays_console = UsesNewInterface(options_);
  SupervisorOptions& supervisor = local.supervisor;
  ChooseConsole(local.console, todays_console ? pod_ : std::string());
  supervisor.status = JobStatus(std::move(local.console));
  if (todays_console) WriteEnvLogs(local.processes, options_.log_overwrite);
  if (todays_console) {
    PDLOG_DEBUG("First process distributed environment info: {}", local.debug_table);
  } else {
    if (!local.mode_line.empty()) fmt::print("{}\n", local.mode_line);
    PDLOG_INFO(
        "Local start {} processes. First process distributed environment info (Only For "
        "Debug): {}",
        local.processes.size(), local.debug_table);
    for (const std::string& line : local.after_start) PDLOG_INFO("{}", line);
  }
  supervisor.io = &loop_.get();
  supervisor.stop_hook = &stop_;
  supervisor.grace_seconds = options_.grace;
  if (deadline_) {
    deadline_->Arm();
    supervisor.external = deadline_;
  }
  supervisor.on_first_failure = [this](const SupervisedProcess& p, const ExitStatus& status) {
    if (failure_) return;  // Stopping for another node's failure: ours are consequences.
    failure_ = JobFailure{
        node_ip_, pod_,
        fmt::format("{} {} on node {} {}", p.role == "trainer" ? "rank" : p.role, p.rank, node_ip_,
                    status.signaled ? fmt::format("was killed by signal {} ({})", status.value,
                                                  SignalName(status.value))
                                    : fmt::format("exited with code {}", status.value)),
        status.ShellCode()};
    PublishFailure(*failure_);
  };
  if (local.job_wide_completion) {
    // This node's workers are done: say so; the servers stay until every node's are
    // (news/complete).
    supervisor.hold_secondaries = true;
    supervisor.on_primaries_done = [this] {
      PDLOG_INFO("this node's workers are done; its servers stay until every node's are");
      phase_ = Phase::kCompleting;
      PublishDone();
    };
  }
  std::vector<SupervisedProcess>& processes = local.processes;
  // A failure published while nothing could stop us yet (between the phases) takes effect now.
  if (failure_) {
    PDLOG_ERROR("job failed before this node started: {}", failure_->cause);
    return Finish(failure_->exit_code);
  }
  const SupervisorResult result = Supervise(std::move(processes), supervisor);
  if (result.failed && failure_ && failure_->pod == pod_) return Finish(result.exit_code);
  if (result.signal) {
    if (!failure_) {
      failure_ = JobFailure{
          node_ip_, pod_,
          fmt::format("the launcher on node {} received {}", node_ip_, SignalName(*result.signal)),
          128 + *result.signal, *result.signal};
      PublishFailure(*failure_);
    }
    return Finish(128 + *result.signal);
  }
  if (failure_) {
    PDLOG_ERROR("job failed: {}", failure_->cause);
    return Finish(failure_->exit_code);
  }
  if (result.exit_code != 0) return Finish(result.exit_code);
  return Complete();
}

int MasterNode::Complete() {
  if (Solo(settings_)) return Finish(0);
  phase_ = Phase::kCompleting;
  PublishDone();
  if (server_) {
    // The host stays until every node has reported (or the job fails): they talk to it.
    if (phase_ == Phase::kCompleting && !failure_ &&
        ledger_->Step().kind != MasterStep::Kind::kAllDone) {
      PDLOG_INFO("waiting for the other nodes to finish");
      if (const std::optional<int> code = WaitIdle("the other nodes to finish")) {
        return Finish(*code);
      }
    }
    if (failure_) {
      PDLOG_ERROR("job failed: {}", failure_->cause);
      return Finish(failure_->exit_code);
    }
    PDLOG_INFO("all {} nodes completed", members_.size());
  } else if (!settings_.ips.empty() && !foreign_ && !complete_seen_) {
    // No node of an --ips job reports success while another's processes still run.
    PDLOG_INFO("this node's processes are done; waiting for the other nodes to finish");
    if (const std::optional<int> code = WaitIdle("the other nodes to finish")) {
      return Finish(*code);
    }
    if (failure_) {
      PDLOG_ERROR("job failed: {}", failure_->cause);
      return Finish(failure_->exit_code);
    }
  }
  return Finish(0);
}

// The host serves until each of `pods` wrote its heard/<pod> key, for a few seconds at most.
void MasterNode::ServeUntilHeard(const std::vector<std::string>& pods) {
  const KvMemoryStore& store = server_->store();
  loop_.RunUntil(
      [&] {
        return std::all_of(pods.begin(), pods.end(), [&](const std::string& pod) {
          return store.Find(keys_.heard(pod)) != nullptr;
        });
      },
      std::min(settings_.heartbeat_timeout, kHeardSeconds));
}

// Delivers what is still in flight (a failure record, a done report), then leaves.
int MasterNode::Finish(int code) {
  // The host's last answers (the done report that completed the job, say) go out before it
  // leaves: a node that never got its answer would retry against a master that is gone.
  if (server_ && ledger_ && rendezvous_error_ && phase_ == Phase::kRendezvous) {
    // The world cannot form, and news/formed says why: every node that registered reads it
    // before the master goes (one that registered last may not be polling yet, and would find
    // the master gone, then report that instead), for a few seconds at most.
    std::vector<std::string> pods = refused_pods_;
    for (const auto& [key, value] : ledger_->counted()) {
      if (key != own_key_) pods.push_back(InfoKeyPod(keys_, key));
    }
    ServeUntilHeard(pods);
  }
  if (server_ && ledger_ && !settings_.ips.empty() && phase_ == Phase::kCompleting && !failure_) {
    // Every node of an --ips job waits for the news that all are done: each says it heard it
    // before the master goes, or a node between two polls would find it gone and fail.
    std::vector<std::string> pods;
    for (const std::string& member : members_) {
      if (member != pod_) pods.push_back(member);
    }
    ServeUntilHeard(pods);
  }
  if (server_) loop_.RunUntil([this] { return server_->answers_in_flight() == 0; }, kFlushSeconds);
  if (client_ && !master_lost_) {
    // A refused write is retried for up to --heartbeat_timeout (PutConfirmed).
    const double flush =
        confirming_ > 0 ? settings_.heartbeat_timeout + kFlushSeconds : kFlushSeconds;
    loop_.RunUntil([this] { return pending_puts_ == 0 && confirming_ == 0; }, flush);
    if (!unconfirmed_ && confirming_ > 0) {
      unconfirmed_ = fmt::format("the master at {} did not answer this node's last report ({})",
                                 MasterText(), UnansweredWhy());
    }
    if (unconfirmed_) {
      PDLOG_ERROR("{}", *unconfirmed_);
      if (code == 0) code = kExitSetupError;
    }
  }
  phase_ = Phase::kDone;
  tick_.reset();
  retry_.reset();
  return code;
}

}  // namespace

int RunMaster(const LaunchOptions& options, MasterSettings settings, const TrainingCommand& command,
              bool ps, bool rpc, const JobControls& controls) {
  const MasterJobKind kind = ps    ? MasterJobKind::kPs
                             : rpc ? MasterJobKind::kRpc
                                   : MasterJobKind::kCollective;
  settings.sequential = settings.sequential || controls.one_of_a_sequence;
  if (settings.legacy_ips) {
    MasterNode node(options, settings, MakeLegacyIpsJob(options, command), "legacy-collective",
                    controls.deadline);
    return node.Run();
  }
  MasterNode node(options, settings, MakeMasterJob(kind, options, command),
                  ps    ? "ps"
                  : rpc ? "rpc"
                        : "collective",
                  controls.deadline);
  return node.Run();
}

ExchangeResult ExchangeOverMaster(const LaunchOptions& options, MasterSettings settings,
                                  const std::string& job_id, const std::string& value,
                                  double timeout) {
  settings.job_id = job_id;
  settings.rank = -1;  // The exchange's order is its own; no rank is asked for.
  settings.rendezvous_timeout = timeout;
  settings.sequential = true;
  ExchangeResult result;
  auto values = std::make_shared<std::vector<std::string>>();
  MasterNode node(options, settings, MakeExchangeJob(value, values), "exchange");
  result.code = node.Run();
  if (result.code == 0) result.values = *values;
  return result;
}

}  // namespace pdlaunch::internal
