#include "pdlaunch/coord/kv_http.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/json_string.h"

namespace pdlaunch {
namespace {

KvHttpResponse Do(KvMemoryStore& store, const std::string& method, const std::string& target,
                  const std::string& body = "", double now = 0) {
  return store.Handle(KvHttpRequest{method, target, body}, now);
}

TEST(KvMemoryStoreTest, StartsWithHealthyOk) {
  KvMemoryStore store;
  const KvHttpResponse r = Do(store, "GET", "/healthy");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Body(), R"({"/healthy": "ok"})");
}

TEST(KvMemoryStoreTest, GetIsAPureStringPrefix) {
  KvMemoryStore store;
  EXPECT_EQ(Do(store, "PUT", "/metrics/latency", "1").status, 200);
  EXPECT_EQ(Do(store, "POST", "/metrics/throughput", "2").status, 200);
  EXPECT_EQ(Do(store, "PUT", "/metricsX", "3").status, 200);
  EXPECT_EQ(Do(store, "GET", "/metrics/").Body(),
            R"({"/metrics/latency": "1", "/metrics/throughput": "2"})");
  EXPECT_EQ(Do(store, "GET", "/metrics").Body(),
            R"({"/metrics/latency": "1", "/metrics/throughput": "2", "/metricsX": "3"})");
  const KvHttpResponse missing = Do(store, "GET", "/nothing");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.Body(), "");
}

TEST(KvMemoryStoreTest, PutOverwritesDeleteIsExact) {
  KvMemoryStore store;
  Do(store, "PUT", "/a/b", "1");
  Do(store, "PUT", "/a/b", "2");
  Do(store, "PUT", "/a/bc", "3");
  EXPECT_EQ(Do(store, "GET", "/a/b").Body(), R"({"/a/b": "2", "/a/bc": "3"})");
  EXPECT_EQ(Do(store, "DELETE", "/a").status, 404);
  EXPECT_EQ(Do(store, "DELETE", "/a/b").status, 200);
  EXPECT_EQ(Do(store, "DELETE", "/a/b").status, 404);
  EXPECT_EQ(Do(store, "GET", "/a/b").Body(), R"({"/a/bc": "3"})");
  EXPECT_EQ(Do(store, "POST", "/empty").status, 200);
  EXPECT_EQ(Do(store, "GET", "/empty").Body(), R"({"/empty": ""})");
}

TEST(KvMemoryStoreTest, ProtectedKeysAreTheOwnersAlone) {
  KvMemoryStore store;
  store.Protect("/j/pdlaunch/world", /*prefix=*/false);
  store.Protect("/j/pdlaunch/news/", /*prefix=*/true, "/j/pdlaunch/news/failure");
  store.Put("/j/pdlaunch/world", "owner's");
  EXPECT_EQ(Do(store, "PUT", "/j/pdlaunch/world", "stranger's").status, 403);
  EXPECT_EQ(Do(store, "POST", "/j/pdlaunch/news/formed", "x").status, 403);
  EXPECT_EQ(Do(store, "DELETE", "/j/pdlaunch/world").status, 403);
  EXPECT_EQ(*store.Find("/j/pdlaunch/world"), "owner's");
  EXPECT_EQ(store.Find("/j/pdlaunch/news/formed"), nullptr);
  // Reading is not writing; the exception and other keys stay writable.
  EXPECT_EQ(Do(store, "GET", "/j/pdlaunch/world").status, 200);
  EXPECT_EQ(Do(store, "PUT", "/j/pdlaunch/news/failure?create=1", "rank 1").status, 200);
  EXPECT_EQ(Do(store, "PUT", "/j/pdlaunch/worlds", "x").status, 200);
  EXPECT_EQ(Do(store, "PUT", "/j/info/abc/-1", "peer").status, 200);
  // The owner writes and deletes as it likes.
  EXPECT_TRUE(store.Delete("/j/pdlaunch/world"));
}

TEST(KvMemoryStoreTest, OtherMethodsAreNotImplemented) {
  KvMemoryStore store;
  EXPECT_EQ(Do(store, "PATCH", "/x").status, 501);
  EXPECT_EQ(Do(store, "HEAD", "/healthy").status, 501);
}

TEST(KvMemoryStoreTest, EveryChangeBumpsTheRevision) {
  KvMemoryStore store;
  const int64_t start = store.revision();
  Do(store, "PUT", "/k", "v");
  EXPECT_EQ(store.revision(), start + 1);
  Do(store, "GET", "/k");
  EXPECT_EQ(store.revision(), start + 1);
  Do(store, "DELETE", "/k");
  EXPECT_EQ(store.revision(), start + 2);
  Do(store, "DELETE", "/k");  // Nothing deleted: no change.
  EXPECT_EQ(store.revision(), start + 2);
}

TEST(KvMemoryStoreTest, LongPollParksUntilTheRevisionPasses) {
  KvMemoryStore store;
  const int64_t rev = store.revision();
  const KvHttpResponse parked =
      Do(store, "GET", fmt::format("/job/?wait={}&timeout=7", rev), "", 100);
  ASSERT_TRUE(parked.wait_until);
  EXPECT_DOUBLE_EQ(*parked.wait_until, 107);
  EXPECT_EQ(parked.wait_revision, rev);
  EXPECT_EQ(parked.wait_prefix, "/job/");
  // An older revision answers at once.
  Do(store, "PUT", "/job/x", "1");
  const KvHttpResponse now = Do(store, "GET", fmt::format("/job/?wait={}", rev));
  EXPECT_FALSE(now.wait_until);
  EXPECT_EQ(now.Body(), R"({"/job/x": "1"})");
  EXPECT_EQ(store.Answer("/job/").Body(), R"({"/job/x": "1"})");
}

// A node that re-parks with the revision of its last answer is parked again when the changes
// since were elsewhere (other nodes joining), else answered at once: nothing is missed, and a
// thousand joins do not send a thousand parked nodes round.
TEST(KvMemoryStoreTest, LongPollParksAgainWhenTheChangesWereElsewhere) {
  KvMemoryStore store;
  Do(store, "PUT", "/j/news/terms", "t");
  const int64_t seen = store.revision();
  for (int i = 0; i < 100; ++i) Do(store, "PUT", fmt::format("/j/info/n{}/-1", i), "peer");
  EXPECT_FALSE(store.ChangedSince("/j/news/", seen));
  EXPECT_TRUE(Do(store, "GET", fmt::format("/j/news/?wait={}", seen)).wait_until);
  // A write under the prefix since: answered at once.
  Do(store, "PUT", "/j/news/formed", "f");
  EXPECT_TRUE(store.ChangedSince("/j/news/", seen));
  EXPECT_FALSE(Do(store, "GET", fmt::format("/j/news/?wait={}", seen)).wait_until);
  // A deletion under the prefix since: answered at once, too.
  const int64_t seen2 = store.revision();
  Do(store, "DELETE", "/j/news/formed");
  EXPECT_TRUE(store.ChangedSince("/j/news/", seen2));
  EXPECT_FALSE(store.ChangedSince("/j/other/", seen2));
  // Past the deletions it keeps, it cannot tell, so it answers.
  const int64_t seen3 = store.revision();
  for (size_t i = 0; i < KvMemoryStore::kMaxRecentDeletes; ++i) {
    Do(store, "PUT", "/x", "1");
    Do(store, "DELETE", "/x");
  }
  EXPECT_TRUE(store.ChangedSince("/j/news/", seen3));
  EXPECT_FALSE(store.ChangedSince("/j/news/", store.revision()));
  // A prefix of more keys than it scans: it cannot tell either.
  const int64_t seen4 = store.revision() - 1;  // The change since: /x deleted.
  EXPECT_TRUE(store.ChangedSince("/j/info/", seen4));
}

TEST(KvMemoryStoreTest, ChangedKeysListsWhatChangedUntilCleared) {
  KvMemoryStore store;
  store.ClearChanged();
  Do(store, "PUT", "/a", "1");
  Do(store, "DELETE", "/a");
  ASSERT_NE(store.ChangedKeys(), nullptr);
  EXPECT_EQ(*store.ChangedKeys(), (std::vector<std::string>{"/a", "/a"}));
  EXPECT_EQ(store.Find("/a"), nullptr);
  Do(store, "PUT", "/b", "2");
  EXPECT_EQ(*store.Find("/b"), "2");
  for (size_t i = 0; i < KvMemoryStore::kMaxChangedKeys; ++i) {
    Do(store, "PUT", fmt::format("/k{}", i), "v");
  }
  EXPECT_EQ(store.ChangedKeys(), nullptr);  // Too many: read again what you need.
  store.ClearChanged();
  EXPECT_TRUE(store.ChangedKeys()->empty());
}

// A heartbeat renews its key with the same value: nothing a reader sees changes, so it must not
// wake every parked long-poll of a 1,000-node job; only its expiry moves.
TEST(KvMemoryStoreTest, TheSameValueAgainIsNoChangeButMovesTheExpiry) {
  KvMemoryStore store;
  EXPECT_EQ(Do(store, "PUT", "/j/alive/a?ttl=10", "1", 100).status, 200);
  store.ClearChanged();
  const int64_t rev = store.revision();
  EXPECT_EQ(Do(store, "PUT", "/j/alive/a?ttl=10", "1", 105).status, 200);
  EXPECT_EQ(store.revision(), rev);
  EXPECT_FALSE(store.ChangedUnder({"/"}));
  EXPECT_DOUBLE_EQ(*store.NextExpiry(), 115);
  EXPECT_TRUE(store.Expire(112).empty());
  EXPECT_EQ(store.Expire(115), std::vector<std::string>{"/j/alive/a"});
  EXPECT_TRUE(store.ChangedUnder({"/j/alive/"}));
  EXPECT_EQ(store.revision(), rev + 1);
  EXPECT_EQ(Do(store, "PUT", "/j/k", "1").status, 200);
  EXPECT_EQ(Do(store, "PUT", "/j/k", "2").status, 200);  // Another value: a change.
  EXPECT_EQ(store.revision(), rev + 3);
}

// The server wakes a parked poll only when a key under its prefix changed.
TEST(KvMemoryStoreTest, ChangedUnderTellsWhichPrefixesAChangeTouched) {
  KvMemoryStore store;
  store.ClearChanged();
  Do(store, "PUT", "/a/x", "1");
  EXPECT_TRUE(store.ChangedUnder({"/a/"}));
  EXPECT_TRUE(store.ChangedUnder({"/b/", "/a"}));
  EXPECT_FALSE(store.ChangedUnder({"/b/"}));
  store.ClearChanged();
  EXPECT_FALSE(store.ChangedUnder({"/a/"}));
  for (size_t i = 0; i <= KvMemoryStore::kMaxChangedKeys; ++i) {
    Do(store, "PUT", fmt::format("/c/{}", i), "1");
  }
  EXPECT_TRUE(store.ChangedUnder({"/anything/"}));  // Too many to record: assume anything.
}

TEST(KvMemoryStoreTest, LongPollTimeoutIsBounded) {
  KvLimits limits;
  limits.max_wait_seconds = 5;
  KvMemoryStore store(limits);
  const KvHttpResponse parked =
      Do(store, "GET", fmt::format("/j?wait={}&timeout=3600", store.revision()), "", 10);
  ASSERT_TRUE(parked.wait_until);
  EXPECT_DOUBLE_EQ(*parked.wait_until, 15);
}

TEST(KvMemoryStoreTest, TtlKeysExpire) {
  KvMemoryStore store;
  EXPECT_EQ(Do(store, "PUT", "/j/alive/a?ttl=10", "1", 100).status, 200);
  EXPECT_EQ(Do(store, "PUT", "/j/alive/b?ttl=5", "1", 100).status, 200);
  EXPECT_EQ(store.NextExpiry(), 105);
  EXPECT_TRUE(store.Expire(104.9).empty());
  EXPECT_EQ(store.Expire(105), std::vector<std::string>{"/j/alive/b"});
  // A refresh moves the expiry.
  Do(store, "PUT", "/j/alive/a?ttl=10", "1", 108);
  EXPECT_TRUE(store.Expire(110).empty());
  EXPECT_EQ(store.Expire(118), std::vector<std::string>{"/j/alive/a"});
  EXPECT_FALSE(store.NextExpiry());
  EXPECT_EQ(Do(store, "GET", "/j/").status, 404);
}

TEST(KvMemoryStoreTest, CreateOnlyKeepsTheFirstWriter) {
  KvMemoryStore store;
  EXPECT_EQ(Do(store, "PUT", "/j/failure?create=1", "first").status, 200);
  EXPECT_EQ(Do(store, "PUT", "/j/failure?create=1", "second").status, 412);
  EXPECT_EQ(Do(store, "GET", "/j/failure").Body(), R"({"/j/failure": "first"})");
}

TEST(KvMemoryStoreTest, LimitsRefuseWithoutChangingTheStore) {
  KvLimits limits;
  limits.max_keys = 3;  // /healthy is one.
  limits.max_bytes = 64;
  KvMemoryStore store(limits);
  EXPECT_EQ(Do(store, "PUT", "/a", "1").status, 200);
  EXPECT_EQ(Do(store, "PUT", "/b", "1").status, 200);
  EXPECT_EQ(Do(store, "PUT", "/c", "1").status, 413);
  EXPECT_EQ(Do(store, "PUT", "/a", std::string(100, 'x')).status, 413);
  EXPECT_EQ(Do(store, "GET", "/a").Body(), R"({"/a": "1"})");
  EXPECT_EQ(Do(store, "PUT", "/a", "2").status, 200);  // Overwriting fits.
}

TEST(KvTargetTest, QueryParameters) {
  const KvTarget t = ParseKvTarget("/j/?wait=12&timeout=2.5&ttl=10&create=1&other=x");
  EXPECT_EQ(t.path, "/j/");
  EXPECT_EQ(t.wait, 12);
  EXPECT_DOUBLE_EQ(t.timeout, 2.5);
  EXPECT_EQ(t.ttl, 10);
  EXPECT_TRUE(t.create_only);
  const KvTarget bad = ParseKvTarget("/j?wait=-1&timeout=x&ttl=0&create");
  EXPECT_FALSE(bad.wait);
  EXPECT_DOUBLE_EQ(bad.timeout, 30);
  EXPECT_FALSE(bad.ttl);
  EXPECT_FALSE(bad.create_only);
  EXPECT_EQ(ParseKvTarget("/plain").path, "/plain");
}

TEST(KvJsonTest, EncodesAsPythonJsonDumps) {
  EXPECT_EQ(EncodeJsonString("a\"b\\c\n\t"), R"("a\"b\\c\n\t")");
  EXPECT_EQ(EncodeJsonString("\x01"), R"("\u0001")");
  EXPECT_EQ(EncodeJsonString("caf\xc3\xa9"), R"("caf\u00e9")");
  EXPECT_EQ(EncodeJsonString("\xf0\x9f\x98\x80"), R"("\ud83d\ude00")");
  EXPECT_EQ(EncodeJsonString("\xff"), R"("\ufffd")");
  EXPECT_EQ(EncodeJsonObject({}), "{}");
}

TEST(KvJsonTest, DecodeRoundTripsAndRefusesOtherJson) {
  const std::map<std::string, std::string> values = {{"/a", "x\"y"}, {"/b", "caf\xc3\xa9"}};
  EXPECT_EQ(DecodeJsonObject(EncodeJsonObject(values)), values);
  EXPECT_THROW(DecodeJsonObject("[1]"), LaunchError);
  EXPECT_THROW(DecodeJsonObject(R"({"a": 1})"), LaunchError);
  EXPECT_THROW(DecodeJsonObject("not json"), LaunchError);
}

// Plain strings are read by a fast path, everything else by the full parser: same answers.
TEST(KvJsonTest, TheFastPathAgreesWithTheFullParser) {
  using Map = std::map<std::string, std::string>;
  EXPECT_EQ(DecodeJsonObject(" {\n\"a\" :\"1\" ,\"b\":\"x\\\"\\\\\\/\\n\\t\"} "),
            (Map{{"a", "1"}, {"b", "x\"\\/\n\t"}}));
  EXPECT_EQ(DecodeJsonObject("{}"), Map{});
  EXPECT_EQ(DecodeJsonObject(R"({"a": "1", "a": "2"})"), (Map{{"a", "2"}}));
  EXPECT_EQ(DecodeJsonObject(R"({"\u0061": "\u00e9"})"), (Map{{"a", "\xc3\xa9"}}));
  EXPECT_EQ(DecodeJsonObject("{\"a\": \"caf\xc3\xa9\"}"), (Map{{"a", "caf\xc3\xa9"}}));
  for (const std::string bad :
       {"{", "{\"a\"}", "{\"a\": \"1\",}", "{\"a\": \"1\"} x", "{\"a\": \"\x01\"}",
        "{\"a\": \"1\" \"b\": \"2\"}", "{\"a\": \"\\x\"}", "{\"a\": \"\xff\"}", "{\"a\": null}"}) {
    EXPECT_THROW(DecodeJsonObject(bad), LaunchError) << bad;
  }
}

}  // namespace
}  // namespace pdlaunch
