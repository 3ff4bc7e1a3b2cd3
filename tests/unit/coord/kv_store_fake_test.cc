#include "support/kv_store_fake.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <string>
#include <vector>

#include "pdlaunch/coord/kv_store.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;

bool Readable(const KvWatch& watch) {
  pollfd entry{watch.fd(), POLLIN, 0};
  return ::poll(&entry, 1, 0) == 1 && (entry.revents & POLLIN) != 0;
}

KvEvent Put(const std::string& key, const std::string& value, int64_t create, int64_t mod,
            int64_t lease = 0) {
  return {KvEvent::Type::kPut, {key, value, create, mod, lease}};
}

KvEvent Deleted(const std::string& key, int64_t mod) {
  return {KvEvent::Type::kDelete, {key, "", 0, mod, 0}};
}

std::vector<std::string> Keys(const KvStore::Range& range) {
  std::vector<std::string> keys;
  for (const KeyValue& kv : range.kvs) keys.push_back(kv.key);
  return keys;
}

TEST(FakeKvStoreTest, StartsEmptyAtRevisionOne) {
  FakeKvStore store;
  const KvStore::Range range = store.GetPrefix("");
  EXPECT_TRUE(range.kvs.empty());
  EXPECT_EQ(range.revision, 1);
}

TEST(FakeKvStoreTest, PutBumpsTheRevisionAndKeepsCreateRevision) {
  FakeKvStore store;
  EXPECT_EQ(store.Put("a", "1"), 2);
  EXPECT_EQ(store.Put("b", "2"), 3);
  EXPECT_EQ(store.Put("a", "3"), 4);
  const KvStore::Range range = store.Get("a");
  ASSERT_EQ(range.kvs.size(), 1u);
  EXPECT_EQ(range.kvs[0], (KeyValue{"a", "3", 2, 4, 0}));
  EXPECT_EQ(range.revision, 4);
}

TEST(FakeKvStoreTest, GetOfAMissingKeyIsEmpty) {
  FakeKvStore store;
  store.Put("ab", "1");
  EXPECT_TRUE(store.Get("a").kvs.empty());
  EXPECT_EQ(store.Get("a").revision, 2);
}

TEST(FakeKvStoreTest, GetPrefixReturnsOnlyKeysUnderThePrefixSorted) {
  FakeKvStore store;
  for (const char* key : {"/p/b", "/pz", "/p/a", "/q", "/p"}) store.Put(key, "v");
  EXPECT_EQ(Keys(store.GetPrefix("/p/")), (std::vector<std::string>{"/p/a", "/p/b"}));
  EXPECT_EQ(Keys(store.GetPrefix("/p")), (std::vector<std::string>{"/p", "/p/a", "/p/b", "/pz"}));
  EXPECT_EQ(Keys(store.GetPrefix("")).size(), 5u);
}

TEST(FakeKvStoreTest, KeysAndValuesAreBytes) {
  FakeKvStore store;
  const std::string key("k\0\xff", 3);
  const std::string value("\0\x01\x02", 3);
  store.Put(key, value);
  ASSERT_EQ(store.Get(key).kvs.size(), 1u);
  EXPECT_EQ(store.Get(key).kvs[0].value, value);
}

TEST(FakeKvStoreTest, DeleteCountsAndBumpsOnlyOnChange) {
  FakeKvStore store;
  store.Put("a", "1");
  EXPECT_EQ(store.Delete("missing"), 0);
  EXPECT_EQ(store.Get("a").revision, 2);
  EXPECT_EQ(store.Delete("a"), 1);
  EXPECT_EQ(store.Get("a").revision, 3);
  EXPECT_TRUE(store.Get("a").kvs.empty());
}

TEST(FakeKvStoreTest, DeletePrefixDeletesAtOneRevision) {
  FakeKvStore store;
  for (const char* key : {"/p/a", "/p/b", "/q"}) store.Put(key, "v");
  auto watch = store.Watch("/p/", 0);
  EXPECT_EQ(store.DeletePrefix("/p/"), 2);
  EXPECT_EQ(Keys(store.GetPrefix("")), (std::vector<std::string>{"/q"}));
  EXPECT_EQ(store.GetPrefix("").revision, 5);
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Deleted("/p/a", 5), Deleted("/p/b", 5)}));
  EXPECT_EQ(store.DeletePrefix("/p/"), 0);
  EXPECT_EQ(store.GetPrefix("").revision, 5);
}

TEST(FakeKvStoreTest, PutIfAbsentWritesOnlyOnce) {
  FakeKvStore store;
  EXPECT_TRUE(store.PutIf("a", 0, "first"));
  EXPECT_FALSE(store.PutIf("a", 0, "second"));
  EXPECT_EQ(store.Get("a").kvs[0].value, "first");
  EXPECT_EQ(store.Get("a").revision, 2);
}

TEST(FakeKvStoreTest, PutIfComparesTheModRevision) {
  FakeKvStore store;
  const int64_t revision = store.Put("a", "1");
  EXPECT_FALSE(store.PutIf("a", revision + 1, "2"));
  EXPECT_TRUE(store.PutIf("a", revision, "3"));
  EXPECT_FALSE(store.PutIf("a", revision, "4"));
  EXPECT_EQ(store.Get("a").kvs[0], (KeyValue{"a", "3", 2, 3, 0}));
}

TEST(FakeKvStoreTest, LeaseKeepAliveReturnsTheTtl) {
  FakeKvStore store;
  const int64_t lease = store.GrantLease(10);
  EXPECT_NE(lease, 0);
  EXPECT_NE(store.GrantLease(10), lease);
  EXPECT_EQ(store.KeepAlive(lease), 10);
  EXPECT_EQ(store.KeepAlive(lease + 1000), 0);
}

TEST(FakeKvStoreTest, RevokeDeletesTheLeasesKeys) {
  FakeKvStore store;
  const int64_t lease = store.GrantLease(10);
  store.Put("a", "1", lease);
  store.Put("b", "2", lease);
  store.Put("c", "3");
  EXPECT_EQ(store.Get("a").kvs[0].lease, lease);
  auto watch = store.Watch("", 0);
  store.RevokeLease(lease);
  EXPECT_EQ(Keys(store.GetPrefix("")), (std::vector<std::string>{"c"}));
  EXPECT_EQ(store.KeepAlive(lease), 0);
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Deleted("a", 5), Deleted("b", 5)}));
  EXPECT_NO_THROW(store.RevokeLease(lease));
  EXPECT_NO_THROW(store.RevokeLease(12345));
}

TEST(FakeKvStoreTest, ExpireLeaseDeletesItsKeysAndNotifiesWatches) {
  FakeKvStore store;
  const int64_t lease = store.GrantLease(2);
  store.Put("/n/0", "x", lease);
  auto watch = store.Watch("/n/", 0);
  store.ExpireLease(lease);
  EXPECT_TRUE(Readable(*watch));
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Deleted("/n/0", 3)}));
  EXPECT_TRUE(store.Get("/n/0").kvs.empty());
  EXPECT_EQ(store.KeepAlive(lease), 0);
}

TEST(FakeKvStoreTest, RewritingAKeyWithoutLeaseDetachesIt) {
  FakeKvStore store;
  const int64_t lease = store.GrantLease(2);
  store.Put("a", "1", lease);
  store.Put("a", "2");
  store.ExpireLease(lease);
  ASSERT_EQ(store.Get("a").kvs.size(), 1u);
  EXPECT_EQ(store.Get("a").kvs[0].lease, 0);
}

TEST(FakeKvStoreTest, PutWithAnUnknownLeaseFails) {
  FakeKvStore store;
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.Put("a", "1", 99); }),
            "etcd fake: put: requested lease not found");
  EXPECT_EQ(store.Get("a").revision, 1);
}

TEST(FakeKvStoreTest, WatchFdIsReadableOnlyWhileEventsWait) {
  FakeKvStore store;
  auto watch = store.Watch("/p/", 0);
  EXPECT_FALSE(Readable(*watch));
  store.Put("/other", "x");
  EXPECT_FALSE(Readable(*watch));
  store.Put("/p/a", "1");
  EXPECT_TRUE(Readable(*watch));
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Put("/p/a", "1", 3, 3)}));
  EXPECT_FALSE(Readable(*watch));
  EXPECT_TRUE(watch->Read().empty());
}

TEST(FakeKvStoreTest, WatchSeesPutsAndDeletesInOrder) {
  FakeKvStore store;
  auto watch = store.Watch("/p/", 0);
  const int fd = watch->fd();
  const int64_t lease = store.GrantLease(5);
  store.Put("/p/a", "1");
  store.Put("/p/b", "2", lease);
  store.Delete("/p/a");
  store.Put("/p/b", "3", lease);
  EXPECT_EQ(watch->Read(),
            (std::vector<KvEvent>{Put("/p/a", "1", 2, 2), Put("/p/b", "2", 3, 3, lease),
                                  Deleted("/p/a", 4), Put("/p/b", "3", 3, 5, lease)}));
  EXPECT_EQ(watch->fd(), fd);
}

TEST(FakeKvStoreTest, WatchFromAnEarlierRevisionReplaysHistory) {
  FakeKvStore store;
  store.Put("/p/a", "1");
  store.Put("/p/b", "2");
  store.Delete("/p/a");
  auto watch = store.Watch("/p/", 3);
  EXPECT_TRUE(Readable(*watch));
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Put("/p/b", "2", 3, 3), Deleted("/p/a", 4)}));
  store.Put("/p/c", "3");
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Put("/p/c", "3", 5, 5)}));
}

TEST(FakeKvStoreTest, WatchFromTheNextRevisionSeesOnlyNewEvents) {
  FakeKvStore store;
  store.Put("/p/a", "1");
  auto watch = store.Watch("/p/", store.GetPrefix("/p/").revision + 1);
  EXPECT_FALSE(Readable(*watch));
  store.Put("/p/a", "2");
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Put("/p/a", "2", 2, 3)}));
}

TEST(FakeKvStoreTest, WatchFromAFutureRevisionWaitsForIt) {
  FakeKvStore store;
  auto watch = store.Watch("/p/", 3);
  store.Put("/p/a", "1");
  EXPECT_FALSE(Readable(*watch));
  store.Put("/p/a", "2");
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Put("/p/a", "2", 2, 3)}));
}

TEST(FakeKvStoreTest, SeveralWatchesEachGetEveryEvent) {
  FakeKvStore store;
  auto first = store.Watch("/p/", 0);
  auto second = store.Watch("/p/", 0);
  store.Put("/p/a", "1");
  EXPECT_EQ(first->Read(), (std::vector<KvEvent>{Put("/p/a", "1", 2, 2)}));
  EXPECT_EQ(second->Read(), (std::vector<KvEvent>{Put("/p/a", "1", 2, 2)}));
  EXPECT_NE(first->fd(), second->fd());
}

TEST(FakeKvStoreTest, UnavailableStoreFailsEveryCall) {
  FakeKvStore store;
  const int64_t lease = store.GrantLease(5);
  store.SetAvailable(false);
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.Put("a", "1"); }), "etcd fake: put: unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.PutIf("a", 0, "1"); }),
            "etcd fake: txn: unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.Get("a"); }), "etcd fake: range: unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.GetPrefix("a"); }), "etcd fake: range: unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.Delete("a"); }),
            "etcd fake: deleterange: unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.DeletePrefix("a"); }),
            "etcd fake: deleterange: unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.GrantLease(5); }),
            "etcd fake: lease grant: unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.KeepAlive(lease); }),
            "etcd fake: lease keepalive: unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.RevokeLease(lease); }),
            "etcd fake: lease revoke: unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store.Watch("", 0); }), "etcd fake: watch: unavailable");
}

TEST(FakeKvStoreTest, UnavailableStoreBreaksOpenWatchesForGood) {
  FakeKvStore store;
  auto watch = store.Watch("/p/", 0);
  store.SetAvailable(false);
  EXPECT_TRUE(Readable(*watch));
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { watch->Read(); }), "etcd fake: watch: stream broken");
  store.SetAvailable(true);
  store.Put("/p/a", "1");
  EXPECT_TRUE(Readable(*watch));
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { watch->Read(); }), "etcd fake: watch: stream broken");
}

TEST(FakeKvStoreTest, AvailableAgainKeepsTheDataAndServesNewWatches) {
  FakeKvStore store;
  store.Put("/p/a", "1");
  store.SetAvailable(false);
  store.SetAvailable(true);
  EXPECT_EQ(store.Get("/p/a").kvs[0].value, "1");
  auto watch = store.Watch("/p/", 0);
  store.Put("/p/b", "2");
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Put("/p/b", "2", 3, 3)}));
}

TEST(FakeKvStoreTest, AWatchMayOutliveItsStore) {
  std::unique_ptr<KvWatch> watch;
  {
    FakeKvStore store;
    watch = store.Watch("", 0);
    store.Put("a", "1");
  }
  EXPECT_EQ(watch->Read(), (std::vector<KvEvent>{Put("a", "1", 2, 2)}));
}

}  // namespace
}  // namespace pdlaunch
