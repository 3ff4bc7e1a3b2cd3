#pragma once

// Reading one HTTP message with Beast from a peer that is not trusted (docs/master.md,
// "Exposure"). Private to src/coord/: included only by the two files that include Beast
// (http_master.cc, etcd_store.cc).
//
// The callers read the socket themselves (async_read_some into a bounded flat_buffer) and hand
// the bytes to the parser here, so that nothing the parser throws can leave a handler: Beast 1.81
// throws std::length_error ("field value too large") from basic_fields for a header or trailer
// field over 65 534 bytes, and a chunked message's trailer counts against no header limit.

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

namespace pdlaunch::http_feed {

/// Bytes a read buffer holds at most. A header or trailer line must fit whole before the parser
/// takes it, so no field can reach the size at which Beast throws; body bytes pass through (the
/// parser copies them into the message as they come).
inline constexpr size_t kMaxBufferedBytes = 32 << 10;
/// Bytes asked of the socket per read.
inline constexpr size_t kReadBytes = 16 << 10;

/// How many bytes the next read may add to `buffer`; 0 when it is full (a line too long).
inline size_t ReadSize(const boost::beast::flat_buffer& buffer) {
  const size_t room = kMaxBufferedBytes - std::min(buffer.size(), kMaxBufferedBytes);
  return std::min(room, kReadBytes);
}

enum class Fed {
  kNeedMore,  ///< The message is not complete: read more.
  kDone,      ///< parser.is_done().
  kFailed,    ///< Malformed, over a bound, or the parser threw; `error` says which.
};

// Runs `body`, which returns a Fed; an exception (the parser's, or an allocation's) is kFailed
// with its message in `error`.
template <class Body>
Fed Guarded(std::string& error, Body body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception from the HTTP parser";
  }
  return Fed::kFailed;
}

/// Hands what `buffer` holds to `parser`, consuming what it took. With `stop_after_header`, it
/// returns kNeedMore as soon as the header is complete (parser.is_header_done()), leaving the
/// body's bytes in `buffer`, so that the caller can look at the header first. Never throws.
template <class Parser>
Fed Feed(Parser& parser, boost::beast::flat_buffer& buffer, std::string& error,
         bool stop_after_header = false) noexcept {
  return Guarded(error, [&] {
    while (buffer.size() > 0 && !parser.is_done()) {
      boost::beast::error_code ec;
      const size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == boost::beast::http::error::need_more) break;
      if (ec) {
        error = ec.message();
        return Fed::kFailed;
      }
      if (stop_after_header && parser.is_header_done() && !parser.is_done()) {
        return Fed::kNeedMore;
      }
      if (used == 0) break;
    }
    if (parser.is_done()) return Fed::kDone;
    if (ReadSize(buffer) == 0) {
      error = "a header line longer than the read buffer";
      return Fed::kFailed;
    }
    return Fed::kNeedMore;
  });
}

/// The peer closed its side: a message whose end is the end of the stream (a response without a
/// Content-Length) is done; anything else is cut short. Never throws.
template <class Parser>
Fed FeedEof(Parser& parser, std::string& error) noexcept {
  return Guarded(error, [&] {
    if (!parser.got_some()) {  // Beast would take an empty stream for an empty message.
      error = "connection closed before any byte of the message";
      return Fed::kFailed;
    }
    boost::beast::error_code ec;
    parser.put_eof(ec);
    if (!ec && parser.is_done()) return Fed::kDone;
    error = ec ? ec.message() : "connection closed before the message ended";
    return Fed::kFailed;
  });
}

/// One read's worth, as async_read_some gave it (`ec`, `n`): the end of the stream goes to
/// FeedEof; bytes are committed to `buffer`, counted in `received` against `max_received` (the
/// whole message, header and framing included), and fed. Another error fails with its message.
/// Never throws.
template <class Parser>
Fed Take(Parser& parser, boost::beast::flat_buffer& buffer, const boost::beast::error_code& ec,
         size_t n, uint64_t& received, uint64_t max_received, std::string& error,
         bool stop_after_header = false) noexcept {
  if (ec == boost::asio::error::eof) return FeedEof(parser, error);
  const Fed read = Guarded(error, [&] {
    if (ec) {
      error = ec.message();
      return Fed::kFailed;
    }
    buffer.commit(n);
    received += n;
    if (received > max_received) {
      error = fmt::format("a message over the reader's bound of {} bytes", max_received);
      return Fed::kFailed;
    }
    return Fed::kNeedMore;
  });
  if (read == Fed::kFailed) return read;
  return Feed(parser, buffer, error, stop_after_header);
}

}  // namespace pdlaunch::http_feed
