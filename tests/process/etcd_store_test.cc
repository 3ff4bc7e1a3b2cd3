#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "pdlaunch/coord/kv_store.h"
#include "support/etcd_server.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testutil::ErrorOf;
using testutil::EtcdServer;
using testutil::WaitFor;

bool Readable(const KvWatch& watch, int timeout_ms) {
  pollfd entry{watch.fd(), POLLIN, 0};
  return ::poll(&entry, 1, timeout_ms) == 1 && (entry.revents & POLLIN) != 0;
}

// Polls and reads `watch` until `count` events arrived (or 10 s passed).
std::vector<KvEvent> ReadEvents(KvWatch& watch, size_t count) {
  std::vector<KvEvent> events;
  const auto deadline = steady_clock::now() + std::chrono::seconds(10);
  while (events.size() < count && steady_clock::now() < deadline) {
    if (!Readable(watch, 100)) continue;
    for (KvEvent& event : watch.Read()) events.push_back(event);
  }
  return events;
}

std::vector<std::string> Keys(const KvStore::Range& range) {
  std::vector<std::string> keys;
  for (const KeyValue& kv : range.kvs) keys.push_back(kv.key);
  return keys;
}

KvEvent Put(const std::string& key, const std::string& value, int64_t create, int64_t mod,
            int64_t lease = 0) {
  return {KvEvent::Type::kPut, {key, value, create, mod, lease}};
}

KvEvent Deleted(const std::string& key, int64_t mod) {
  return {KvEvent::Type::kDelete, {key, "", 0, mod, 0}};
}

// A listening socket that never accepts: connects succeed, requests are never answered.
class SilentServer {
 public:
  SilentServer() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
  }
  ~SilentServer() { ::close(fd_); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  int port_ = 0;
};

class EtcdStoreTest : public ::testing::Test {
 protected:
  EtcdServer server_;
  std::unique_ptr<KvStore> store_ = MakeEtcdStore(server_.endpoint(), milliseconds(2000));
};

TEST_F(EtcdStoreTest, PutThenGetReturnsTheValueAndRevisions) {
  const int64_t revision = store_->Put("/job/a", "hello");
  EXPECT_GT(revision, 1);
  const KvStore::Range range = store_->Get("/job/a");
  ASSERT_EQ(range.kvs.size(), 1u);
  EXPECT_EQ(range.kvs[0], (KeyValue{"/job/a", "hello", revision, revision, 0}));
  EXPECT_EQ(range.revision, revision);
  EXPECT_EQ(store_->Put("/job/a", "again"), revision + 1);
  EXPECT_EQ(store_->Get("/job/a").kvs[0], (KeyValue{"/job/a", "again", revision, revision + 1, 0}));
}

TEST_F(EtcdStoreTest, GetOfAMissingKeyIsEmpty) {
  store_->Put("/job/ab", "x");
  const KvStore::Range range = store_->Get("/job/a");
  EXPECT_TRUE(range.kvs.empty());
  EXPECT_EQ(range.revision, 2);
}

TEST_F(EtcdStoreTest, KeysAndValuesAreBytes) {
  std::string value;
  for (int byte = 0; byte < 256; ++byte) value += static_cast<char>(byte);
  const std::string key("/job/\0\xff", 7);
  store_->Put(key, value);
  ASSERT_EQ(store_->Get(key).kvs.size(), 1u);
  EXPECT_EQ(store_->Get(key).kvs[0].value, value);
  store_->Put("/job/empty", "");
  EXPECT_EQ(store_->Get("/job/empty").kvs.at(0).value, "");
}

TEST_F(EtcdStoreTest, GetPrefixReturnsOnlyKeysUnderThePrefixSorted) {
  for (const char* key : {"/p/b", "/pz", "/p/a", "/q", "/p"}) store_->Put(key, "v");
  EXPECT_EQ(Keys(store_->GetPrefix("/p/")), (std::vector<std::string>{"/p/a", "/p/b"}));
  EXPECT_EQ(Keys(store_->GetPrefix("/p")), (std::vector<std::string>{"/p", "/p/a", "/p/b", "/pz"}));
  EXPECT_EQ(Keys(store_->GetPrefix("")),
            (std::vector<std::string>{"/p", "/p/a", "/p/b", "/pz", "/q"}));
  EXPECT_EQ(store_->GetPrefix("/none/").revision, 6);
}

TEST_F(EtcdStoreTest, DeleteAndDeletePrefixCountDeletedKeys) {
  for (const char* key : {"/p/a", "/p/b", "/p/c", "/q"}) store_->Put(key, "v");
  EXPECT_EQ(store_->Delete("/p/a"), 1);
  EXPECT_EQ(store_->Delete("/p/a"), 0);
  EXPECT_EQ(store_->DeletePrefix("/p/"), 2);
  EXPECT_EQ(store_->DeletePrefix("/p/"), 0);
  EXPECT_EQ(Keys(store_->GetPrefix("")), (std::vector<std::string>{"/q"}));
}

TEST_F(EtcdStoreTest, PutIfAbsentWritesOnlyOnce) {
  EXPECT_TRUE(store_->PutIf("/job/leader", 0, "first"));
  EXPECT_FALSE(store_->PutIf("/job/leader", 0, "second"));
  EXPECT_EQ(store_->Get("/job/leader").kvs.at(0).value, "first");
}

TEST_F(EtcdStoreTest, PutIfComparesTheModRevision) {
  const int64_t revision = store_->Put("/job/a", "1");
  EXPECT_FALSE(store_->PutIf("/job/a", revision + 1, "2"));
  EXPECT_TRUE(store_->PutIf("/job/a", revision, "3"));
  EXPECT_FALSE(store_->PutIf("/job/a", revision, "4"));
  EXPECT_EQ(store_->Get("/job/a").kvs.at(0), (KeyValue{"/job/a", "3", revision, revision + 1, 0}));
}

TEST_F(EtcdStoreTest, PutIfAttachesTheLease) {
  const int64_t lease = store_->GrantLease(30);
  EXPECT_TRUE(store_->PutIf("/job/a", 0, "1", lease));
  EXPECT_EQ(store_->Get("/job/a").kvs.at(0).lease, lease);
}

TEST_F(EtcdStoreTest, LeaseKeepAliveAndRevoke) {
  const int64_t lease = store_->GrantLease(30);
  EXPECT_NE(lease, 0);
  store_->Put("/job/a", "1", lease);
  EXPECT_EQ(store_->Get("/job/a").kvs.at(0).lease, lease);
  EXPECT_EQ(store_->KeepAlive(lease), 30);
  store_->RevokeLease(lease);
  EXPECT_TRUE(store_->Get("/job/a").kvs.empty());
  EXPECT_EQ(store_->KeepAlive(lease), 0);
  EXPECT_NO_THROW(store_->RevokeLease(lease));
  EXPECT_NO_THROW(store_->RevokeLease(12345));
}

TEST_F(EtcdStoreTest, ExpiredLeaseDeletesItsKeys) {
  const int64_t lease = store_->GrantLease(2);
  store_->Put("/job/a", "1", lease);
  EXPECT_TRUE(WaitFor([&] { return store_->Get("/job/a").kvs.empty(); }));
  EXPECT_EQ(store_->KeepAlive(lease), 0);
}

TEST_F(EtcdStoreTest, PutWithAnUnknownLeaseReportsEtcdsError) {
  EXPECT_EQ(
      ErrorOf<KvUnavailable>([&] { store_->Put("/job/a", "1", 12345); }),
      "etcd " + server_.endpoint() + ": POST /v3/kv/put: etcdserver: requested lease not found");
}

TEST_F(EtcdStoreTest, WatchSeesPutsAndDeletesInOrder) {
  const int64_t start = store_->GetPrefix("/w/").revision + 1;
  auto watch = store_->Watch("/w/", start);
  const int fd = watch->fd();
  store_->Put("/w/a", "1");
  store_->Put("/other", "x");
  store_->Put("/w/b", "2");
  store_->Delete("/w/a");
  EXPECT_EQ(ReadEvents(*watch, 3), (std::vector<KvEvent>{Put("/w/a", "1", start, start),
                                                         Put("/w/b", "2", start + 2, start + 2),
                                                         Deleted("/w/a", start + 3)}));
  EXPECT_EQ(watch->fd(), fd);
}

TEST_F(EtcdStoreTest, WatchFromAnEarlierRevisionReplaysHistory) {
  const int64_t first = store_->Put("/w/a", "1");
  store_->Put("/w/b", "2");
  auto watch = store_->Watch("/w/", first + 1);
  EXPECT_EQ(ReadEvents(*watch, 1), (std::vector<KvEvent>{Put("/w/b", "2", first + 1, first + 1)}));
}

TEST_F(EtcdStoreTest, WatchFdBecomesReadableOnAChange) {
  auto watch = store_->Watch("/w/", 0);
  EXPECT_FALSE(Readable(*watch, 200));
  EXPECT_TRUE(watch->Read().empty());
  const int64_t revision = store_->Put("/w/a", "1");
  EXPECT_TRUE(Readable(*watch, 5000));
  EXPECT_EQ(ReadEvents(*watch, 1), (std::vector<KvEvent>{Put("/w/a", "1", revision, revision)}));
}

TEST_F(EtcdStoreTest, WatchOfTheEmptyPrefixSeesEveryKey) {
  auto watch = store_->Watch("", 0);
  store_->Put("a", "1");
  store_->Put("\xff", "2");
  const std::vector<KvEvent> events = ReadEvents(*watch, 2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kv.key, "\xff");
}

TEST_F(EtcdStoreTest, AcceptsAnEndpointWithScheme) {
  auto store = MakeEtcdStore("http://" + server_.endpoint(), milliseconds(2000));
  store->Put("a", "1");
  EXPECT_EQ(store_->Get("a").kvs.at(0).value, "1");
}

TEST_F(EtcdStoreTest, ResolvesAHostName) {
  auto store =
      MakeEtcdStore("localhost:" + std::to_string(server_.client_port()), milliseconds(2000));
  store->Put("a", "1");
  EXPECT_EQ(store->Get("a").kvs.at(0).value, "1");
  auto watch = store->Watch("b", 0);
  const int64_t revision = store->Put("b", "2");
  EXPECT_EQ(ReadEvents(*watch, 1), (std::vector<KvEvent>{Put("b", "2", revision, revision)}));
}

TEST_F(EtcdStoreTest, StoppedEtcdFailsCallsAndBreaksTheWatch) {
  store_->Put("/w/a", "1");
  auto watch = store_->Watch("/w/", 0);
  server_.Stop();
  const std::string prefix = "etcd " + server_.endpoint() + ": ";
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store_->Get("/w/a"); }),
            prefix + "connect: Connection refused");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store_->Put("/w/a", "2"); }),
            prefix + "connect: Connection refused");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store_->Watch("/w/", 0); }),
            prefix + "connect: Connection refused");
  ASSERT_TRUE(Readable(*watch, 5000));
  const std::string error = ErrorOf<KvUnavailable>([&] { ReadEvents(*watch, 1); });
  // etcd's gateway reports its shutdown on the stream in words that vary with timing ("transport
  // is closing", "grpc: the client connection is closing"), or just closes the connection.
  EXPECT_EQ(error.rfind(prefix + "watch: ", 0), 0u) << error;
  EXPECT_GT(error.size(), (prefix + "watch: ").size()) << error;
  // Broken for good: every later Read() throws the same.
  EXPECT_TRUE(Readable(*watch, 0));
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { watch->Read(); }), error);
}

TEST_F(EtcdStoreTest, RestartedEtcdServesTheSameStoreAndNewWatches) {
  const int64_t revision = store_->Put("/w/a", "1");
  auto old_watch = store_->Watch("/w/", 0);
  server_.Stop();
  server_.Start();
  // The cached connection is dead: the store reconnects.
  EXPECT_EQ(store_->Get("/w/a").kvs.at(0), (KeyValue{"/w/a", "1", revision, revision, 0}));
  EXPECT_TRUE(Readable(*old_watch, 5000));
  EXPECT_THROW(ReadEvents(*old_watch, 1), KvUnavailable);
  auto watch = store_->Watch("/w/", 0);
  const int64_t next = store_->Put("/w/b", "2");
  EXPECT_EQ(ReadEvents(*watch, 1), (std::vector<KvEvent>{Put("/w/b", "2", next, next)}));
}

TEST(EtcdStoreTimeoutTest, UnreachableEndpointFailsAtOnce) {
  const std::string endpoint = "127.0.0.1:" + std::to_string(testutil::FreeLoopbackPort());
  auto store = MakeEtcdStore(endpoint, milliseconds(500));
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store->Get("a"); }),
            "etcd " + endpoint + ": connect: Connection refused");
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store->Watch("a", 0); }),
            "etcd " + endpoint + ": connect: Connection refused");
}

TEST(EtcdStoreTimeoutTest, SilentServerFailsWithinTheTimeout) {
  SilentServer server;
  auto store = MakeEtcdStore(server.endpoint(), milliseconds(500));
  const auto start = steady_clock::now();
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store->Get("a"); }),
            "etcd " + server.endpoint() + ": POST /v3/kv/range: timed out after 500 ms");
  const auto elapsed = steady_clock::now() - start;
  EXPECT_GE(elapsed, milliseconds(450));
  EXPECT_LT(elapsed, milliseconds(1500));
  EXPECT_EQ(ErrorOf<KvUnavailable>([&] { store->Watch("a", 0); }),
            "etcd " + server.endpoint() + ": POST /v3/watch: timed out after 500 ms");
}

TEST(EtcdStoreTimeoutTest, BadEndpointIsAUsageError) {
  EXPECT_THROW(MakeEtcdStore("no-port", milliseconds(500)), UsageError);
}

}  // namespace
}  // namespace pdlaunch
