// The auto tuner's agreement between the nodes of a search through etcd (--master etcd://):
// each exchange a barrier of `nodes` keys under one prefix (coord/store_exchange.h), waited for
// in the supervisor's loop (the etcd watch, a tick for the lease and the deadline, signals).
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/base/random_seed.h"
#include "pdlaunch/coord/kv_store.h"
#include "pdlaunch/coord/store_exchange.h"
#include "pdlaunch/process/supervisor.h"
#include "run/job_status.h"
#include "run/launch_paths.h"

namespace pdlaunch::internal {
namespace {

using Clock = std::chrono::steady_clock;

/// A node's keys live this long after its last keep-alive. Once an exchange is over, a node
/// leaves its key to a slower node that has not read it yet (it has this long), and revokes it
/// when the next exchange is over (every node wrote that one, so all have read this one); the
/// last one goes with its lease. A dead node's go with it; until then they are waited out, never
/// counted (DecideExchange).
constexpr int kLeaseSeconds = 30;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string RandomNodeId() { return fmt::format("{:016x}", RandomSeed()); }

class EtcdExchange : public ExternalEvents {
 public:
  EtcdExchange(std::shared_ptr<KvStore> store, std::string scope, int nodes,
               double unavailable_limit, std::optional<JobToken> token)
      : store_(std::move(store)),
        scope_(std::move(scope)),
        nodes_(static_cast<size_t>(nodes)),
        unavailable_limit_(unavailable_limit),
        token_(std::move(token)),
        id_(RandomNodeId()) {}

  ExchangeResult Exchange(const std::string& name, const std::string& value, double timeout);
  /// Every node is past the last exchange (a job of them all ran since): its key goes now.
  ExchangeResult Close() {
    Revoke(previous_lease_);
    return {};
  }

  int fd() override { return watch_ ? watch_->fd() : -1; }
  bool OnReadable() override;
  double tick_seconds() const override { return 0.5; }
  bool OnTick() override;

 private:
  void Publish();
  void Step();
  void Scan();
  void Unavailable(const KvUnavailable& e);
  void Revoke(int64_t& lease);
  void SayIgnored(const std::vector<IgnoredKey>& ignored);
  const JobToken* token() const { return token_ ? &*token_ : nullptr; }
  bool Over() const { return values_.has_value() || error_.has_value() || timed_out_; }

  std::shared_ptr<KvStore> store_;
  std::string scope_;
  size_t nodes_;
  double unavailable_limit_;  // Seconds etcd may stay unreachable in a row.
  std::optional<JobToken> token_;
  std::string id_;
  std::string session_;  // Empty until the first exchange is over.
  // The exchange under way.
  std::string prefix_;
  std::string own_key_;
  std::string name_;
  std::string value_;
  std::string written_;         // The record this node last wrote under own_key_.
  std::set<std::string> said_;  // Keys said to be ignored in this exchange.
  bool repaired_ = false;       // Whether this exchange said that its record was put back.
  std::string confirmed_;       // The digest of the complete set this node confirmed; empty: none.
  Clock::time_point start_;
  double timeout_ = 0;
  int64_t lease_ = 0;
  int64_t previous_lease_ = 0;  // The last exchange's that was over: its key stays till now.
  bool published_ = false;
  Clock::time_point last_keepalive_;
  std::unique_ptr<KvWatch> watch_;
  std::vector<KeyValue> kvs_;
  std::optional<std::vector<std::string>> values_;
  std::string digest_;  // The digest of the records of the exchange that completed.
  std::optional<std::string> error_;
  std::optional<std::string> unavailable_;  // The last failure to reach etcd, said once.
  std::optional<Clock::time_point> unavailable_since_;  // Unreachable since; reset on success.
  bool timed_out_ = false;
};

void EtcdExchange::Publish() {
  try {
    if (lease_ == 0) lease_ = store_->GrantLease(kLeaseSeconds);
    written_ = EncodeExchangeRecord(own_key_, confirmed_, value_, token());
    store_->Put(own_key_, written_, lease_);
    published_ = true;
    last_keepalive_ = Clock::now();
  } catch (const KvUnavailable& e) {
    // The lease may be the reason (it expired while etcd was away): a new one next time.
    lease_ = 0;
    published_ = false;
    Unavailable(e);
  }
}

void EtcdExchange::Unavailable(const KvUnavailable& e) {
  if (!unavailable_) PDLOG_WARN("auto tuner: {}; trying again", e.what());
  unavailable_ = e.what();
  if (!unavailable_since_) unavailable_since_ = Clock::now();
}

// Lists the exchange's keys and takes the step they call for: done, or this node's confirmation
// of the complete set written (then listed again: the others may all have confirmed already).
void EtcdExchange::Step() {
  for (int pass = 0; pass < 2; ++pass) {
    kvs_ = store_->GetPrefix(prefix_).kvs;
    unavailable_since_.reset();
    const ExchangeStep step = DecideExchange(kvs_, nodes_, own_key_, written_, token());
    SayIgnored(step.ignored);
    if (step.kind == ExchangeStep::Kind::kDone) {
      values_ = step.values;
      digest_ = step.digest;
      return;
    }
    if (step.kind == ExchangeStep::Kind::kRepair) {
      // Only this node writes its key: a stranger changed or removed it. Put back, and the
      // exchange completes with the true values once the stranger stops.
      if (!repaired_) {
        PDLOG_WARN(
            "auto tuner: this node's record in the exchange {} in etcd was changed or removed by "
            "someone else; writing it again (docs/master.md, \"Exposure\")",
            name_);
      }
      repaired_ = true;
    } else if (step.kind == ExchangeStep::Kind::kConfirm) {
      confirmed_ = step.digest;
    } else {
      return;
    }
    Publish();
    if (!published_) return;
  }
}

void EtcdExchange::Scan() {
  try {
    Step();
    if (values_ || watch_ || !published_) return;
    // The watch from now on, then the listing again: what came before the watch, the listing
    // has. (A watch from a past revision would do too, but etcd serves one that starts behind
    // its head from a loop that runs every 100 ms: a key written between the listing and the
    // watch would come up to 100 ms late.)
    watch_ = store_->Watch(prefix_, 0);
    Step();
  } catch (const KvUnavailable& e) {
    watch_.reset();  // Listed again, and watched anew, at the next tick.
    Unavailable(e);
    return;
  } catch (const LaunchError& e) {
    error_ = e.what();
  }
}

void EtcdExchange::SayIgnored(const std::vector<IgnoredKey>& ignored) {
  for (const IgnoredKey& key : ignored) {
    if (said_.size() >= 16 || !said_.insert(key.key).second) continue;  // Said once, 16 at most.
    PDLOG_WARN("auto tuner: ignoring {} in the exchange {} in etcd: {}", key.key, name_, key.why);
  }
}

void EtcdExchange::Revoke(int64_t& lease) {
  if (lease == 0) return;
  try {
    store_->RevokeLease(lease);
  } catch (const KvUnavailable&) {
    // Its keys go with the TTL.
  }
  lease = 0;
}

bool EtcdExchange::OnReadable() {
  try {
    watch_->Read();  // The events only say "something changed": the listing says what.
  } catch (const KvUnavailable&) {
    watch_.reset();
    return false;
  }
  Scan();
  return Over();
}

bool EtcdExchange::OnTick() {
  if (SecondsSince(start_) > timeout_ ||
      (unavailable_since_ && SecondsSince(*unavailable_since_) > unavailable_limit_)) {
    timed_out_ = true;
    return true;
  }
  if (!published_) {
    Publish();
    if (published_) Scan();
  } else if (SecondsSince(last_keepalive_) >= kLeaseSeconds / 3.0) {
    try {
      if (store_->KeepAlive(lease_) == 0) {  // Expired while etcd was away: write it again.
        lease_ = 0;
        published_ = false;
        Publish();
      }
      last_keepalive_ = Clock::now();
    } catch (const KvUnavailable&) {
      // Tried again at the next tick; Scan says it.
    }
  }
  if (published_ && !watch_) Scan();
  return Over();
}

ExchangeResult EtcdExchange::Exchange(const std::string& name, const std::string& value,
                                      double timeout) {
  prefix_ = ExchangePrefix(scope_, session_, name);
  own_key_ = prefix_ + id_;
  name_ = name;
  value_ = value;
  written_.clear();
  said_.clear();
  repaired_ = false;
  digest_.clear();
  confirmed_.clear();
  start_ = Clock::now();
  timeout_ = timeout;
  lease_ = 0;
  published_ = false;
  watch_.reset();
  kvs_.clear();
  values_.reset();
  error_.reset();
  unavailable_.reset();
  unavailable_since_.reset();
  timed_out_ = false;
  Publish();
  if (published_) Scan();
  ExchangeResult result;
  if (!Over()) {
    SupervisorOptions wait;
    wait.external = this;
    ConsoleSettings console;
    console.waiting_for = fmt::format("the other nodes in etcd ({})", name);
    wait.status = JobStatus(std::move(console), nullptr);  // An exchange: no job to record.
    const SupervisorResult waited = Supervise({}, wait);
    if (waited.signal) result.code = 128 + *waited.signal;
  }
  watch_.reset();
  if (error_) {
    Revoke(lease_);
    throw LaunchError(fmt::format("auto tuner: {}", *error_));
  }
  if (!values_) {
    Revoke(lease_);  // Nobody is to read it: the exchange is given up.
    if (timed_out_ && unavailable_since_) {
      PDLOG_ERROR("auto tuner: etcd was unreachable for {} s during the exchange {}: {}",
                  unavailable_limit_, name, *unavailable_);
    } else if (timed_out_) {
      PDLOG_ERROR("auto tuner: the exchange {} in etcd did not complete within {} s: {}{}", name,
                  timeout, ExchangeShortfall(kvs_, nodes_, own_key_, token()),
                  unavailable_ ? fmt::format(" (etcd: {})", *unavailable_) : std::string());
    }
    if (result.code == 0) result.code = 1;
    return result;
  }
  // Over: this key stays for the nodes that have not read it yet; the previous one goes.
  Revoke(previous_lease_);
  previous_lease_ = lease_;
  lease_ = 0;
  if (session_.empty()) session_ = digest_;
  result.values = std::move(*values_);
  return result;
}

}  // namespace

StoreExchangeCall MakeStoreExchange(std::shared_ptr<KvStore> store, std::string scope, int nodes,
                                    double unavailable_limit, std::optional<JobToken> token) {
  auto exchange = std::make_shared<EtcdExchange>(std::move(store), std::move(scope), nodes,
                                                 unavailable_limit, std::move(token));
  return [exchange](const std::string& name, const std::string& value, double timeout) {
    if (name.empty()) return exchange->Close();
    return exchange->Exchange(name, value, timeout);
  };
}

}  // namespace pdlaunch::internal
