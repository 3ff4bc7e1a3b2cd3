#include "pdlaunch/coord/etcd_protocol.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_util.h"

namespace pdlaunch::etcd {
namespace {

using testutil::ErrorOf;

const std::string kHeader =
    R"("header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709",)"
    R"("revision":"4","raft_term":"2"})";

// Status line and headers of etcd 3.4's watch answer, as captured with curl.
const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\n"
    "Access-Control-Allow-Origin: *\r\n"
    "Content-Type: application/json\r\n"
    "Grpc-Metadata-Content-Type: application/grpc\r\n"
    "Date: Sat, 21 Nov 2026 08:17:45 GMT\r\n"
    "Transfer-Encoding: chunked\r\n"
    "\r\n";

std::string Chunk(const std::string& data) {
  return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
}

std::string Message(const std::string& result) {
  return R"({"result":{)" + kHeader + result + "}}\n";
}

const std::string kCreated = Message(R"(,"created":true)");
// A put of a=b at revision 3 and a delete of a at revision 4.
const std::string kPutAndDelete = Message(
    R"(,"events":[{"kv":{"key":"YQ==","create_revision":"3","mod_revision":"3","version":"1",)"
    R"("value":"Yg==","lease":"7"}},{"type":"DELETE","kv":{"key":"YQ==","mod_revision":"4"}}])");
const std::string kPutC = Message(
    R"(,"events":[{"kv":{"key":"Yw==","create_revision":"5","mod_revision":"5","version":"1"}}])");

KvEvent Put(const std::string& key, const std::string& value, int64_t create, int64_t mod,
            int64_t lease = 0) {
  return {KvEvent::Type::kPut, {key, value, create, mod, lease}};
}

KvEvent Deleted(const std::string& key, int64_t mod) {
  return {KvEvent::Type::kDelete, {key, "", 0, mod, 0}};
}

const std::vector<KvEvent> kStreamEvents = {Put("a", "b", 3, 3, 7), Deleted("a", 4),
                                            Put("c", "", 5, 5)};

std::string Stream() {
  return kChunkedHead + Chunk(kCreated) + Chunk(kPutAndDelete) + Chunk(kPutC);
}

std::string BreakOf(const std::string& stream) {
  WatchStreamDecoder decoder;
  decoder.Feed(stream);
  EXPECT_TRUE(decoder.broken());
  return decoder.error();
}

TEST(Base64Test, EncodesRfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
}

TEST(Base64Test, DecodesRfc4648Vectors) {
  EXPECT_EQ(Base64Decode(""), "");
  EXPECT_EQ(Base64Decode("Zg=="), "f");
  EXPECT_EQ(Base64Decode("Zm8="), "fo");
  EXPECT_EQ(Base64Decode("Zm9v"), "foo");
  EXPECT_EQ(Base64Decode("Zm9vYg=="), "foob");
  EXPECT_EQ(Base64Decode("Zm9vYmE="), "fooba");
  EXPECT_EQ(Base64Decode("Zm9vYmFy"), "foobar");
}

TEST(Base64Test, UsesPlusAndSlashForHighValues) {
  EXPECT_EQ(Base64Encode("\xfb\xff"), "+/8=");
  EXPECT_EQ(Base64Decode("+/8="), "\xfb\xff");
  EXPECT_EQ(Base64Encode(std::string("\0\0\0", 3)), "AAAA");
  EXPECT_EQ(Base64Decode("AAAA"), std::string("\0\0\0", 3));
}

TEST(Base64Test, RoundTripsEveryByteAtEveryLength) {
  std::string all;
  for (int byte = 0; byte < 256; ++byte) all += static_cast<char>(byte);
  for (size_t length = 0; length <= all.size(); ++length) {
    const std::string bytes = all.substr(all.size() - length);
    const std::string text = Base64Encode(bytes);
    ASSERT_EQ(text.size(), (length + 2) / 3 * 4) << length;
    ASSERT_EQ(Base64Decode(text), bytes) << length;
  }
}

TEST(Base64Test, DecodesWithoutPadding) {
  EXPECT_EQ(Base64Decode("Zg"), "f");
  EXPECT_EQ(Base64Decode("Zm8"), "fo");
  EXPECT_EQ(Base64Decode("Zm9vYg"), "foob");
}

TEST(Base64Test, RejectsInvalidText) {
  for (const std::string text :
       {"Z", "Zg=", "Z===", "Zm9v!", "Zg==Zg==", "=Zg=", "Zm 9v", "Zm9vY"}) {
    EXPECT_EQ(ErrorOf<KvUnavailable>([&] { Base64Decode(text); }), "invalid base64 '" + text + "'");
  }
}

TEST(PrefixRangeTest, IncrementsTheLastByte) {
  EXPECT_EQ(PrefixRange("/job/"), (KeyRange{"/job/", "/job0"}));
  EXPECT_EQ(PrefixRange("a"), (KeyRange{"a", "b"}));
  EXPECT_EQ(PrefixRange("a\x7f"), (KeyRange{"a\x7f", "a\x80"}));
  EXPECT_EQ(PrefixRange("a\xfe"), (KeyRange{"a\xfe", "a\xff"}));
}

TEST(PrefixRangeTest, DropsTrailingFfBytes) {
  EXPECT_EQ(PrefixRange("a\xff"), (KeyRange{"a\xff", "b"}));
  EXPECT_EQ(PrefixRange("ab\xff\xff"), (KeyRange{"ab\xff\xff", "ac"}));
}

TEST(PrefixRangeTest, AllFfMeansEveryKeyFromThePrefixOn) {
  EXPECT_EQ(PrefixRange("\xff\xff"), (KeyRange{"\xff\xff", std::string(1, '\0')}));
}

TEST(PrefixRangeTest, EmptyPrefixMeansEveryKey) {
  EXPECT_EQ(PrefixRange(""), (KeyRange{std::string(1, '\0'), std::string(1, '\0')}));
}

TEST(EtcdRequestTest, PutEncodesKeyValueAndLease) {
  EXPECT_EQ(PutRequest("a", "b", 0), R"({"key":"YQ==","value":"Yg=="})");
  EXPECT_EQ(PutRequest("a", "", 2324035516461981958),
            R"({"key":"YQ==","lease":"2324035516461981958","value":""})");
}

TEST(EtcdRequestTest, RangeAndDeleteRangeOmitAnEmptyRangeEnd) {
  EXPECT_EQ(RangeRequest("a", ""), R"({"key":"YQ=="})");
  EXPECT_EQ(RangeRequest("a", "b"), R"({"key":"YQ==","range_end":"Yg=="})");
  EXPECT_EQ(DeleteRangeRequest("a", ""), R"({"key":"YQ=="})");
  EXPECT_EQ(DeleteRangeRequest(std::string(1, '\0'), std::string(1, '\0')),
            R"({"key":"AA==","range_end":"AA=="})");
}

TEST(EtcdRequestTest, PutIfAbsentComparesCreateRevisionZero) {
  EXPECT_EQ(PutIfRequest("a", 0, "v", 0),
            R"({"compare":[{"create_revision":"0","key":"YQ==","result":"EQUAL",)"
            R"("target":"CREATE"}],"success":[{"request_put":{"key":"YQ==","value":"dg=="}}]})");
}

TEST(EtcdRequestTest, PutIfComparesModRevision) {
  EXPECT_EQ(PutIfRequest("a", 5, "v", 9),
            R"({"compare":[{"key":"YQ==","mod_revision":"5","result":"EQUAL","target":"MOD"}],)"
            R"("success":[{"request_put":{"key":"YQ==","lease":"9","value":"dg=="}}]})");
}

TEST(EtcdRequestTest, LeaseBodies) {
  EXPECT_EQ(LeaseGrantRequest(2), R"({"TTL":2})");
  EXPECT_EQ(LeaseIdRequest(2324035516461981958), R"({"ID":"2324035516461981958"})");
}

TEST(EtcdRequestTest, WatchCreateOmitsStartRevisionZero) {
  EXPECT_EQ(WatchCreateRequest("a", "b", 1),
            R"({"create_request":{"key":"YQ==","range_end":"Yg==","start_revision":"1"}})");
  EXPECT_EQ(WatchCreateRequest("a", "b", 0),
            R"({"create_request":{"key":"YQ==","range_end":"Yg=="}})");
}

TEST(EtcdResponseTest, PutReturnsTheHeaderRevision) {
  EXPECT_EQ(ParsePutResponse("{" + kHeader + "}"), 4);
  EXPECT_EQ(ParsePutResponse(R"({"header":{"revision":12}})"), 12);
}

TEST(EtcdResponseTest, RangeWithoutKvsIsEmpty) {
  const KvStore::Range range = ParseRangeResponse("{" + kHeader + "}");
  EXPECT_TRUE(range.kvs.empty());
  EXPECT_EQ(range.revision, 4);
}

TEST(EtcdResponseTest, RangeDecodesKeyValues) {
  const KvStore::Range range = ParseRangeResponse(
      "{" + kHeader +
      R"(,"kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"3","version":"2",)"
      R"("value":"Yg==","lease":"2324035516461981958"},{"key":"AP8=","create_revision":"4",)"
      R"("mod_revision":"4","version":"1"}],"count":"2"})");
  ASSERT_EQ(range.kvs.size(), 2u);
  EXPECT_EQ(range.kvs[0], (KeyValue{"a", "b", 2, 3, 2324035516461981958}));
  EXPECT_EQ(range.kvs[1], (KeyValue{std::string("\0\xff", 2), "", 4, 4, 0}));
}

TEST(EtcdResponseTest, DeleteRangeCountsDeletedKeys) {
  EXPECT_EQ(ParseDeleteRangeResponse("{" + kHeader + R"(,"deleted":"3"})"), 3);
  EXPECT_EQ(ParseDeleteRangeResponse("{" + kHeader + "}"), 0);
}

TEST(EtcdResponseTest, TxnSucceededIsFalseWhenAbsent) {
  EXPECT_TRUE(ParseTxnResponse("{" + kHeader + R"(,"succeeded":true,"responses":[{}]})"));
  EXPECT_FALSE(ParseTxnResponse("{" + kHeader + "}"));
}

TEST(EtcdResponseTest, LeaseGrantReturnsTheId) {
  EXPECT_EQ(ParseLeaseGrantResponse("{" + kHeader + R"(,"ID":"2324035516461981958","TTL":"2"})"),
            2324035516461981958);
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParseLeaseGrantResponse(R"({"TTL":"2"})"); }),
            R"(invalid response: no lease ID in '{"TTL":"2"}')");
  EXPECT_EQ(ErrorOf<EtcdError>([] { ParseLeaseGrantResponse(R"({"ID":"1","error":"no space"})"); }),
            "no space");
}

TEST(EtcdResponseTest, KeepAliveReturnsTheTtl) {
  EXPECT_EQ(ParseKeepAliveResponse(R"({"result":{)" + kHeader + R"(,"ID":"7","TTL":"20"}})" + "\n"),
            20);
}

TEST(EtcdResponseTest, KeepAliveOfAnExpiredLeaseIsZero) {
  EXPECT_EQ(ParseKeepAliveResponse(R"({"result":{)" + kHeader + R"(,"ID":"7"}})" + "\n"), 0);
}

TEST(EtcdResponseTest, KeepAliveReadsTheFirstOfSeveralMessages) {
  EXPECT_EQ(
      ParseKeepAliveResponse("\n{\"result\":{\"TTL\":\"5\"}}\n{\"result\":{\"TTL\":\"6\"}}\n"), 5);
}

TEST(EtcdResponseTest, UnaryErrorBecomesEtcdErrorWithCode) {
  const std::string body =
      R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested )"
      R"(lease not found","code":5})";
  try {
    ParseRevokeResponse(body);
    FAIL() << "nothing thrown";
  } catch (const EtcdError& error) {
    EXPECT_EQ(std::string(error.what()), "etcdserver: requested lease not found");
    EXPECT_EQ(error.code(), kCodeNotFound);
  }
}

TEST(EtcdResponseTest, BareCodeAndMessageIsAnError) {
  try {
    ParsePutResponse(R"({"code":14,"message":"etcdserver: no leader"})");
    FAIL() << "nothing thrown";
  } catch (const EtcdError& error) {
    EXPECT_EQ(std::string(error.what()), "etcdserver: no leader");
    EXPECT_EQ(error.code(), 14);
  }
}

TEST(EtcdResponseTest, StreamErrorObjectBecomesEtcdError) {
  try {
    ParseKeepAliveResponse(
        R"({"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader",)"
        R"("http_status":"Service Unavailable"}})");
    FAIL() << "nothing thrown";
  } catch (const EtcdError& error) {
    EXPECT_EQ(std::string(error.what()), "etcdserver: no leader");
    EXPECT_EQ(error.code(), 14);
  }
}

TEST(EtcdResponseTest, InvalidJsonIsReported) {
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParsePutResponse("xx\nmore"); }),
            "invalid response: not a JSON object: 'xx'");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParsePutResponse("[1]"); }),
            "invalid response: not a JSON object: '[1]'");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParsePutResponse(""); }),
            "invalid response: not a JSON object: ''");
}

TEST(EtcdResponseTest, WrongFieldTypesAreReported) {
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParsePutResponse(R"({"header":{"revision":"2x"}})"); }),
            R"(invalid response: field 'revision' is not an integer: "2x")");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParsePutResponse(R"({"header":{"revision":""}})"); }),
            R"(invalid response: field 'revision' is not an integer: "")");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParsePutResponse(R"({"header":[]})"); }),
            "invalid response: field 'header' is not an object");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParseRangeResponse(R"({"kvs":{}})"); }),
            "invalid response: field 'kvs' is not an array");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParseRangeResponse(R"({"kvs":[{"key":"!"}]})"); }),
            "invalid base64 '!'");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParseRangeResponse(R"({"kvs":[{"key":1}]})"); }),
            "invalid response: field 'key' is not a string");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParseTxnResponse(R"({"succeeded":"yes"})"); }),
            "invalid response: field 'succeeded' is not a boolean");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParsePutResponse(R"({"header":{"revision":1.5}})"); }),
            "invalid response: field 'revision' is not an integer: 1.5");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { ParsePutResponse(R"({"error":7})"); }),
            "invalid response: field 'error' is not a string");
}

TEST(EtcdResponseTest, AnEmptyErrorIsNoError) {
  EXPECT_EQ(ParseLeaseGrantResponse(R"({"ID":"5","TTL":"2","error":""})"), 5);
}

TEST(EtcdResponseTest, CheckHttpStatusAcceptsSuccess) {
  EXPECT_NO_THROW(CheckHttpStatus(200, "OK", "anything"));
  EXPECT_NO_THROW(CheckHttpStatus(204, "No Content", ""));
}

TEST(EtcdResponseTest, CheckHttpStatusPrefersTheEtcdError) {
  try {
    CheckHttpStatus(404, "Not Found",
                    R"({"error":"etcdserver: requested lease not found","message":"etcdserver: )"
                    R"(requested lease not found","code":5})");
    FAIL() << "nothing thrown";
  } catch (const EtcdError& error) {
    EXPECT_EQ(std::string(error.what()), "etcdserver: requested lease not found");
    EXPECT_EQ(error.code(), 5);
  }
}

TEST(EtcdResponseTest, CheckHttpStatusNamesStatusAndBody) {
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { CheckHttpStatus(404, "Not Found", "Not Found\n"); }),
            "HTTP 404 Not Found: Not Found");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { CheckHttpStatus(503, "Service Unavailable", ""); }),
            "HTTP 503 Service Unavailable");
  EXPECT_EQ(ErrorOf<KvUnavailable>([] { CheckHttpStatus(500, "Error", R"({"a":1})"); }),
            R"(HTTP 500 Error: {"a":1})");
  EXPECT_EQ(
      ErrorOf<KvUnavailable>([] { CheckHttpStatus(502, "Bad Gateway", std::string(300, 'x')); }),
      "HTTP 502 Bad Gateway: " + std::string(200, 'x') + "...");
}

TEST(WatchStreamDecoderTest, DecodesAChunkedStream) {
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.status(), 0);
  EXPECT_EQ(decoder.Feed(Stream()), kStreamEvents);
  EXPECT_EQ(decoder.status(), 200);
  EXPECT_TRUE(decoder.created());
  EXPECT_FALSE(decoder.broken());
  EXPECT_EQ(decoder.error(), "");
}

TEST(WatchStreamDecoderTest, GivesTheSameEventsWhenSplitAtAnyPosition) {
  const std::string stream = Stream();
  for (size_t split = 0; split <= stream.size(); ++split) {
    WatchStreamDecoder decoder;
    std::vector<KvEvent> events = decoder.Feed(stream.substr(0, split));
    for (KvEvent& event : decoder.Feed(stream.substr(split))) events.push_back(event);
    ASSERT_EQ(events, kStreamEvents) << "split at " << split;
    ASSERT_TRUE(decoder.created()) << "split at " << split;
    ASSERT_FALSE(decoder.broken()) << decoder.error() << " split at " << split;
  }
}

TEST(WatchStreamDecoderTest, GivesTheSameEventsFedByteByByte) {
  const std::string stream = Stream();
  WatchStreamDecoder decoder;
  std::vector<KvEvent> events;
  for (const char byte : stream) {
    for (KvEvent& event : decoder.Feed(std::string(1, byte))) events.push_back(event);
  }
  EXPECT_EQ(events, kStreamEvents);
  EXPECT_FALSE(decoder.broken()) << decoder.error();
}

TEST(WatchStreamDecoderTest, ReturnsEachEventOnlyOnceItsMessageIsComplete) {
  const std::string stream = kChunkedHead + Chunk(kCreated) + Chunk(kPutAndDelete);
  WatchStreamDecoder decoder;
  EXPECT_TRUE(decoder.Feed(stream.substr(0, stream.size() - 3)).empty());  // Before the "\n".
  EXPECT_EQ(decoder.Feed(stream.substr(stream.size() - 3)).size(), 2u);
}

TEST(WatchStreamDecoderTest, JoinsAMessageSplitAcrossChunks) {
  const std::string stream = kChunkedHead + Chunk(kCreated) + Chunk(kPutC.substr(0, 10)) +
                             Chunk(kPutC.substr(10, 40)) + Chunk(kPutC.substr(50));
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.Feed(stream), (std::vector<KvEvent>{Put("c", "", 5, 5)}));
}

TEST(WatchStreamDecoderTest, SplitsSeveralMessagesInOneChunk) {
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.Feed(kChunkedHead + Chunk(kCreated + kPutAndDelete + kPutC)), kStreamEvents);
}

TEST(WatchStreamDecoderTest, SkipsBlankLines) {
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.Feed(kChunkedHead + Chunk("\n" + kCreated + "\r\n  \n" + kPutC)),
            (std::vector<KvEvent>{Put("c", "", 5, 5)}));
  EXPECT_FALSE(decoder.broken());
}

TEST(WatchStreamDecoderTest, IgnoresHeaderCaseAndChunkExtensions) {
  const std::string data = kCreated + kPutC;
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.Feed("HTTP/1.1 200 OK\r\ntransfer-encoding:  Chunked \r\n\r\n" +
                         fmt::format("{:X};name=value\r\n", data.size()) + data + "\r\n"),
            (std::vector<KvEvent>{Put("c", "", 5, 5)}));
  EXPECT_FALSE(decoder.broken()) << decoder.error();
}

TEST(WatchStreamDecoderTest, SkipsAnInterimContinue) {
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.Feed("HTTP/1.1 100 Continue\r\n\r\n" + Stream()), kStreamEvents);
  EXPECT_EQ(decoder.status(), 200);
}

TEST(WatchStreamDecoderTest, TheLastChunkEndsTheStream) {
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.Feed(Stream() + "0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n"),
            kStreamEvents);
  EXPECT_TRUE(decoder.broken());
  EXPECT_EQ(decoder.error(), "stream ended");
}

TEST(WatchStreamDecoderTest, DecodesABodyOfKnownLength) {
  const std::string body = kCreated + kPutC;
  WatchStreamDecoder decoder;
  const std::string head =
      fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.size());
  EXPECT_TRUE(decoder.Feed(head + body.substr(0, 30)).empty());
  EXPECT_FALSE(decoder.broken());
  EXPECT_EQ(decoder.Feed(body.substr(30) + "ignored"), (std::vector<KvEvent>{Put("c", "", 5, 5)}));
  EXPECT_TRUE(decoder.broken());
  EXPECT_EQ(decoder.error(), "stream ended");
}

TEST(WatchStreamDecoderTest, DecodesABodyUntilTheConnectionCloses) {
  WatchStreamDecoder decoder;
  // The last message lacks its newline: the end of the connection completes it.
  const std::string last = kPutC.substr(0, kPutC.size() - 1);
  EXPECT_TRUE(decoder.Feed("HTTP/1.1 200 OK\r\n\r\n" + kCreated + last).empty());
  EXPECT_FALSE(decoder.broken());
  decoder.FeedEof();
  EXPECT_EQ(decoder.Feed(""), (std::vector<KvEvent>{Put("c", "", 5, 5)}));
  EXPECT_EQ(decoder.error(), "connection closed");
}

TEST(WatchStreamDecoderTest, EofBreaksTheStream) {
  WatchStreamDecoder decoder;
  decoder.Feed(kChunkedHead + Chunk(kCreated));
  decoder.FeedEof();
  EXPECT_TRUE(decoder.broken());
  EXPECT_EQ(decoder.error(), "connection closed");
}

TEST(WatchStreamDecoderTest, EofBeforeTheAnswerBreaksTheStream) {
  WatchStreamDecoder decoder;
  decoder.FeedEof();
  EXPECT_EQ(decoder.error(), "connection closed");
  EXPECT_EQ(decoder.status(), 0);
}

TEST(WatchStreamDecoderTest, ReportsCompaction) {
  WatchStreamDecoder decoder;
  const std::string compacted =
      R"({"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"3"}})"
      "\n";
  EXPECT_EQ(decoder.Feed(kChunkedHead + Chunk(kCreated + kPutC) + Chunk(compacted) + Chunk(kPutC)),
            (std::vector<KvEvent>{Put("c", "", 5, 5)}));
  EXPECT_TRUE(decoder.broken());
  EXPECT_EQ(decoder.compact_revision(), 3);
  EXPECT_EQ(decoder.error(), "watch cancelled: revision compacted (compact revision 3)");
}

TEST(WatchStreamDecoderTest, ReportsCancelWithItsReason) {
  EXPECT_EQ(BreakOf(kChunkedHead + Chunk(kCreated) + Chunk(Message(R"(,"canceled":true)"))),
            "watch cancelled");
  EXPECT_EQ(BreakOf(kChunkedHead + Chunk(kCreated) +
                    Chunk(Message(R"(,"canceled":true,"cancel_reason":"permission denied")"))),
            "watch cancelled: permission denied");
}

TEST(WatchStreamDecoderTest, ReportsAnErrorMessage) {
  EXPECT_EQ(BreakOf(kChunkedHead + Chunk(kCreated) +
                    Chunk(R"({"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: )"
                          R"(no leader","http_status":"Service Unavailable"}})"
                          "\n")),
            "etcdserver: no leader");
}

TEST(WatchStreamDecoderTest, ReportsAnHttpErrorWithItsBody) {
  WatchStreamDecoder decoder;
  decoder.Feed(
      "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nNot "
      "Found\n");
  EXPECT_EQ(decoder.status(), 404);
  EXPECT_TRUE(decoder.broken());
  EXPECT_EQ(decoder.error(), "HTTP 404 Not Found: Not Found");
}

TEST(WatchStreamDecoderTest, ReportsTheEtcdErrorOfAChunkedHttpError) {
  const std::string error_body =
      R"({"error":"invalid character 'x'","message":"invalid character 'x'","code":3})";
  const std::string stream = "HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n" +
                             Chunk(error_body) + "0\r\nGrpc-Trailer-Content-Type: x\r\n\r\n";
  for (size_t split = 0; split <= stream.size(); ++split) {
    WatchStreamDecoder decoder;
    EXPECT_TRUE(decoder.Feed(stream.substr(0, split)).empty());
    EXPECT_TRUE(decoder.Feed(stream.substr(split)).empty());
    ASSERT_EQ(decoder.error(), "invalid character 'x'") << "split at " << split;
  }
}

TEST(WatchStreamDecoderTest, ReportsAnHttpErrorCutShort) {
  WatchStreamDecoder decoder;
  decoder.Feed("HTTP/1.1 503 Service Unavailable\r\n\r\nbusy");
  EXPECT_FALSE(decoder.broken());
  decoder.FeedEof();
  EXPECT_EQ(decoder.error(), "HTTP 503 Service Unavailable: busy");
}

TEST(WatchStreamDecoderTest, ReportsMalformedInput) {
  EXPECT_EQ(BreakOf("HTTP/1.1 abc\r\n"), "malformed HTTP status line 'HTTP/1.1 abc'");
  EXPECT_EQ(BreakOf("SMTP 220 hello\r\n"), "malformed HTTP status line 'SMTP 220 hello'");
  EXPECT_EQ(BreakOf("HTTP/1.1 2000 OK\r\n"), "malformed HTTP status line 'HTTP/1.1 2000 OK'");
  EXPECT_EQ(BreakOf("HTTP/1.1 200 OK\r\nno colon\r\n"), "malformed HTTP header 'no colon'");
  EXPECT_EQ(BreakOf("HTTP/1.1 200 OK\r\nContent-Length: x\r\n"), "malformed Content-Length 'x'");
  EXPECT_EQ(BreakOf(kChunkedHead + "zz\r\n"), "malformed chunk size 'zz'");
  EXPECT_EQ(BreakOf(kChunkedHead + "2\r\n{}xx\r\n"),
            "malformed chunked body: no CRLF after a chunk");
  EXPECT_EQ(BreakOf(kChunkedHead + Chunk("{oops\n")),
            "invalid response: not a JSON object: '{oops'");
  EXPECT_EQ(BreakOf(kChunkedHead + Chunk(R"({"result":{"events":[{"type":"MOVE"}]}})"
                                         "\n")),
            "invalid response: unknown event type 'MOVE'");
  EXPECT_EQ(BreakOf(kChunkedHead + Chunk(R"({"result":{"events":[{"type":1}]}})"
                                         "\n")),
            "invalid response: field 'type' is not a string");
  EXPECT_EQ(BreakOf(kChunkedHead + Chunk(R"({"result":{"events":{}}})"
                                         "\n")),
            "invalid response: field 'events' is not an array");
  EXPECT_EQ(BreakOf(kChunkedHead + Chunk(R"({"result":[]})"
                                         "\n")),
            "invalid response: field 'result' is not an object");
  EXPECT_EQ(BreakOf(kChunkedHead + std::string(5000, '1')),
            "malformed HTTP response: line too long");
}

TEST(WatchStreamDecoderTest, IgnoresInputOnceBroken) {
  WatchStreamDecoder decoder;
  decoder.Feed(kChunkedHead + Chunk(Message(R"(,"canceled":true)")));
  EXPECT_TRUE(decoder.Feed(Chunk(kPutC)).empty());
  decoder.FeedEof();
  EXPECT_EQ(decoder.error(), "watch cancelled");
}

TEST(WatchStreamDecoderTest, FeedUntilCreatedStopsBeforeTheNextMessage) {
  const std::string next_size = fmt::format("{:x}\r\n", kPutAndDelete.size());
  const size_t expected = kChunkedHead.size() + Chunk(kCreated).size() + next_size.size();
  const std::string stream = Stream();
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.FeedUntilCreated(stream), expected);
  EXPECT_TRUE(decoder.created());
  EXPECT_EQ(decoder.FeedUntilCreated(stream.substr(expected)), 0u);
  EXPECT_EQ(decoder.Feed(stream.substr(expected)), kStreamEvents);
}

TEST(WatchStreamDecoderTest, FeedUntilCreatedStopsInsideAChunkHoldingMore) {
  const std::string stream = kChunkedHead + Chunk(kCreated + kPutC);
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.FeedUntilCreated(stream), kChunkedHead.size() + 5 + kCreated.size());
  EXPECT_EQ(decoder.Feed(stream.substr(kChunkedHead.size() + 5 + kCreated.size())),
            (std::vector<KvEvent>{Put("c", "", 5, 5)}));
}

// As the watch does: peek what the socket holds (first `arrived` bytes, then everything), let the
// decoder take a prefix of it, stop once created.
TEST(WatchStreamDecoderTest, FeedUntilCreatedTakesNoLaterMessageWhateverArrivesWhen) {
  const std::string next_size = fmt::format("{:x}\r\n", kPutAndDelete.size());
  const size_t created_at = kChunkedHead.size() + Chunk(kCreated).size() - 2;  // Before CRLF.
  const size_t expected = kChunkedHead.size() + Chunk(kCreated).size() + next_size.size();
  const std::string stream = Stream();
  for (size_t arrived = 0; arrived <= stream.size(); ++arrived) {
    WatchStreamDecoder decoder;
    size_t consumed = decoder.FeedUntilCreated(stream.substr(0, arrived));
    ASSERT_EQ(decoder.created(), arrived >= created_at) << arrived;
    if (arrived < created_at) {
      ASSERT_EQ(consumed, arrived);
      consumed += decoder.FeedUntilCreated(stream.substr(consumed));
      ASSERT_EQ(consumed, expected) << arrived;
    } else {
      ASSERT_EQ(consumed, std::min(arrived, expected)) << arrived;
    }
    ASSERT_EQ(decoder.Feed(stream.substr(consumed)), kStreamEvents) << arrived;
  }
}

TEST(WatchStreamDecoderTest, FeedUntilCreatedKeepsEarlierEventsForFeed) {
  const std::string stream = kChunkedHead + Chunk(kPutC) + Chunk(kCreated);
  WatchStreamDecoder decoder;
  EXPECT_EQ(decoder.FeedUntilCreated(stream), stream.size());
  EXPECT_EQ(decoder.Feed(""), (std::vector<KvEvent>{Put("c", "", 5, 5)}));
}

}  // namespace
}  // namespace pdlaunch::etcd
