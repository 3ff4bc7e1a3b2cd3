#include "support/kv_store_fake.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/coord/kv_store.h"

namespace pdlaunch {

namespace {

bool HasPrefix(const std::string& key, const std::string& prefix) {
  return key.compare(0, prefix.size(), prefix) == 0;
}

// The pending events of one watch and its eventfd, which is readable while there are any (or
// the watch is broken).
struct WatchQueue {
  WatchQueue() : fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd < 0) ThrowSystemError(errno, "cannot create an eventfd for a fake watch");
  }
  ~WatchQueue() { ::close(fd); }
  WatchQueue(const WatchQueue&) = delete;
  WatchQueue& operator=(const WatchQueue&) = delete;

  void Signal() const {
    const uint64_t one = 1;
    // Only fails when the counter would overflow: then it is readable anyway.
    [[maybe_unused]] const ssize_t written = ::write(fd, &one, sizeof(one));
  }
  void Drain() const {
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t got = ::read(fd, &count, sizeof(count));
  }

  const int fd;
  std::mutex mutex;  // Guards `events` and `broken`; taken after the store's mutex.
  std::string prefix;
  int64_t start_revision = 0;
  std::vector<KvEvent> events;
  bool broken = false;
};

class FakeWatch : public KvWatch {
 public:
  explicit FakeWatch(std::shared_ptr<WatchQueue> queue) : queue_(std::move(queue)) {}

  int fd() const override { return queue_->fd; }

  std::vector<KvEvent> Read() override {
    const std::lock_guard lock(queue_->mutex);
    if (queue_->broken) throw KvUnavailable("etcd fake: watch: stream broken");
    queue_->Drain();
    return std::exchange(queue_->events, {});
  }

 private:
  std::shared_ptr<WatchQueue> queue_;
};

struct Lease {
  int ttl = 0;
  std::set<std::string> keys;
};

}  // namespace

struct FakeKvStore::State {
  // Throws KvUnavailable while the store is down. Call with `mutex` held.
  void CheckAvailable(const char* what) const {
    if (!available) throw KvUnavailable(std::string("etcd fake: ") + what + ": unavailable");
  }
  // Records `event` at the current revision and delivers it to the matching watches.
  void Publish(const KvEvent& event);
  void Write(const std::string& key, const std::string& value, int64_t lease);
  // Detaches `key` from `lease` (if the lease still exists).
  void ForgetKey(int64_t lease, const std::string& key) {
    const auto it = leases.find(lease);
    if (it != leases.end()) it->second.keys.erase(key);
  }
  // Deletes `key` at the current revision (the caller bumps it once per operation).
  void Erase(const std::string& key);
  // Deletes the keys of `lease` and the lease, at one new revision.
  void DropLease(int64_t lease);

  std::mutex mutex;
  int64_t revision = 1;
  std::map<std::string, KeyValue> kvs;
  std::map<int64_t, Lease> leases;
  int64_t next_lease = 7000;
  bool available = true;
  std::vector<KvEvent> history;  // Every event, in revision order, for watches from the past.
  std::list<std::weak_ptr<WatchQueue>> watches;
};

void FakeKvStore::State::Publish(const KvEvent& event) {
  history.push_back(event);
  for (auto it = watches.begin(); it != watches.end();) {
    const std::shared_ptr<WatchQueue> queue = it->lock();
    if (!queue) {
      it = watches.erase(it);
      continue;
    }
    const std::lock_guard lock(queue->mutex);
    if (HasPrefix(event.kv.key, queue->prefix) && event.kv.mod_revision >= queue->start_revision &&
        !queue->broken) {
      queue->events.push_back(event);
      queue->Signal();
    }
    ++it;
  }
}

void FakeKvStore::State::Write(const std::string& key, const std::string& value, int64_t lease) {
  if (lease != 0 && !leases.contains(lease)) {
    throw KvUnavailable("etcd fake: put: requested lease not found");
  }
  ++revision;
  KeyValue& kv = kvs[key];
  if (kv.lease != lease) ForgetKey(kv.lease, key);
  if (lease != 0) leases[lease].keys.insert(key);
  if (kv.create_revision == 0) kv.create_revision = revision;
  kv.key = key;
  kv.value = value;
  kv.mod_revision = revision;
  kv.lease = lease;
  Publish(KvEvent{KvEvent::Type::kPut, kv});
}

void FakeKvStore::State::Erase(const std::string& key) {
  const auto it = kvs.find(key);
  ForgetKey(it->second.lease, key);
  kvs.erase(it);
  KvEvent event{KvEvent::Type::kDelete, {}};
  event.kv.key = key;
  event.kv.mod_revision = revision;
  Publish(event);
}

void FakeKvStore::State::DropLease(int64_t lease) {
  const auto it = leases.find(lease);
  if (it == leases.end()) return;
  const std::set<std::string> keys = std::move(it->second.keys);
  leases.erase(it);
  if (keys.empty()) return;
  ++revision;
  for (const std::string& key : keys) Erase(key);
}

FakeKvStore::FakeKvStore() : state_(std::make_shared<State>()) {}

FakeKvStore::~FakeKvStore() = default;

int64_t FakeKvStore::Put(const std::string& key, const std::string& value, int64_t lease) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("put");
  state_->Write(key, value, lease);
  return state_->revision;
}

bool FakeKvStore::PutIf(const std::string& key, int64_t expected_mod_revision,
                        const std::string& value, int64_t lease) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("txn");
  const auto it = state_->kvs.find(key);
  const int64_t mod_revision = it == state_->kvs.end() ? 0 : it->second.mod_revision;
  if (mod_revision != expected_mod_revision) return false;
  state_->Write(key, value, lease);
  return true;
}

KvStore::Range FakeKvStore::Get(const std::string& key) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("range");
  Range range;
  range.revision = state_->revision;
  const auto it = state_->kvs.find(key);
  if (it != state_->kvs.end()) range.kvs.push_back(it->second);
  return range;
}

KvStore::Range FakeKvStore::GetPrefix(const std::string& prefix) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("range");
  Range range;
  range.revision = state_->revision;
  for (auto it = state_->kvs.lower_bound(prefix);
       it != state_->kvs.end() && HasPrefix(it->first, prefix); ++it) {
    range.kvs.push_back(it->second);
  }
  return range;
}

int64_t FakeKvStore::Delete(const std::string& key) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("deleterange");
  if (!state_->kvs.contains(key)) return 0;
  ++state_->revision;
  state_->Erase(key);
  return 1;
}

int64_t FakeKvStore::DeletePrefix(const std::string& prefix) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("deleterange");
  std::vector<std::string> keys;
  for (auto it = state_->kvs.lower_bound(prefix);
       it != state_->kvs.end() && HasPrefix(it->first, prefix); ++it) {
    keys.push_back(it->first);
  }
  if (keys.empty()) return 0;
  ++state_->revision;  // One revision for the whole range, as etcd does.
  for (const std::string& key : keys) state_->Erase(key);
  return static_cast<int64_t>(keys.size());
}

int64_t FakeKvStore::GrantLease(int ttl_seconds) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("lease grant");
  const int64_t id = state_->next_lease++;
  state_->leases[id].ttl = ttl_seconds;
  return id;
}

int64_t FakeKvStore::KeepAlive(int64_t lease) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("lease keepalive");
  const auto it = state_->leases.find(lease);
  return it == state_->leases.end() ? 0 : it->second.ttl;
}

void FakeKvStore::RevokeLease(int64_t lease) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("lease revoke");
  state_->DropLease(lease);
}

std::unique_ptr<KvWatch> FakeKvStore::Watch(const std::string& prefix, int64_t start_revision) {
  const std::lock_guard lock(state_->mutex);
  state_->CheckAvailable("watch");
  auto queue = std::make_shared<WatchQueue>();
  queue->prefix = prefix;
  queue->start_revision = start_revision;
  // Revision 0 means "from now on", as in etcd.
  for (const KvEvent& event : state_->history) {
    if (start_revision != 0 && event.kv.mod_revision >= start_revision &&
        HasPrefix(event.kv.key, prefix)) {
      queue->events.push_back(event);
    }
  }
  if (!queue->events.empty()) queue->Signal();
  state_->watches.push_back(queue);
  return std::make_unique<FakeWatch>(std::move(queue));
}

void FakeKvStore::ExpireLease(int64_t lease) {
  const std::lock_guard lock(state_->mutex);
  state_->DropLease(lease);
}

void FakeKvStore::SetAvailable(bool available) {
  const std::lock_guard lock(state_->mutex);
  state_->available = available;
  if (available) return;
  for (const std::weak_ptr<WatchQueue>& weak : state_->watches) {
    if (const std::shared_ptr<WatchQueue> queue = weak.lock()) {
      const std::lock_guard queue_lock(queue->mutex);
      queue->broken = true;
      queue->Signal();
    }
  }
  state_->watches.clear();
}

}  // namespace pdlaunch
