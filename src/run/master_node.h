#pragma once
// The master-rendezvous node (docs/master.md): one node of a collective job whose nodes find
// each other through an HTTP KV master (`--master ip:port --nnodes N`, or no --master: this node
// hosts it). Phases (master_phase.h, a table), all on one event loop shared with the master's
// server and clients:
//   1. rendezvous: publish this node, wait (with a deadline) until --nnodes nodes have;
//   2. run: the ranks, supervised; heartbeats and the job's failure record watched meanwhile;
//   3. completion: report done; the hosting node stays until every node has.
// Decisions come from rendezvous.h (pure); these files carry them out.
//
// One class, MasterNode, whose member functions live in four files by role:
//   launch_master.cc       the node: its phases, the wait in the loop, the ranks, the end;
//   master_address.cc      where the master is: chosen, resolved, served here or found by
//                          Paddle's handshake;
//   master_host.cc         the hosting node: the store, the ledger's decisions, the world;
//   master_participant.cc  the other nodes: the HTTP exchange with the master.
// Internal to run/.

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
#include "pdlaunch/coord/event_loop.h"
#include "pdlaunch/coord/handshake.h"
#include "pdlaunch/coord/http_client.h"
#include "pdlaunch/coord/http_master.h"
#include "pdlaunch/coord/job_ledger.h"
#include "pdlaunch/coord/rendezvous.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/address_lookup.h"
#include "pdlaunch/plan/master_config.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/process/job_controls.h"
#include "pdlaunch/process/run_report.h"
#include "pdlaunch/process/supervisor.h"
#include "run/job_status.h"
#include "run/master_jobs.h"
#include "run/master_phase.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal::master {

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
// hosting it itself (nodes simulated on one host; MasterNode::Address::hosting_deferred).
constexpr double kDeferredHostingSeconds = 3.0;

// Helpers of the node's files (launch_master.cc).
HttpServerLimits JobServerLimits(int nnodes);
double SecondsSince(Clock::time_point t);
bool IsLocalAddress(const std::string& address);
std::string AddressWithoutMaster(const std::optional<std::string>& host);
std::string DescribePeer(const PeerInfo& peer);
std::string PeerName(const std::string& key, const std::string& value);
bool Solo(const MasterSettings& settings);

/// One node of a master rendezvous, from its plan to its exit code (Run): the host of the
/// master and a participant are the same object in different phases' roles; `server_` is set
/// on the host, `client_` on the others.
class MasterNode {
 public:
  MasterNode(const LaunchOptions& options, const MasterSettings& settings,
             std::unique_ptr<MasterJob> job, std::string mode, JobDeadline* deadline,
             RunReport* report, std::optional<JobToken> token)
      : options_(options),
        deadline_(deadline),
        report_(report),
        say_(report != nullptr ? LogLevel::kInfo : LogLevel::kDebug),
        token_(std::move(token)),
        settings_(settings),
        job_(std::move(job)),
        keys_(settings.job_id),
        pod_(NewPodName()),
        terms_{settings.nnodes, std::move(mode), {}} {}

  int Run();

 private:
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
  /// Moves to the phase kPhaseTable gives for `event`; an event the table has no row for in
  /// this phase is logged as the bug it is, and the phase stays.
  void Advance(PhaseEvent event);
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
    return link_.last_error.empty() ? "requests sent to it are unanswered" : link_.last_error;
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
  std::string MasterText() const {
    return Endpoint{settings_.master_host, master_.port}.ToString();
  }

  const LaunchOptions& options_;
  JobDeadline* deadline_;  // JobControls::deadline: null, or armed as the processes start.
  RunReport* report_;      // The job's record (--report); null for an exchange, which has none.
  // The level of the node's own progress lines: INFO for a job; DEBUG for the auto tuner's
  // exchange, whose rendezvous would read as another job's (warnings and errors still show).
  LogLevel say_;
  // The job token (docs/master.md, "Exposure"): the master checks it, the node presents it.
  std::optional<JobToken> token_;
  MasterSettings settings_;
  std::unique_ptr<MasterJob> job_;
  MasterKeys keys_;
  std::string pod_;
  JobTerms terms_;  // This node's --nnodes and run mode: the job's on the host.

  // The loop and the node's own timers (launch_master.cc).
  EventLoopHandle loop_;
  std::unique_ptr<LoopTimer> tick_;
  std::function<void()> stop_;  // The running Supervise call's stop hook.
  Phase phase_ = Phase::kRendezvous;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_status_ = Clock::now();
  Clock::time_point last_tick_ = Clock::now();  // OnTick's: a gap is this node's own stall.

  /// Where the master is (master_address.cc): its numeric address and port, and whether this
  /// node may serve it.
  struct Address {
    std::string host;  // Numeric.
    int port = 0;
    bool is_local = false;  // `host` is this host's: this node may serve the master.
    // ...but it is another local address than this node's --host (nodes simulated on one
    // host): the node whose --host it is serves it; this one only after nobody has answered
    // there for kDeferredHostingSeconds (ChooseHost).
    bool hosting_deferred = false;
    std::unique_ptr<PortReservation> reservation;  // The port this node picked to serve on.
    std::unique_ptr<HandshakeClient> handshake;    // While an --ips node looks for the port.
  };
  Address master_;

  /// The hosting node's (master_host.cc): set when this node serves the master.
  struct Hosting {
    std::unique_ptr<KvHttpServer> server;
    std::unique_ptr<JobLedger> ledger;
    std::unique_ptr<LoopTimer> running_check;  // Armed when the world forms.
    std::vector<std::string> refused_pods;     // They read why before the host goes.
  };
  Hosting host_;

  /// A participant's link to the master (master_participant.cc): set on the other nodes. Each
  /// request that runs once at a time has its flag; writes that matter (this node's done
  /// report, a failure record) are retried until the master takes them or --heartbeat_timeout
  /// passes.
  struct Link {
    std::unique_ptr<KvHttpClient> client;
    bool foreign = false;     // The master is not pdlaunch's (Paddle's own): no long-poll, no TTL.
    bool answered = false;    // The master has answered this node once.
    bool registered = false;  // This node's keys are at the master.
    bool polling = false;     // The long-poll of the news is out.
    bool reading_world = false;
    int64_t revision = 0;  // The news' revision the next long-poll waits past.
    std::string last_error;
    double backoff = 0.1;
    std::unique_ptr<LoopTimer> retry;
    std::optional<Clock::time_point> unanswered_since;
    Clock::time_point last_contact = Clock::now();
    Clock::time_point last_heartbeat{};
    int pending_puts = 0;
    int last_put_status = 0;                 // Of the Put whose callback runs; 0: no answer.
    bool last_put_elsewhere = false;         // It reached a master that serves another job now.
    int confirming = 0;                      // Writes not yet settled.
    std::optional<std::string> unconfirmed;  // What could not be delivered.
    std::list<std::unique_ptr<LoopTimer>> write_retries;
    /// The master has not answered for --heartbeat_timeout while the job ran: this node stops
    /// and exits at once, without trying to deliver anything more to it.
    bool lost = false;
  };
  Link link_;

  // This node in the job (launch_master.cc).
  std::string node_ip_;
  std::string value_;  // What this node publishes under own_key_.
  std::string own_key_;
  WorldEntries world_;  // The members' keys and records, in node order.
  std::vector<std::string> members_;
  std::vector<std::string> peer_keys_;
  std::vector<std::string> member_addresses_;
  int own_index_ = 0;
  std::minstd_rand jitter_{
      static_cast<std::minstd_rand::result_type>(RandomSeed())};  // Not the pid: 1 in a container.

  // The job's end as this node knows it.
  bool timing_out_ = false;  // The rendezvous deadline passed (TimeOut, once).
  std::optional<std::string> rendezvous_error_;
  std::optional<JobFailure> failure_;  // The job's root cause, once known.
  bool lost_reported_ = false;
  bool complete_seen_ = false;   // news/complete: every node's processes are done.
  bool done_published_ = false;  // This node reported done (PublishDone, once).
  std::string waiting_for_;      // news/waiting: the entries of --ips the host waits for.
};

}  // namespace pdlaunch::internal::master
