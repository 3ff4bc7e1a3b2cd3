#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pdlaunch {

/// What the console shows of the echoed processes' output (docs/cli.md, "Console"). Pure: bytes
/// and times in, bytes for the console out.
///
/// An unprefixed source (the default echo of one process, as Paddle's) goes through as written,
/// partial lines and carriage returns included, so a progress bar draws as in a terminal.
///
/// Prefixed sources (--echo all or a list) are shown a segment at a time, a segment ending at
/// '\n', "\r\n" or a lone '\r' (a progress bar's redraw), each segment behind its prefix, so that
/// two processes' bytes never splice and a bar keeps its "[rank N]: " on every redraw. A partial
/// segment is held until it ends, or until its source has been quiet for a while (FlushQuiet: a
/// prompt, "loading... " before a long step), when it is shown as it is and its continuation
/// follows it without a prefix. Whatever another source shows first ends that open line with a
/// '\n', so the line stays whole and the continuation starts a new one, prefixed.
class EchoMux {
 public:
  /// One entry per source: its prefix, empty for an unprefixed source (then the only one).
  explicit EchoMux(std::vector<std::string> prefixes);
  /// Bytes `source` wrote, at `now` (seconds, any clock); returns what to show now.
  std::string Feed(size_t source, std::string_view bytes, double now);
  /// Shows what sources quiet for `quiet` seconds or more at `now` hold.
  std::string FlushQuiet(double now, double quiet);
  /// When FlushQuiet(…, quiet) would next show something: nullopt when nothing is held.
  std::optional<double> NextQuiet(double quiet) const;
  /// The end: everything held, and a '\n' after a prefixed line left open. An unprefixed
  /// source's last line without a newline (a process killed in the middle of it) stays as
  /// written, so that the console holds its bytes exactly; LeftLineOpen() says so.
  std::string Finish();
  /// After Finish: whether an unprefixed source's bytes ended the console in the middle of a
  /// line (NoteConsoleLineOpen).
  bool LeftLineOpen() const { return left_open_; }
  /// Whether an unprefixed source's bytes came at all (else LeftLineOpen says nothing new).
  bool Fed() const { return fed_; }
  /// A '\n' that ends a line left open (a shown partial segment, a redraw, an unprefixed
  /// source's bytes that did not end a line), for something else to be written to the console
  /// after it; empty when none is open. What that source writes next starts a new line
  /// (prefixed, for a prefixed source).
  std::string EndLine();

 private:
  struct Source {
    std::string prefix;
    std::string held;       ///< Not shown yet: a partial segment (or a lone '\r' at its end).
    double last = 0;        ///< When bytes last came.
    bool mid_line = false;  ///< Part of its current line is shown: the rest goes on unprefixed.
  };
  /// Shows `text` of `source`: complete segments, and at most a partial one at its end.
  std::string Show(size_t source, std::string_view text);

  std::vector<Source> sources_;
  /// The source whose output left the console's line unfinished (a shown partial segment, or a
  /// '\r' redraw); another source's output ends that line first.
  std::optional<size_t> open_;
  bool left_open_ = false;
  bool fed_ = false;
};

/// The console's stdout left in the middle of a line by a job's echo (its process died
/// mid-line; the echo shows its bytes as written): noted by the supervisor when an echo ends.
void NoteConsoleLineOpen(bool open) noexcept;
/// Ends that line, with a '\n' on stdout, before the launcher writes a line of its own there
/// (the auto tuner's trial lines); nothing when the console is at the start of a line.
void EndOpenConsoleLine() noexcept;

}  // namespace pdlaunch
