// The auto tuner's exchange through a KV store (src/run/etcd_exchange.cc) on the in-memory fake
// with etcd's semantics: the waits run the supervisor's real loop (the watch's fd, the tick,
// signals). Two real nodes through a real etcd: tests/e2e/test_auto_tuner.py.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pdlaunch/coord/kv_store.h"
#include "pdlaunch/coord/store_exchange.h"
#include "pdlaunch/process/launcher_signals.h"
#include "pdlaunch/process/supervisor.h"
#include "run/launch_paths.h"
#include "support/kv_store_fake.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using internal::MakeStoreExchange;
using testutil::ErrorOf;

/// One client of a fake store the test shares.
class Client : public KvStore {
 public:
  explicit Client(FakeKvStore* store) : store_(store) {}
  int64_t Put(const std::string& k, const std::string& v, int64_t lease) override {
    return store_->Put(k, v, lease);
  }
  bool PutIf(const std::string& k, int64_t rev, const std::string& v, int64_t lease) override {
    return store_->PutIf(k, rev, v, lease);
  }
  Range Get(const std::string& k) override { return store_->Get(k); }
  Range GetPrefix(const std::string& p) override { return store_->GetPrefix(p); }
  int64_t Delete(const std::string& k) override { return store_->Delete(k); }
  int64_t DeletePrefix(const std::string& p) override { return store_->DeletePrefix(p); }
  int64_t GrantLease(int ttl) override { return store_->GrantLease(ttl); }
  int64_t KeepAlive(int64_t lease) override { return store_->KeepAlive(lease); }
  void RevokeLease(int64_t lease) override { store_->RevokeLease(lease); }
  std::unique_ptr<KvWatch> Watch(const std::string& p, int64_t rev) override {
    return store_->Watch(p, rev);
  }

 private:
  FakeKvStore* store_;
};

class EtcdExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override { BlockLauncherSignals(); }
  internal::StoreExchangeCall Node(int nodes) {
    return MakeStoreExchange(std::make_unique<Client>(&store_), "job", nodes,
                             /*unavailable_limit=*/30);
  }
  std::vector<std::string> Keys(const std::string& prefix) {
    std::vector<std::string> keys;
    for (const KeyValue& kv : store_.GetPrefix(prefix).kvs) keys.push_back(kv.key);
    return keys;
  }
  /// Another node, as a thread: writes its record under `prefix`, then, once `nodes` keys are
  /// there, confirms that set as a real node does (the test polls; the launcher never does).
  std::thread Peer(const std::string& prefix, const std::string& id, const std::string& value,
                   size_t nodes) {
    return std::thread([this, prefix, id, value, nodes] {
      store_.Put(prefix + id, EncodeExchangeRecord(prefix + id, "", value));
      testutil::WaitFor(
          [&] {
            std::vector<KeyValue> kvs = store_.GetPrefix(prefix).kvs;
            std::erase_if(kvs, [](const KeyValue& kv) {  // Only records count.
              return kv.value.size() < 17 || kv.value[16] != ' ';
            });
            if (kvs.size() != nodes) return false;
            store_.Put(prefix + id, EncodeExchangeRecord(prefix + id, ExchangeSession(kvs), value));
            return true;
          },
          std::chrono::seconds(5));
    });
  }
  FakeKvStore store_;
};

TEST_F(EtcdExchangeTest, AllNodesThereGivesTheirValuesInKeyOrderAndASessionAfter) {
  const std::string plan = ExchangePrefix("job", "", "auto_tuner_plan");
  std::thread peer = Peer(plan, "zzzz", "peer's plan", 2);  // The other node.
  auto exchange = Node(2);
  ExchangeResult result = exchange("auto_tuner_plan", "my plan", 5);
  peer.join();
  ASSERT_EQ(result.code, 0);
  // This node's id is 16 hex digits: before "zzzz".
  EXPECT_EQ(result.values, (std::vector<std::string>{"my plan", "peer's plan"}));
  // The next exchange is under the session of the two nodes' keys: a key of another search
  // of the same job (under no session or another one) is never met.
  const std::string session = ExchangeSession(store_.GetPrefix(plan).kvs);
  store_.Put(ExchangePrefix("job", "", "auto_tuner_1_outcome") + "old", "stale");
  peer = Peer(ExchangePrefix("job", session, "auto_tuner_1_outcome"), "0000", "peer's outcome", 2);
  result = exchange("auto_tuner_1_outcome", "my outcome", 5);
  peer.join();
  ASSERT_EQ(result.code, 0);
  EXPECT_EQ(result.values, (std::vector<std::string>{"peer's outcome", "my outcome"}));
  // An exchange that is over leaves its key to its lease, for the nodes that still read it.
  EXPECT_EQ(Keys(ExchangePrefix("job", session, "auto_tuner_1_outcome")).size(), 2u);
}

TEST_F(EtcdExchangeTest, ANodeThatNeverComesEndsTheWaitAtItsDeadlineAndItsKeyGoes) {
  auto exchange = Node(2);
  const auto start = std::chrono::steady_clock::now();
  const ExchangeResult result = exchange("auto_tuner_plan", "my plan", 0.6);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.code, 1);
  EXPECT_TRUE(result.values.empty());
  EXPECT_GE(took, 0.6);
  EXPECT_LT(took, 10);
  EXPECT_TRUE(Keys("/pdlaunch/").empty());  // Given up: its lease revoked.
}

TEST_F(EtcdExchangeTest, AKeyOfAnEarlierSearchIsWaitedOutNotTakenForANode) {
  // A node of a search of the same job, killed a moment ago, left its plan key (confirmed for
  // its own set): with this node's it makes the two of --nnodes, but it never confirms them. This
  // node waits until its lease goes and the real peer comes.
  const std::string plan = ExchangePrefix("job", "", "auto_tuner_plan");
  const int64_t stale = store_.GrantLease(10);
  store_.Put(plan + "0old", EncodeExchangeRecord(plan + "0old", "00000000000000aa", "earlier plan"),
             stale);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    store_.ExpireLease(stale);
  });
  std::thread peer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    Peer(plan, "zzzz", "peer's plan", 2).join();
  });
  auto exchange = Node(2);
  const ExchangeResult result = exchange("auto_tuner_plan", "my plan", 10);
  later.join();
  peer.join();
  ASSERT_EQ(result.code, 0);
  EXPECT_EQ(result.values, (std::vector<std::string>{"my plan", "peer's plan"}));
}

TEST_F(EtcdExchangeTest, ANodeTooManyIsNamedAtTheDeadline) {
  const std::string plan = ExchangePrefix("job", "", "auto_tuner_plan");
  store_.Put(plan + "peer1", EncodeExchangeRecord(plan + "peer1", "", "a"));
  store_.Put(plan + "peer2", EncodeExchangeRecord(plan + "peer2", "", "b"));
  auto exchange = Node(2);
  EXPECT_EQ(exchange("auto_tuner_plan", "c", 0.6).code, 1);
  EXPECT_EQ(Keys(plan), (std::vector<std::string>{plan + "peer1", plan + "peer2"}));
}

TEST_F(EtcdExchangeTest, AnExchangesKeyGoesWhenTheNextIsOver) {
  // Every node wrote the next exchange's key, so every node has read this one's.
  auto exchange = Node(1);
  ASSERT_EQ(exchange("auto_tuner_plan", "plan", 5).code, 0);
  EXPECT_EQ(Keys("/pdlaunch/").size(), 1u);
  ASSERT_EQ(exchange("auto_tuner_1_outcome", "one", 5).code, 0);
  const std::vector<std::string> keys = Keys("/pdlaunch/");
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_NE(keys[0].find("/auto_tuner_1_outcome/"), std::string::npos) << keys[0];
  ASSERT_EQ(exchange("auto_tuner_2_outcome", "two", 5).code, 0);
  EXPECT_EQ(Keys("/pdlaunch/").size(), 1u);
}

TEST_F(EtcdExchangeTest, ATerminationSignalEndsTheWait) {
  auto exchange = Node(2);
  ::raise(SIGTERM);  // Pending (blocked, as Main blocks it): the wait's loop takes it.
  const ExchangeResult result = exchange("auto_tuner_plan", "my plan", 30);
  EXPECT_EQ(result.code, 143);
  EXPECT_TRUE(Keys("/pdlaunch/").empty());
}

TEST_F(EtcdExchangeTest, AnUnavailableStoreIsTriedAgainUntilTheDeadline) {
  store_.SetAvailable(false);
  auto exchange = Node(1);
  const ExchangeResult result = exchange("auto_tuner_plan", "my plan", 0.6);
  EXPECT_EQ(result.code, 1);
  // Unreachable past its own limit: the wait ends then, whatever the exchange's deadline.
  auto patient = MakeStoreExchange(std::make_unique<Client>(&store_), "job", 1,
                                   /*unavailable_limit=*/0.3);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(patient("auto_tuner_plan", "my plan", 600).code, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  store_.SetAvailable(true);
  // Once it is back, the same search's next exchange goes through (one node: no wait).
  const ExchangeResult again = exchange("auto_tuner_plan", "my plan", 5);
  EXPECT_EQ(again.code, 0);
  EXPECT_EQ(again.values, (std::vector<std::string>{"my plan"}));
}

TEST_F(EtcdExchangeTest, ARecordAStrangerChangedIsPutBackAndTheTrueValuesWin) {
  // A stranger overwrites this node's record once, keeping its confirmation and forging its
  // value; the peer confirms whatever set it sees, again and again, as a real node does.
  const std::string plan = ExchangePrefix("job", "", "auto_tuner_plan");
  std::atomic<bool> over{false};
  std::atomic<bool> forged{false};  // The peer comes after the stranger struck.
  std::thread stranger([&] {
    testutil::WaitFor([&] {
      for (const KeyValue& kv : store_.GetPrefix(plan).kvs) {
        if (kv.key == plan + "zzzz" || kv.value.size() < 17) continue;
        store_.Put(kv.key, kv.value.substr(0, 17) + "99999");
        forged = true;
        return true;
      }
      return false;
    });
  });
  std::thread peer([&] {
    testutil::WaitFor([&] {
      if (!forged) return false;
      const std::vector<KeyValue> kvs = store_.GetPrefix(plan).kvs;
      const auto own = std::find_if(kvs.begin(), kvs.end(),
                                    [&](const KeyValue& kv) { return kv.key == plan + "zzzz"; });
      const std::string record = EncodeExchangeRecord(plan + "zzzz", ExchangeSession(kvs), "b");
      if (own == kvs.end()) {
        store_.Put(plan + "zzzz", EncodeExchangeRecord(plan + "zzzz", "", "b"));
      } else if (kvs.size() == 2 && own->value != record) {
        store_.Put(plan + "zzzz", record);
      }
      return over.load();
    });
  });
  auto exchange = Node(2);
  ::testing::internal::CaptureStderr();
  const ExchangeResult result = exchange("auto_tuner_plan", "a", 10);
  const std::string log = ::testing::internal::GetCapturedStderr();
  over = true;
  stranger.join();
  peer.join();
  ASSERT_EQ(result.code, 0);
  EXPECT_EQ(result.values, (std::vector<std::string>{"a", "b"}));
  EXPECT_NE(log.find("this node's record in the exchange auto_tuner_plan in etcd was "
                     "changed or removed by someone else; writing it again"),
            std::string::npos)
      << log;
}

TEST_F(EtcdExchangeTest, AJunkKeyUnderThePrefixIsNamedAndIgnored) {
  const std::string plan = ExchangePrefix("job", "", "auto_tuner_plan");
  store_.Put(plan + "junk", "x");                           // No lease: it never goes by itself.
  std::thread peer = Peer(plan, "zzzz", "peer's plan", 2);  // Three keys, two records.
  auto exchange = Node(2);
  ::testing::internal::CaptureStderr();
  const ExchangeResult result = exchange("auto_tuner_plan", "my plan", 10);
  const std::string log = ::testing::internal::GetCapturedStderr();
  peer.join();
  ASSERT_EQ(result.code, 0);
  EXPECT_EQ(result.values, (std::vector<std::string>{"my plan", "peer's plan"}));
  EXPECT_NE(log.find("ignoring /pdlaunch/auto_tuner/job/auto_tuner_plan/junk in the "
                     "exchange auto_tuner_plan in etcd: not a record"),
            std::string::npos)
      << log;
}

}  // namespace
}  // namespace pdlaunch
