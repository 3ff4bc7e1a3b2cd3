// The hosting node of a master rendezvous (master_node.h): the store, the ledger's decisions,
// the world, the records only the host writes.
#include "run/master_node.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal::master {

// The entries of --ips whose node has not registered yet, for the host's waiting lines: the
// first few, and how many.
std::string MasterNode::MissingNodes() const {
  std::vector<bool> seen(settings_.ips.size(), false);
  for (const auto& [key, value] : host_.ledger->counted()) {
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

void MasterNode::StartServing() {
  host_.server->set_job(settings_.job_id);
  if (token_) host_.server->set_token(*token_);
  KvMemoryStore& store = host_.server->store();
  // Room for the job's own records (info, alive, done, terms, the world) beyond the limits: any
  // client may write to the store, and one that fills it must not shut the job's nodes out.
  const size_t job_keys = 4 * static_cast<size_t>(std::max(settings_.nnodes, 1)) + 16;
  store.Reserve(keys_.job_prefix(), job_keys, job_keys * 4096);
  // The host's decisions are the host's alone: written here, refused from the network (a
  // stranger who rewrote the world made a participant start 40 ranks on its endpoints). A
  // participant's failure record stays writable, once (?create=1).
  store.Protect(keys_.world(), /*prefix=*/false);
  store.Protect(keys_.news_prefix(), /*prefix=*/true, keys_.failure());
  host_.ledger = std::make_unique<JobLedger>(keys_, terms_, pod_);
  store.Put(keys_.terms(), EncodeJobTerms(terms_), std::nullopt, /*within_limits=*/false);
  store.Put(keys_.alive(pod_), "1", std::nullopt, /*within_limits=*/false);
  store.Put(own_key_, value_, std::nullopt, /*within_limits=*/false);
  link_.registered = true;
  host_.server->set_on_change([this] { OnStoreChange(); });
  host_.server->Changed();
}

// The host learns of every change of the store here: only the keys it touched are read (a join
// costs O(log n), not a read of the job), then the ledger's decisions are carried out.
void MasterNode::OnStoreChange() {
  KvMemoryStore& store = host_.server->store();
  if (const std::vector<std::string>* changed = store.ChangedKeys()) {
    for (const std::string& key : *changed) host_.ledger->Update(key, store.Find(key));
  } else {
    host_.ledger->Resync(store.Prefix(keys_.job_prefix()));
  }
  store.ClearChanged();
  HostDecide();
}

void MasterNode::HostDecide() {
  KvMemoryStore& store = host_.server->store();
  bool wrote = false;
  // A node whose --nnodes or run mode is not the job's would form a world of its own (silent
  // wrong training): the host refuses it, naming it, and the node stops when it reads why.
  for (const auto& [key, value] : host_.ledger->TakeLate()) {
    PDLOG_WARN(
        "node {} registered for job {} after its world of {} nodes formed: it is not part "
        "of the job (one too many, or late from an earlier run)",
        PeerName(key, value), settings_.job_id, settings_.nnodes);
  }
  for (const JobLedger::Refusal& refusal : host_.ledger->TakeRefusals()) {
    PDLOG_WARN("refused node {} for job {}: {}", refusal.node, settings_.job_id, refusal.why);
    store.Put(keys_.refused(refusal.pod), refusal.why, std::nullopt, /*within_limits=*/false);
    wrote = true;
    host_.refused_pods.push_back(refusal.pod);  // It reads why before the host leaves (Finish).
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
  for (const std::string& key : host_.ledger->TakeStaleInfo(&left)) wrote |= store.Delete(key);
  for (const std::string& pod : std::set<std::string>(left.begin(), left.end())) {
    PDLOG_WARN(
        "node {} left before the job started (no heartbeat for {} s); forgetting it until its "
        "heartbeat comes back",
        OneLine(pod), settings_.heartbeat_timeout);
  }
  // A node that was only slow (paused, or starved on a loaded host) counts again: its records
  // go back where it wrote them, and it never knew it was forgotten.
  for (const auto& [key, value] : host_.ledger->TakeRevived()) {
    PDLOG_AT(say_, "node {} is back: its heartbeat resumed before the world formed",
             PeerName(key, value));
    store.Put(key, value, std::nullopt, /*within_limits=*/false);
    host_.ledger->Update(key, &value);
    wrote = true;
  }
  if (phase_ == Phase::kRendezvous && !rendezvous_error_) {
    FormWorld();
  } else if (phase_ == Phase::kRunning || phase_ == Phase::kCompleting) {
    const MasterStep step = host_.ledger->Step();
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
  if (wrote) host_.server->Changed();
}

// The world forms when --nnodes nodes count: the host orders them (OrderKeys, as Paddle's nodes
// do) and publishes the world once; every participant reads it once.
void MasterNode::FormWorld() {
  const std::map<std::string, std::string>& counted = host_.ledger->counted();
  if (static_cast<int>(counted.size()) < settings_.nnodes) return;
  KvMemoryStore& store = host_.server->store();
  if (static_cast<int>(counted.size()) > settings_.nnodes) {
    rendezvous_error_ = TooManyNodes(counted);
    Stop();
  } else if (AdoptPeers(counted)) {
    store.Put(keys_.world(), EncodeWorld(world_), std::nullopt, /*within_limits=*/false);
    store.Put(keys_.formed(), EncodeFormed({settings_.nnodes, {}}), std::nullopt,
              /*within_limits=*/false);
    host_.ledger->Form(members_);
    // A member that joined and never runs ranks (a stranger's records, say) would keep the host
    // waiting for its done report for as long as it keeps a heartbeat: it is given a bound.
    const double bound = RunningBound();
    host_.running_check = std::make_unique<LoopTimer>(loop_.get(), bound, [this, bound] {
      auto keep = std::move(host_.running_check);  // Destroyed after the call: no re-arm.
      const std::vector<std::string> idle = host_.ledger->NotRunning();
      if (idle.empty()) return;
      PublishFailure(JobFailure{
          node_ip_, "",
          fmt::format("node {} joined the world of job {} but started no rank within {} s: a "
                      "stranger's records, or a launcher of another version; stopping the job",
                      fmt::join(NamesOf(idle), ", "), settings_.job_id, bound),
          1});
    });
    return host_.server->Changed();
  }
  // Every node exits with the host's reason (two nodes with one --rank, say).
  store.Put(keys_.formed(), EncodeFormed({0, *rendezvous_error_}), std::nullopt,
            /*within_limits=*/false);
  host_.server->Changed();
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
      link_.registered ? ""
                       : fmt::format("; this node never reached the master ({})", UnansweredWhy()));
}

// The host's own records never meet the store's limits; a participant's are retried until the
// master takes them, or the node fails (Finish).
void MasterNode::PublishFailure(const JobFailure& failure) {
  if (host_.server) {
    if (host_.server->store().PutIfAbsent(keys_.failure(), EncodeFailure(failure),
                                          /*within_limits=*/false)) {
      host_.server->Changed();
    }
    return;
  }
  if (link_.foreign || !link_.registered) return;
  PutConfirmed(keys_.failure(), EncodeFailure(failure), "?create=1", "failure record",
               Clock::now());
}

void MasterNode::PublishDone() {
  if (done_published_) return;  // A PS node reports when its workers end, then completes.
  done_published_ = true;
  if (host_.server) {
    host_.server->store().Put(keys_.done(pod_), "0", std::nullopt, /*within_limits=*/false);
    host_.server->Changed();
    return;
  }
  if (link_.foreign) return;
  PutConfirmed(keys_.done(pod_), "0", "", "done report", Clock::now());
}

// The host serves until each of `pods` wrote its heard/<pod> key, for a few seconds at most.
void MasterNode::ServeUntilHeard(const std::vector<std::string>& pods) {
  const KvMemoryStore& store = host_.server->store();
  loop_.RunUntil(
      [&] {
        return std::all_of(pods.begin(), pods.end(), [&](const std::string& pod) {
          return store.Find(keys_.heard(pod)) != nullptr;
        });
      },
      std::min(settings_.heartbeat_timeout, kHeardSeconds));
}

}  // namespace pdlaunch::internal::master
