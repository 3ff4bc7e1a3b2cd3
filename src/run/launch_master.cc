// The master-rendezvous node (master_node.h): its phases, the wait in the loop, the ranks, the
// end; and the two entries, RunMaster and ExchangeOverMaster.
#include "run/job_processes.h"
#include "run/launch_paths.h"
#include "run/log_files.h"
#include "run/master_node.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal::master {

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

void MasterNode::Advance(PhaseEvent event) {
  const std::optional<Phase> next = NextPhase(phase_, event);
  if (!next) {
    PDLOG_ERROR("master node: internal error: '{}' in phase {}; the phase stays",
                PhaseEventName(event), PhaseName(phase_));
    return;
  }
  PDLOG_DEBUG("master node: {} -> {} ({})", PhaseName(phase_), PhaseName(*next),
              PhaseEventName(event));
  phase_ = *next;
}

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

void MasterNode::StartRendezvous() {
  if (Solo(settings_)) {
    link_.registered = true;
    AdoptPeers({{own_key_, value_}});
    return;
  }
  PDLOG_AT(say_, "Waiting peer start...");
  tick_ = std::make_unique<LoopTimer>(loop_.get(), 0.25, [this] { OnTick(); });
  if (host_.server) return StartServing();
  link_.client = std::make_unique<KvHttpClient>(loop_.get(), master_.host, master_.port);
  if (token_) link_.client->set_token(*token_);
  Contact();
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
    if (report_ != nullptr) {  // An exchange records nothing: its order is its own.
      report_->node_rank = own_index_;
      report_->nodes = static_cast<int>(member_addresses_.size());
    }
  } catch (const LaunchError& e) {
    rendezvous_error_ = e.what();
    Stop();
    return false;
  }
  Advance(PhaseEvent::kWorldFormed);
  link_.last_heartbeat = {};  // The next tick says "running" at once.
  if (!Solo(settings_)) {
    // A thousand addresses on every node's console say nothing: the first ones, and how many.
    constexpr size_t kShown = 16;
    const size_t shown = std::min(member_addresses_.size(), kShown);
    const std::string more = member_addresses_.size() > shown
                                 ? fmt::format(", ... {} more", member_addresses_.size() - shown)
                                 : std::string();
    PDLOG_AT(say_, "all {} nodes joined in {:.3f} s; this node is rank {} of [{}{}]",
             settings_.nnodes, SecondsSince(start_), own_index_,
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
  // Today's console names the pod of a job; an exchange has none, and says nothing of its own.
  if (UsesNewInterface(options_) && report_ != nullptr) console.pod_name = pod_;
  console.waiting_for = std::move(waiting_for);
  wait.status = JobStatus(std::move(console), report_);
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
    if (report_ != nullptr) report_->reason = OneLine(*rendezvous_error_);  // --report's reason.
    return kExitSetupError;
  }
  if (phase_ == Phase::kRendezvous && failure_) {  // Another node failed before the world came.
    PDLOG_ERROR("job failed before this node started: {}", failure_->cause);
    return failure_->exit_code;
  }
  return std::nullopt;
}

void MasterNode::OnTick() {
  if (phase_ == Phase::kDone) return;
  // This launcher itself did not run for a while (stopped, or starved on a loaded host): the
  // master's silence over that time says nothing about the master. It is given a fresh
  // --heartbeat_timeout from now, while this node's heartbeat goes out at once.
  const double stalled = SecondsSince(last_tick_);
  last_tick_ = Clock::now();
  if (stalled > std::max(1.0, settings_.heartbeat_timeout / 2)) {
    PDLOG_AT(say_, "this node did not run for {:.1f} s; the master gets {} s from now", stalled,
             settings_.heartbeat_timeout);
    link_.last_contact = Clock::now();
    link_.last_heartbeat = {};
  }
  Heartbeat();
  if (link_.client && link_.registered && !link_.foreign && phase_ != Phase::kRendezvous &&
      SecondsSince(link_.last_contact) > settings_.heartbeat_timeout && !failure_) {
    failure_ = JobFailure{MasterText(), "",
                          fmt::format("lost the master at {}: no answer for {} s ({})",
                                      MasterText(), settings_.heartbeat_timeout, UnansweredWhy()),
                          1};
    link_.lost = true;  // Nothing more is sent to it: Finish does not wait for it.
    PDLOG_ERROR("{}", failure_->cause);
    Stop();
    return;
  }
  if (phase_ != Phase::kRendezvous) return;
  // Registered, then the master went away (its launcher failed or was killed before the world
  // formed): waiting for the rendezvous deadline would only hide that.
  if (link_.client && link_.answered && !link_.foreign &&
      SecondsSince(link_.last_contact) > settings_.heartbeat_timeout) {
    rendezvous_error_ = fmt::format(
        "lost the master at {} during the rendezvous: no answer for {} s ({}); see the log of "
        "the node that hosted it",
        MasterText(), settings_.heartbeat_timeout, UnansweredWhy());
    Stop();
    return;
  }
  // A registered participant gives the host a moment to say why first (it names the nodes).
  const double grace = !host_.ledger && link_.registered ? kTimeoutGrace : 0;
  if (SecondsSince(start_) > settings_.rendezvous_timeout + grace) return TimeOut();
  if (SecondsSince(last_status_) >= kStatusInterval) {
    last_status_ = Clock::now();
    if (!link_.registered) {
      PDLOG_WARN("master not ready: {} does not answer yet ({}); retrying until {} s", MasterText(),
                 link_.last_error.empty() ? "no answer to the first request yet: the connection is "
                                            "queued at the master or its answer is on the way"
                                          : link_.last_error,
                 settings_.rendezvous_timeout);
    } else if (host_.ledger && !settings_.ips.empty()) {
      const std::string missing = MissingNodes();
      PDLOG_AT(say_,
               "waiting for {} more node(s) of {} at master {}: {} (job {}, {:.0f} s of {} s)",
               settings_.nnodes - static_cast<int>(host_.ledger->counted().size()),
               settings_.nnodes, MasterText(), missing, settings_.job_id, SecondsSince(start_),
               settings_.rendezvous_timeout);
      // Every node of the list says whom the job waits for, not only this one.
      KvMemoryStore& store = host_.server->store();
      const std::string* said = store.Find(keys_.waiting());
      if (said == nullptr || *said != missing) {
        store.Put(keys_.waiting(), missing, std::nullopt, /*within_limits=*/false);
        host_.server->Changed();
      }
    } else if (!settings_.ips.empty() && link_.registered && !waiting_for_.empty()) {
      PDLOG_AT(
          say_,
          "waiting for the world of {} nodes at master {}, which waits for {} (job {}, {:.0f} s "
          "of {} s)",
          settings_.nnodes, MasterText(), waiting_for_, settings_.job_id, SecondsSince(start_),
          settings_.rendezvous_timeout);
    } else if (host_.ledger) {
      PDLOG_AT(say_, "waiting for {} more node(s) of {} at master {} (job {}, {:.0f} s of {} s)",
               settings_.nnodes - static_cast<int>(host_.ledger->counted().size()),
               settings_.nnodes, MasterText(), settings_.job_id, SecondsSince(start_),
               settings_.rendezvous_timeout);
    } else {
      PDLOG_AT(say_, "waiting for the world of {} nodes at master {} (job {}, {:.0f} s of {} s)",
               settings_.nnodes, MasterText(), settings_.job_id, SecondsSince(start_),
               settings_.rendezvous_timeout);
    }
  }
}

void MasterNode::OnJobFailed(const JobFailure& failure) {
  if (!failure_ || failure_->pod.empty()) {
    const bool first = !failure_;
    failure_ = failure;
    // Another node's launcher was stopped by a signal: a sequence of jobs (the auto tuner's)
    // stops too, rather than wait for that node at its next step.
    if (first && failure.signal != 0 && failure.pod != pod_ && report_ != nullptr) {
      report_->stopped_node = failure.cause;
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
  supervisor.status = JobStatus(std::move(local.console), report_);
  if (todays_console) WriteEnvLogs(local.processes, options_.log_overwrite);
  if (todays_console) {
    PDLOG_DEBUG("First process distributed environment info: {}", local.debug_table);
  } else {
    if (!local.mode_line.empty()) fmt::print("{}\n", local.mode_line);
    PDLOG_AT(say_,
             "Local start {} processes. First process distributed environment info (Only For "
             "Debug): {}",
             local.processes.size(), local.debug_table);
    for (const std::string& line : local.after_start) PDLOG_AT(say_, "{}", line);
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
      PDLOG_AT(say_, "this node's workers are done; its servers stay until every node's are");
      Advance(PhaseEvent::kWorkersDone);
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
  Advance(PhaseEvent::kProcessesDone);
  PublishDone();
  if (host_.server) {
    // The host stays until every node has reported (or the job fails): they talk to it.
    if (phase_ == Phase::kCompleting && !failure_ &&
        host_.ledger->Step().kind != MasterStep::Kind::kAllDone) {
      PDLOG_AT(say_, "waiting for the other nodes to finish");
      if (const std::optional<int> code = WaitIdle("the other nodes to finish")) {
        return Finish(*code);
      }
    }
    if (failure_) {
      PDLOG_ERROR("job failed: {}", failure_->cause);
      return Finish(failure_->exit_code);
    }
    PDLOG_AT(say_, "all {} nodes completed", members_.size());
  } else if (!settings_.ips.empty() && !link_.foreign && !complete_seen_) {
    // No node of an --ips job reports success while another's processes still run.
    PDLOG_AT(say_, "this node's processes are done; waiting for the other nodes to finish");
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

// Delivers what is still in flight (a failure record, a done report), then leaves.
int MasterNode::Finish(int code) {
  // The host's last answers (the done report that completed the job, say) go out before it
  // leaves: a node that never got its answer would retry against a master that is gone.
  if (host_.server && host_.ledger && rendezvous_error_ && phase_ == Phase::kRendezvous) {
    // The world cannot form, and news/formed says why: every node that registered reads it
    // before the master goes (one that registered last may not be polling yet, and would find
    // the master gone, then report that instead), for a few seconds at most.
    std::vector<std::string> pods = host_.refused_pods;
    for (const auto& [key, value] : host_.ledger->counted()) {
      if (key != own_key_) pods.push_back(InfoKeyPod(keys_, key));
    }
    ServeUntilHeard(pods);
  }
  if (host_.server && host_.ledger && !settings_.ips.empty() && phase_ == Phase::kCompleting &&
      !failure_) {
    // Every node of an --ips job waits for the news that all are done: each says it heard it
    // before the master goes, or a node between two polls would find it gone and fail.
    std::vector<std::string> pods;
    for (const std::string& member : members_) {
      if (member != pod_) pods.push_back(member);
    }
    ServeUntilHeard(pods);
  }
  if (host_.server)
    loop_.RunUntil([this] { return host_.server->answers_in_flight() == 0; }, kFlushSeconds);
  if (link_.client && !link_.lost) {
    // A refused write is retried for up to --heartbeat_timeout (PutConfirmed).
    const double flush =
        link_.confirming > 0 ? settings_.heartbeat_timeout + kFlushSeconds : kFlushSeconds;
    loop_.RunUntil([this] { return link_.pending_puts == 0 && link_.confirming == 0; }, flush);
    if (!link_.unconfirmed && link_.confirming > 0) {
      link_.unconfirmed =
          fmt::format("the master at {} did not answer this node's last report ({})", MasterText(),
                      UnansweredWhy());
    }
    if (link_.unconfirmed) {
      PDLOG_ERROR("{}", *link_.unconfirmed);
      if (code == 0) code = kExitSetupError;
    }
  }
  Advance(PhaseEvent::kLeft);
  tick_.reset();
  link_.retry.reset();
  return code;
}

}  // namespace pdlaunch::internal::master

namespace pdlaunch::internal {

using master::MasterNode;

int RunMaster(const LaunchOptions& options, MasterSettings settings, const TrainingCommand& command,
              bool ps, bool rpc, const JobControls& controls, RunReport& record,
              const std::optional<JobToken>& token) {
  const MasterJobKind kind = ps    ? MasterJobKind::kPs
                             : rpc ? MasterJobKind::kRpc
                                   : MasterJobKind::kCollective;
  settings.sequential = settings.sequential || controls.one_of_a_sequence;
  if (settings.legacy_ips) {
    MasterNode node(options, settings, MakeLegacyIpsJob(options, command), "legacy-collective",
                    controls.deadline, &record, token);
    return node.Run();
  }
  MasterNode node(options, settings, MakeMasterJob(kind, options, command),
                  ps    ? "ps"
                  : rpc ? "rpc"
                        : "collective",
                  controls.deadline, &record, token);
  return node.Run();
}

ExchangeResult ExchangeOverMaster(const LaunchOptions& options, MasterSettings settings,
                                  const std::string& job_id, const std::string& value,
                                  double timeout, const std::optional<JobToken>& token) {
  settings.job_id = job_id;
  settings.rank = -1;  // The exchange's order is its own; no rank is asked for.
  settings.rendezvous_timeout = timeout;
  settings.sequential = true;
  ExchangeResult result;
  auto values = std::make_shared<std::vector<std::string>>();
  MasterNode node(options, settings, MakeExchangeJob(value, values), "exchange", nullptr, nullptr,
                  token);
  result.code = node.Run();
  if (result.code == 0) result.values = *values;
  return result;
}

}  // namespace pdlaunch::internal
