#pragma once

// A test double of the KV store: in memory, etcd's semantics. It lives in tests/, never in the
// product; tests/unit/coord/kv_store_fake_test.cc holds it to etcd's behaviour.

#include <cstdint>
#include <memory>
#include <string>

#include "pdlaunch/coord/kv_store.h"

namespace pdlaunch {

/// An in-memory store with etcd's semantics (one global revision counter starting at 1, leases
/// that expire only through ExpireLease, watches whose fd is an eventfd/pipe made readable on
/// every change). One instance may be shared by several clients in one test.
class FakeKvStore : public KvStore {
 public:
  FakeKvStore();
  ~FakeKvStore() override;
  int64_t Put(const std::string& key, const std::string& value, int64_t lease = 0) override;
  bool PutIf(const std::string& key, int64_t expected_mod_revision, const std::string& value,
             int64_t lease = 0) override;
  Range Get(const std::string& key) override;
  Range GetPrefix(const std::string& prefix) override;
  int64_t Delete(const std::string& key) override;
  int64_t DeletePrefix(const std::string& prefix) override;
  int64_t GrantLease(int ttl_seconds) override;
  int64_t KeepAlive(int64_t lease) override;
  void RevokeLease(int64_t lease) override;
  std::unique_ptr<KvWatch> Watch(const std::string& prefix, int64_t start_revision) override;

  /// Test control: the lease expires now (its keys are deleted, watchers see kDelete).
  void ExpireLease(int64_t lease);
  /// Test control: while down, every call throws KvUnavailable and open watches break.
  void SetAvailable(bool available);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace pdlaunch
