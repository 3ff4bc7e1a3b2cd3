// The elastic controller: one node of a job coordinated through etcd (docs/elastic.md). It
// registers under a lease, waits for a world to form, runs its ranks in it, and re-forms the
// world when nodes come, go or fail. Decisions come from elastic_policy.h (pure); this file
// carries them out. All waiting happens in the supervisor's event loop, driven by the etcd watch
// and a tick for the lease keep-alive.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/coord/elastic.h"
#include "pdlaunch/coord/elastic_policy.h"
#include "pdlaunch/coord/kv_store.h"
#include "pdlaunch/plan/address_lookup.h"
#include "pdlaunch/plan/master_config.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/process/process.h"
#include "pdlaunch/process/supervisor.h"
#include "run/job_processes.h"
#include "run/job_status.h"
#include "run/launch_paths.h"
#include "run/log_files.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// How long one etcd request may take.
constexpr std::chrono::milliseconds kRequestTimeout{3000};
/// Seconds between two "not ready" lines while waiting.
constexpr double kStatusInterval = 5.0;

/// Thrown out of a wait with no processes (WaitIdle) that a signal ended; Run leaves.
struct StoppedBySignal {
  int signal;
};

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Paddle's node id shape: the pod's name (six random lowercase letters) and the unix time.
std::string NewNodeId(const std::string& pod) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return pod + fmt::format("{:.6f}", std::chrono::duration<double>(now).count());
}

/// --host, else POD_IP, else the first non-loopback IPv4 address of this host, else 127.0.0.1.
std::string ThisHost(const LaunchOptions& options) {
  if (options.host && !options.host->empty()) return *options.host;
  if (auto pod_ip = GetEnv("POD_IP")) return *pod_ip;
  for (const std::string& address : LocalInterfaceAddresses()) {
    if (address.find(':') == std::string::npos && address.rfind("127.", 0) != 0) return address;
  }
  return "127.0.0.1";
}

class ElasticNodeAgent : public ExternalEvents {
 public:
  ElasticNodeAgent(const LaunchOptions& options, const ElasticConfig& config,
                   const TrainingCommand& command, const JobControls& controls, RunReport& report)
      : options_(options),
        config_(config),
        command_(command),
        keys_(controls.etcd_key_job.value_or(config.job_id)),
        pod_(NewPodName()),
        id_(NewNodeId(pod_)),
        store_(MakeEtcdStore(config.server, kRequestTimeout)),
        deadline_(controls.deadline),
        report_(report) {}

  int Run();
  int RunGenerations();

  // ExternalEvents: the etcd watch and the keep-alive tick.
  int fd() override { return watch_ ? watch_->fd() : -1; }
  bool OnReadable() override;
  double tick_seconds() const override {
    return std::min(1.0, std::max(0.1, config_.ttl_seconds / 3.0));
  }
  bool OnTick() override;
  /// Revokes this node's lease (its key goes at once); never throws.
  void Leave();

 private:
  void PlanNode();
  void Connect();
  /// Calls `call` again every 0.5 s while etcd is unavailable, for PADDLE_ELASTIC_TIMEOUT at
  /// most (then the last KvUnavailable propagates), from an idle loop that handles signals (one
  /// throws StoppedBySignal); `on_first_failure` hears of the first failure seen from the loop
  /// (the second try's).
  void RetryWhileUnavailable(
      const std::function<void()>& call,
      const std::function<void(const KvUnavailable&)>& on_first_failure = {});
  void Register();
  void CheckNp();
  void Refresh();
  bool Evaluate();
  void KeepAlive();
  void Rewatch();
  void LoseEtcd(const KvUnavailable& error);
  void PutNodeKey();
  int RunWorld(const WorldRecord& world);
  void PutDone(int64_t generation);
  void ReportFailure();
  void PublishFailure(const SupervisedProcess& process, const ExitStatus& status);
  void Complete();
  SupervisorOptions LoopOptions();
  void WaitIdle(ExternalEvents* external, std::string waiting_for);

  const LaunchOptions& options_;
  ElasticConfig config_;
  const TrainingCommand& command_;
  ElasticKeys keys_;
  std::string pod_;  ///< Named in today's console's pod lines.
  std::string id_;
  std::unique_ptr<KvStore> store_;
  std::unique_ptr<KvWatch> watch_;
  NodeRecord record_;
  DevicePlan devices_;
  std::unique_ptr<PortReservation> ports_;
  int64_t lease_ = 0;
  JobState state_;
  Clock::time_point wait_start_ = Clock::now();
  Clock::time_point last_keepalive_ = Clock::now();
  Clock::time_point last_status_time_{};
  std::string last_status_;
  bool etcd_lost_ = false;
  int64_t ran_generation_ = 0;
  int64_t reported_failure_ = 0;  // Last generation whose root cause was printed.
  std::optional<WorldRecord> running_;
  std::optional<std::string> stop_reason_;
  std::optional<ElasticStep> next_;
  // JobControls::deadline (the tuner's max_time_per_task): null, or armed as each generation's
  // ranks start; it fires once.
  JobDeadline* deadline_;
  bool deadline_fired_ = false;
  RunReport& report_;  ///< The job's record (--report): every generation adds its processes.
  fs::path log_dir_;
  bool first_launch_ = true;
  bool announced_wait_ = false;  // "Waiting peer ready..." said for the coming rendezvous.
};

void ElasticNodeAgent::PlanNode() {
  devices_ = ResolveCollectiveDevices(options_);
  for (const std::string& line : devices_.warnings) PDLOG_WARN("{}", line);
  record_.host = ThisHost(options_);
  record_.pid = static_cast<int>(::getpid());
  // Without a fixed start port: free ports, locked for the launcher's life, so that nodes
  // sharing a machine never collide.
  LocalPorts ports =
      PlanLocalPorts(GivenStartPort(options_), static_cast<int>(devices_.devices_per_proc.size()));
  record_.ports = ports.ports;
  record_.master_port = ports.master_port;
  ports_ = std::move(ports.reservation);
  if (!ports_) {
    std::vector<int> all = record_.ports;
    all.push_back(record_.master_port);
    CheckPortsFree(all);
  }
  log_dir_ = PrepareLogDir(options_.log_dir);
}

// The first request retries until PADDLE_ELASTIC_TIMEOUT: etcd may be starting with the job.
void ElasticNodeAgent::Connect() {
  try {
    RetryWhileUnavailable([&] { lease_ = store_->GrantLease(config_.ttl_seconds); },
                          [&](const KvUnavailable& e) {
                            PDLOG_WARN("waiting for etcd at {}: {}", config_.server, e.what());
                          });
  } catch (const KvUnavailable& e) {
    throw LaunchError(fmt::format(
        "cannot reach etcd at {} within {} s ({}): {}", config_.server, config_.timeout_seconds,
        options_.elastic_timeout ? "--elastic_timeout" : "PADDLE_ELASTIC_TIMEOUT", e.what()));
  }
}

void ElasticNodeAgent::RetryWhileUnavailable(
    const std::function<void()>& call,
    const std::function<void(const KvUnavailable&)>& on_first_failure) {
  const auto deadline = Clock::now() + std::chrono::seconds(config_.timeout_seconds);
  std::optional<KvUnavailable> last;
  auto attempt = [&]() -> bool {  // True when done: the call went through, or time is up.
    try {
      call();
      last.reset();
      return true;
    } catch (const KvUnavailable& e) {
      last = e;
      return Clock::now() >= deadline;
    }
  };
  if (!attempt()) {
    // The next tries from the loop, every 0.5 s: signals are handled meanwhile. The first
    // failure is told from there too, once they are (a test, or a user, reacting to the line
    // must not meet the default action).
    bool told = false;
    const std::function<bool()> tick = [&] {
      if (attempt()) return true;
      if (!told && on_first_failure) on_first_failure(*last);
      told = true;
      return false;
    };
    class Retry final : public ExternalEvents {
     public:
      explicit Retry(const std::function<bool()>& attempt) : attempt_(attempt) {}
      int fd() override { return -1; }
      bool OnReadable() override { return false; }
      double tick_seconds() const override { return 0.5; }
      bool OnTick() override { return attempt_(); }

     private:
      const std::function<bool()>& attempt_;
    };
    Retry retry(tick);
    WaitIdle(&retry, fmt::format("etcd at {}", config_.server));
  }
  if (last) throw *last;
}

// Paddle's np rule (docs/elastic.md), applied only while other nodes of the job are alive: a
// finished or crashed earlier run of the same job id does not pin np.
void ElasticNodeAgent::CheckNp() {
  const std::string wanted = std::to_string(config_.np_max);
  if (state_.np && *state_.np != config_.np_max && !state_.nodes.empty() && !config_.force) {
    throw LaunchError(
        fmt::format("np {} is not consistent with np in etcd {} (--force replaces it)",
                    config_.np_max, *state_.np));
  }
  if (!state_.np || *state_.np != config_.np_max) store_->Put(keys_.np(), wanted);
}

void ElasticNodeAgent::Register() {
  Connect();
  Refresh();
  // Failures recorded before this node came are an earlier run's (a world that formed since has
  // a higher generation than any of them), or of a world this node cannot be part of.
  if (!state_.failures.empty()) reported_failure_ = state_.failures.rbegin()->first;
  CheckNp();
  store_->Put(keys_.status(), "0");
  PutNodeKey();
  last_keepalive_ = Clock::now();
  PDLOG_INFO("elastic job {} at etcd {}: this node is {} ({}), np {}{}", config_.job_id,
             config_.server, record_.host, id_, config_.np_min,
             config_.elastic_level() ? fmt::format(":{}", config_.np_max) : "");
  Rewatch();
}

void ElasticNodeAgent::Refresh() {
  KvStore::Range range = store_->GetPrefix(keys_.status());
  state_ = ParseJobState(keys_, range.kvs);
}

// etcd is away: say so once, drop the watch; the tick retries (Rewatch) until it is back.
void ElasticNodeAgent::LoseEtcd(const KvUnavailable& error) {
  if (!etcd_lost_) PDLOG_WARN("lost etcd at {}: {}; retrying", config_.server, error.what());
  etcd_lost_ = true;
  watch_.reset();
}

void ElasticNodeAgent::PutNodeKey() {
  store_->Put(keys_.node(id_), EncodeNodeRecord(record_), lease_);
}

void ElasticNodeAgent::Rewatch() {
  try {
    // The watch from now on, then the snapshot: what changed before the watch, the snapshot
    // has. A watch from the snapshot's revision would do too, but etcd serves a watch that
    // starts behind its head from a loop that runs every 100 ms: a change made between the two
    // would come up to 100 ms late (a world formed late, a failure seen late).
    watch_ = store_->Watch(keys_.prefix(), 0);
    Refresh();
    if (etcd_lost_) PDLOG_INFO("reconnected to etcd at {}", config_.server);
    etcd_lost_ = false;
  } catch (const KvUnavailable& e) {
    LoseEtcd(e);
  }
}

void ElasticNodeAgent::KeepAlive() {
  if (SecondsSince(last_keepalive_) < config_.ttl_seconds / 3.0) return;
  try {
    if (store_->KeepAlive(lease_) == 0) {
      // The lease expired (etcd was away longer than the TTL): register again.
      PDLOG_WARN("register host again {}", record_.host);
      lease_ = store_->GrantLease(config_.ttl_seconds);
      PutNodeKey();
    }
    last_keepalive_ = Clock::now();
  } catch (const KvUnavailable& e) {
    LoseEtcd(e);
  }
}

bool ElasticNodeAgent::OnReadable() {
  try {
    watch_->Read();  // The events only say "something changed": the snapshot says what.
    Refresh();
  } catch (const KvUnavailable& e) {
    LoseEtcd(e);
    return false;
  }
  return Evaluate();
}

bool ElasticNodeAgent::OnTick() {
  KeepAlive();
  if (running_ && deadline_ && deadline_->OnTick()) {
    deadline_fired_ = true;
    return true;
  }
  if (!watch_) {
    Rewatch();
    if (!watch_) return false;
  }
  if (running_) return Evaluate();
  try {
    Refresh();  // Time matters while waiting (timeouts, status lines); the state may not change.
  } catch (const KvUnavailable&) {
    return false;
  }
  return Evaluate();
}

// The root cause of every failed generation of this run of the job, once, on every node: also
// of a world this node never got to run (it was replaced before this node looked).
void ElasticNodeAgent::ReportFailure() {
  for (const auto& [generation, failure] : state_.failures) {
    if (generation <= reported_failure_) continue;
    reported_failure_ = generation;
    PDLOG_ERROR("job failed in generation {}: {}", generation, DescribeFailure(failure));
  }
}

// Running: whether to stop the ranks. Waiting: whether a step other than waiting is due.
bool ElasticNodeAgent::Evaluate() {
  if (running_) {
    if (stop_reason_) return true;
    stop_reason_ = ReasonToStop(state_, *running_, config_);
    return stop_reason_.has_value();
  }
  ReportFailure();  // Also for a failed world this node never got to run.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const bool waited = SecondsSince(wait_start_) >= config_.timeout_seconds;
    ElasticStep step = DecideElasticStep(state_, id_, ran_generation_, config_, waited);
    if (step.kind == ElasticStep::Kind::kWait) {
      if (step.status != last_status_ || SecondsSince(last_status_time_) >= kStatusInterval) {
        PDLOG_INFO("{}", step.status);
        last_status_ = step.status;
        last_status_time_ = Clock::now();
      }
      return false;
    }
    if (step.kind != ElasticStep::Kind::kPropose) {
      next_ = std::move(step);
      return true;
    }
    try {
      store_->PutIf(keys_.world(), state_.world_mod_revision, EncodeWorldRecord(step.world));
      Refresh();  // Whoever won, the world is in the store now.
    } catch (const KvUnavailable&) {
      return false;
    }
  }
  return false;
}

// A wait in the supervisor's loop with no processes, its events from `external` (the agent
// itself: the etcd watch and the keep-alive tick; or a retry), until one of them asks to stop.
// A signal ends it by throwing StoppedBySignal, which Run takes (it leaves); `waiting_for` is
// told with the signal.
void ElasticNodeAgent::WaitIdle(ExternalEvents* external, std::string waiting_for) {
  SupervisorOptions wait = LoopOptions();
  wait.external = external;
  ConsoleSettings console;
  // Today's console (--master etcd://): Terminating/Exit with signal N in the waits too.
  if (UsesNewInterface(options_)) console.pod_name = pod_;
  console.waiting_for = std::move(waiting_for);
  wait.status = internal::JobStatus(std::move(console), &report_);
  const SupervisorResult result = Supervise({}, wait);
  if (result.signal) throw StoppedBySignal{*result.signal};
}

SupervisorOptions ElasticNodeAgent::LoopOptions() {
  SupervisorOptions loop;
  loop.grace_seconds = options_.grace;
  loop.external = this;
  return loop;
}

void ElasticNodeAgent::PublishFailure(const SupervisedProcess& process, const ExitStatus& status) {
  FailureRecord failure;
  failure.generation = running_->generation;
  failure.node = id_;
  failure.host = record_.host;
  failure.rank = process.rank;
  if (status.signaled) {
    failure.signal = status.value;
  } else {
    failure.exit_code = status.value;
  }
  try {
    // First writer wins: the root cause of the generation is the first failure published.
    store_->PutIf(keys_.failure(failure.generation), 0, EncodeFailureRecord(failure));
  } catch (const KvUnavailable& e) {
    PDLOG_ERROR("cannot publish the failure to etcd: {}", e.what());
  }
}

int ElasticNodeAgent::RunWorld(const WorldRecord& world) {
  const Cluster cluster = BuildElasticCluster(world, id_, devices_);
  report_.node_rank = cluster.local_index;
  report_.nodes = static_cast<int>(cluster.pods.size());
  std::vector<std::string> hosts;
  for (const Pod& pod : cluster.pods) hosts.push_back(pod.ip);
  PDLOG_INFO("ready with hosts [{}]", fmt::join(hosts, ", "));
  if (config_.pre_hook) {
    const ProcessSpec hook{"/bin/sh", {"sh", "-c", *config_.pre_hook}, ParentEnvironment(), -1};
    if (ExitStatus status = RunStoppingOnSignal(hook, options_.grace); !status.success()) {
      PDLOG_WARN("--elastic_pre_hook ended with {}", status.Describe());
    }
  }
  TempDir gloo_dir;
  const JobEnv job{gloo_dir.path(), GetEnv("PADDLE_WITH_GLOO").value_or("0"), log_dir_.string()};
  const bool truncate = options_.log_overwrite && first_launch_;
  std::vector<SupervisedProcess> processes =
      BuildTrainerProcesses(cluster, WorldValues(cluster), command_, job, log_dir_, truncate,
                            ElasticVariables(world, cluster, config_.job_id));
  MarkRunInLogs(processes, config_.job_id);
  first_launch_ = false;
  // Today's interface (--master etcd://...) appends each generation's endpoints to the pod
  // log, as Paddle's etcd controller does; the legacy one (--elastic_server) rewrites
  // endpoints.log.
  const std::string pod = UsesNewInterface(options_) ? pod_ : std::string();
  internal::WriteEndpointsFile(log_dir_, config_.job_id, pod, cluster.world_endpoints(), truncate);
  if (cluster.local_index == 0) {
    try {
      store_->Put(keys_.endpoints(), FormatEndpointsValue(cluster));
    } catch (const KvUnavailable& e) {
      PDLOG_WARN("cannot write {}: {}", keys_.endpoints(), e.what());
    }
  }
  PDLOG_INFO("collective launch generation {} (restarts {}/{}): node rank {} of {}, ranks {}-{}",
             world.generation, world.restarts, config_.max_restart, cluster.local_index,
             world.members.size(), processes.front().rank, processes.back().rank);

  running_ = world;
  stop_reason_.reset();
  SupervisorOptions loop = LoopOptions();
  loop.echo_path = processes.front().log_path;
  internal::ChooseEcho(loop, options_, cluster.pods.size() > 1, cluster.local_pod().ip);
  loop.remove_if_killed = {gloo_dir.path()};
  loop.device_log = internal::DeviceLogOf(options_, cluster, log_dir_.string());
  internal::ApplyNumaBinding(options_, cluster, processes);
  ConsoleSettings console;
  internal::ChooseConsole(console, pod);
  loop.status = internal::JobStatus(std::move(console), &report_);
  if (!pod.empty()) internal::WriteEnvLogs(processes, options_.log_overwrite);
  // --elastic_level 0: a node whose rank fails leaves the job and the others hold (they see it
  // go); no failure record, which would stop them all.
  if (config_.level != 0) {
    loop.on_first_failure = [this](const SupervisedProcess& p, const ExitStatus& s) {
      PublishFailure(p, s);
    };
  }
  if (deadline_) deadline_->Arm();
  const SupervisorResult result = Supervise(std::move(processes), loop);
  running_.reset();
  ran_generation_ = world.generation;
  if (result.signal) return result.exit_code;
  // The trial is over on every node: each has the same deadline, and a node that leaves
  // ends the others' (a trial runs at --elastic_level -1).
  if (deadline_fired_) return result.exit_code != 0 ? result.exit_code : 1;
  if (config_.level == 0 && result.failed) {
    PDLOG_ERROR(
        "a rank of this node failed: leaving the job (--elastic_level 0), the other "
        "nodes hold and form the next world without it");
    return result.exit_code;
  }
  if (result.stopped && stop_reason_) PDLOG_WARN("stopped the local ranks: {}", *stop_reason_);
  if (result.failed || result.stopped) {
    announced_wait_ = false;  // The next wait is for another world.
    Rewatch();                // Fresh state, so that the root cause below is the stored one.
    ReportFailure();
  } else {
    PutDone(world.generation);
  }
  return -1;
}

// Without this key the job cannot complete, so it is retried while etcd is away.
void ElasticNodeAgent::PutDone(int64_t generation) {
  RetryWhileUnavailable([&] { store_->Put(keys_.done(generation, id_), "1"); });
  // Known here before the watch brings it back: the policy tells a node that finished from one
  // whose ranks were stopped by its done key.
  state_.done[generation].insert(id_);
}

void ElasticNodeAgent::Leave() {
  if (lease_ == 0) return;
  try {
    store_->RevokeLease(lease_);
    lease_ = 0;
  } catch (const std::exception& e) {
    PDLOG_WARN("cannot deregister from etcd: {}", e.what());
  }
}

// Every member finished: the job is complete. The last node to leave removes the job's keys.
void ElasticNodeAgent::Complete() {
  try {
    store_->Put(keys_.status(), "1");
    store_->RevokeLease(lease_);
    lease_ = 0;
    if (store_->GetPrefix(keys_.nodes()).kvs.empty()) {
      store_->DeletePrefix(keys_.prefix());
      store_->Delete(keys_.status());
    }
  } catch (const KvUnavailable& e) {
    PDLOG_WARN("cannot clean up the job's keys in etcd: {}", e.what());
  }
  PDLOG_INFO("job {} completed", config_.job_id);
}

int ElasticNodeAgent::Run() {
  // A log directory made for a node stopped before any rank ran is removed again (still empty).
  const std::vector<fs::path> made = internal::MissingDirectories(options_.log_dir);
  try {
    const int code = RunGenerations();
    if (first_launch_) internal::RemoveEmptyDirectories(made);  // No rank ran here.
    return code;
  } catch (const StoppedBySignal& stop) {  // The wait told it (waiting_for).
    Leave();
    internal::RemoveEmptyDirectories(made);
    return 128 + stop.signal;
  }
}

int ElasticNodeAgent::RunGenerations() {
  PlanNode();
  Register();
  for (;;) {
    next_.reset();
    // Paddle's etcd controller says so before each rendezvous for a world, waiting or not
    // (docs/cli.md): before the first, and after a failed or stopped generation.
    if (!announced_wait_ && UsesNewInterface(options_)) PDLOG_INFO("Waiting peer ready...");
    announced_wait_ = true;
    if (!Evaluate()) WaitIdle(this, "the other nodes");
    if (!next_) continue;
    switch (next_->kind) {
      case ElasticStep::Kind::kRun:
        if (const int code = RunWorld(next_->world); code >= 0) {
          Leave();
          return code;
        }
        break;
      case ElasticStep::Kind::kComplete:
        Complete();
        return 0;
      case ElasticStep::Kind::kFail:
        if (config_.level < 0) {
          PDLOG_ERROR("job failed (--elastic_level -1: no restart): {}", next_->cause);
        } else {
          PDLOG_ERROR("job failed after {} restarts (--max_restart {}): {}", next_->world.restarts,
                      config_.max_restart, next_->cause);
        }
        Leave();
        return next_->exit_code;
      default:
        break;
    }
  }
}

}  // namespace

int RunElastic(const LaunchOptions& options, const ElasticConfig& config,
               const TrainingCommand& command, const JobControls& controls, RunReport& record) {
  ElasticNodeAgent agent(options, config, command, controls, record);
  try {
    return agent.Run();
  } catch (...) {
    agent.Leave();  // Deregister now rather than after the TTL; then report the error.
    throw;
  }
}

}  // namespace pdlaunch::internal
