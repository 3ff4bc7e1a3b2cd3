// A participant of a master rendezvous (master_node.h): the HTTP exchange with the master
// (contact, register, long-poll the news, read the world, heartbeats, confirmed writes).
#include "run/master_node.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal::master {

// The job token on both sides or on neither (docs/master.md, "Exposure"): a node without it is
// refused by the master (401), and a node with it refuses a master that does not check it.
std::optional<std::string> MasterNode::TokenError(const HttpReply& reply) const {
  const bool has_token = token_.has_value();
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
  link_.client->Request("GET", "/healthy", "", 5.0, [this](const HttpReply& reply) {
    if (reply.status != 0) {
      link_.unanswered_since.reset();
    } else if (!link_.unanswered_since) {
      link_.unanswered_since = Clock::now();
    }
    const bool may_host = !master_.hosting_deferred ||
                          (link_.unanswered_since &&
                           SecondsSince(*link_.unanswered_since) >= kDeferredHostingSeconds);
    if (reply.status == 0 && master_.is_local && may_host && TryToServe()) {
      // Nobody listens at the master's port on this host, and now this launcher does: the
      // launcher that had it is gone, or both lost the race described at TryToServe().
      PDLOG_AT(say_,
               "nobody answered at the master {} ({}); this node ({}) hosts it now for job {} "
               "({} nodes)",
               MasterText(), reply.error, node_ip_, settings_.job_id, settings_.nnodes);
      link_.client.reset();
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
    link_.foreign = !reply.server.starts_with("pdlaunch/");
    // One master serves one job: a node of another job would wait on a host that leaves when
    // its own job is done (docs/master.md, "Several jobs on one master").
    if (auto error = ForeignJobError(MasterText(), reply.server, reply.job, settings_.job_id)) {
      // In a sequence of jobs (the auto tuner's), the master of the previous one may still be
      // answering its last reports: asked again until it is gone and the next is served.
      if (settings_.sequential) return Retry([this] { Contact(); }, *error);
      rendezvous_error_ = std::move(*error);
      return Stop();
    }
    if (link_.foreign) {
      PDLOG_WARN("the master at {} is not pdlaunch's ({}): no failure detection between nodes",
                 MasterText(), reply.server);
    }
    link_.backoff = 0.1;
    link_.last_contact = Clock::now();
    link_.answered = true;
    Register();
  });
}

void MasterNode::Register() {
  const std::string ttl = fmt::format("?ttl={}", settings_.heartbeat_timeout);
  const auto put_info = [this](bool ok) {
    if (!ok) return Retry([this] { Register(); }, link_.last_error);
    Put(own_key_, value_, "", [this](bool ok2) {
      if (!ok2) return Retry([this] { Register(); }, link_.last_error);
      link_.registered = true;
      link_.last_heartbeat = Clock::now();
      Poll();
    });
  };
  if (link_.foreign) return put_info(true);
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
  ++link_.pending_puts;
  link_.client->Request(
      "PUT", key + query, value, 5.0, [this, done = std::move(done)](const HttpReply& reply) {
        --link_.pending_puts;
        link_.last_put_status = reply.status;
        // A master that serves another job now is not this job's: its host left
        // (its job was over) and a job of a sequence, or another, took the port.
        // What is sent there is not delivered, nor does it count as contact.
        link_.last_put_elsewhere =
            !link_.foreign && !reply.job.empty() && reply.job != settings_.job_id;
        const bool ok = !link_.last_put_elsewhere && (reply.status == 200 || reply.status == 412);
        if (ok) {
          link_.last_contact = Clock::now();
        } else if (link_.last_put_elsewhere) {
          link_.last_error = fmt::format("the master now serves job {}", reply.job);
        } else {
          link_.last_error = reply.status == 0 ? reply.error : fmt::format("HTTP {}", reply.status);
        }
        if (done) done(ok);
      });
}

void MasterNode::PutConfirmed(const std::string& key, const std::string& value,
                              const std::string& query, const std::string& what,
                              Clock::time_point first) {
  ++link_.confirming;
  Put(key, value, query, [=, this](bool ok) {
    if (ok) {
      --link_.confirming;
      return;
    }
    if (link_.last_put_elsewhere) {
      // The job's master is gone and another job serves its port: the job is over there.
      --link_.confirming;
      PDLOG_DEBUG("not delivering this node's {}: {}", what, link_.last_error);
      return;
    }
    // A master that answers and refuses (413: its store is full) is given --heartbeat_timeout;
    // one that does not answer (gone: its job ended or failed, or the network) the flush time.
    const double limit = link_.last_put_status != 0 ? settings_.heartbeat_timeout : kFlushSeconds;
    if (SecondsSince(first) >= limit) {
      --link_.confirming;
      if (!link_.unconfirmed) {
        link_.unconfirmed =
            fmt::format("the master at {} did not take this node's {} in {:.0f} s ({})",
                        MasterText(), what, SecondsSince(first), UnansweredWhy());
      }
      return;
    }
    const auto it = link_.write_retries.insert(link_.write_retries.end(), nullptr);
    // In a sequence of jobs the next one takes the port within milliseconds: asked again soon.
    const double pause = settings_.sequential ? 0.02 : kConfirmRetrySeconds;
    *it = std::make_unique<LoopTimer>(loop_.get(), pause, [=, this] {
      const std::unique_ptr<LoopTimer> keep = std::move(*it);  // Destroyed after: no re-arm.
      link_.write_retries.erase(it);
      --link_.confirming;
      PutConfirmed(key, value, query, what, first);
    });
  });
}

// A participant long-polls the news (small: terms, refusals, the world formed, a failure), which
// no join, heartbeat or report touches; a node of Paddle's master polls the peers.
void MasterNode::Poll() {
  if (link_.polling || phase_ == Phase::kDone) return;
  link_.polling = true;
  const std::string target =
      link_.foreign
          ? keys_.info_prefix()
          : fmt::format("{}?wait={}&timeout={}", keys_.news_prefix(), link_.revision, kPollSeconds);
  link_.client->Request("GET", target, "", kPollSeconds + 5.0, [this](const HttpReply& reply) {
    link_.polling = false;
    if (reply.status != 200 && reply.status != 404) {
      return Retry([this] { Poll(); },
                   reply.status == 0 ? reply.error : fmt::format("HTTP {}", reply.status));
    }
    link_.last_contact = Clock::now();
    link_.backoff = 0.1;
    if (reply.revision >= 0) link_.revision = reply.revision;
    std::map<std::string, std::string> kvs;
    if (reply.status == 200) {
      try {
        kvs = DecodeJsonObject(reply.body);
      } catch (const LaunchError& e) {
        return Retry([this] { Poll(); }, e.what());
      }
    }
    if (link_.foreign) {
      OnForeignPeers(kvs);
      link_.retry = std::make_unique<LoopTimer>(loop_.get(), kForeignPollSeconds, [this] {
        link_.retry.reset();
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
  link_.reading_world = true;
  link_.client->Request("GET", keys_.world(), "", 30.0, [this](const HttpReply& reply) {
    if (phase_ != Phase::kRendezvous || rendezvous_error_) return;
    if (reply.status != 200) {
      return Retry([this] { ReadWorld(); },
                   reply.status == 0 ? reply.error : fmt::format("HTTP {}", reply.status));
    }
    link_.last_contact = Clock::now();
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
  link_.last_error = error;
  // Before the world forms, a thousand nodes may be knocking at once: a short pause with jitter
  // (50 to 100 ms) spreads them without leaving a node idle for seconds; afterwards, back-off
  // doubling from 0.1 s to 1 s.
  // In a sequence of jobs (the auto tuner's), the master is away only between two jobs, for
  // milliseconds: 10 to 20 ms, so that the gap between trials stays that short.
  const double pause = settings_.sequential ? 0.01 : 0.05;
  const double delay = phase_ == Phase::kRendezvous
                           ? pause + pause * std::uniform_real_distribution<double>()(jitter_)
                           : link_.backoff;
  link_.backoff = std::min(kMaxBackoff, link_.backoff * 2);
  link_.retry = std::make_unique<LoopTimer>(loop_.get(), delay, [this, call = std::move(call)] {
    auto keep = std::move(link_.retry);  // Destroyed after the call: no re-arm.
    call();
  });
}

void MasterNode::Heartbeat() {
  if (!link_.registered || link_.foreign || !link_.client || phase_ == Phase::kDone) return;
  if (SecondsSince(link_.last_heartbeat) < settings_.heartbeat_timeout / 4) return;
  link_.last_heartbeat = Clock::now();
  // Once its world formed, the heartbeat says so: the host fails a member that never does.
  const std::string_view value = phase_ == Phase::kRendezvous ? "1" : kRunningHeartbeat;
  Put(keys_.alive(pod_), std::string(value), fmt::format("?ttl={}", settings_.heartbeat_timeout),
      nullptr);
}

// The rendezvous deadline passed: the error names the nodes that registered. The host knows
// them and publishes its error for every node; a participant that did not hear it asks the
// master once (for at most 2 s).
void MasterNode::TimeOut() {
  if (timing_out_) return;
  timing_out_ = true;
  if (host_.ledger) {
    rendezvous_error_ =
        TimeoutError(host_.ledger->counted().size(), RegisteredNames(host_.ledger->counted()));
    host_.server->store().Put(keys_.formed(), EncodeFormed({0, *rendezvous_error_}), std::nullopt,
                              /*within_limits=*/false);
    host_.server->Changed();
    return Stop();
  }
  if (!link_.client || !link_.answered) {
    rendezvous_error_ = TimeoutError(0, {});
    return Stop();
  }
  link_.client->Request("GET", keys_.info_prefix(), "", 2.0, [this](const HttpReply& reply) {
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
  if (!link_.registered || phase_ == Phase::kDone) return;
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
      if (!link_.reading_world) ReadWorld();
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
  if (!link_.registered || phase_ != Phase::kRendezvous) return;
  if (static_cast<int>(info.size()) < settings_.nnodes) return;
  if (static_cast<int>(info.size()) > settings_.nnodes) {
    rendezvous_error_ = TooManyNodes(info);
    return Stop();
  }
  AdoptPeers(info);
}

}  // namespace pdlaunch::internal::master
