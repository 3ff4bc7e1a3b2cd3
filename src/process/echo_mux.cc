// EchoMux (console_echo.h): pure, in a file of its own (WriteAll's does I/O), so that the
// fuzzer builds it.
#include <utility>

#include "pdlaunch/process/console_echo.h"

namespace pdlaunch {

EchoMux::EchoMux(std::vector<std::string> prefixes) {
  sources_.reserve(prefixes.size());
  for (std::string& prefix : prefixes) sources_.push_back(Source{std::move(prefix), {}, 0, false});
}

std::string EchoMux::Show(size_t index, std::string_view text) {
  Source& source = sources_[index];
  std::string out;
  if (text.empty()) return out;
  if (open_ && *open_ != index) {
    out += '\n';
    sources_[*open_].mid_line = false;
    open_.reset();
  }
  while (!text.empty()) {
    size_t end = text.find_first_of("\r\n");
    if (end != std::string_view::npos && text[end] == '\r' && end + 1 < text.size() &&
        text[end + 1] == '\n') {
      ++end;  // "\r\n" ends a line as '\n' does.
    }
    const size_t length = end == std::string_view::npos ? text.size() : end + 1;
    // A bare '\r' (tqdm starts each redraw with one) only returns the cursor: no prefix.
    if (!source.mid_line && !(length == 1 && text[0] == '\r')) out += source.prefix;
    out.append(text.substr(0, length));
    const char last = text[length - 1];
    if (last == '\n') {
      source.mid_line = false;
      open_.reset();
    } else if (last == '\r') {
      source.mid_line = false;  // The redraw comes with its prefix again.
      open_ = index;
    } else {
      source.mid_line = true;
      open_ = index;
    }
    text.remove_prefix(length);
  }
  return out;
}

std::string EchoMux::Feed(size_t index, std::string_view bytes, double now) {
  Source& source = sources_[index];
  if (source.prefix.empty()) {  // The one source, as written; whether it ended a line, kept.
    if (!bytes.empty()) {
      fed_ = true;
      source.mid_line = bytes.back() != '\n';
      if (source.mid_line) {
        open_ = index;
      } else if (open_ == index) {
        open_.reset();
      }
    }
    return std::string(bytes);
  }
  source.held.append(bytes);
  source.last = now;
  // Up to the last terminator; a '\r' at the very end may be half of "\r\n": held.
  size_t end = source.held.find_last_of("\r\n");
  if (end != std::string::npos && end + 1 == source.held.size() && source.held[end] == '\r') {
    end = end == 0 ? std::string::npos : source.held.find_last_of("\r\n", end - 1);
  }
  if (end == std::string::npos) return {};
  const std::string complete = source.held.substr(0, end + 1);
  source.held.erase(0, end + 1);
  return Show(index, complete);
}

std::string EchoMux::FlushQuiet(double now, double quiet) {
  std::string out;
  for (size_t i = 0; i < sources_.size(); ++i) {
    Source& source = sources_[i];
    if (source.held.empty() || now - source.last < quiet) continue;
    out += Show(i, std::exchange(source.held, {}));
  }
  return out;
}

std::optional<double> EchoMux::NextQuiet(double quiet) const {
  std::optional<double> next;
  for (const Source& source : sources_) {
    if (source.held.empty()) continue;
    if (!next || source.last + quiet < *next) next = source.last + quiet;
  }
  return next;
}

std::string EchoMux::Finish() {
  std::string out;
  for (size_t i = 0; i < sources_.size(); ++i) {
    out += Show(i, std::exchange(sources_[i].held, {}));
  }
  // A prefixed line left open is ended; an unprefixed one is left as written (the console holds
  // the process's bytes exactly), and said: the launcher ends it before a line of its own.
  left_open_ = open_ && sources_[*open_].prefix.empty();
  if (open_ && !left_open_) out += '\n';
  open_.reset();
  return out;
}

std::string EchoMux::EndLine() {
  if (!open_) return {};
  sources_[*open_].mid_line = false;
  open_.reset();
  return "\n";
}

}  // namespace pdlaunch
