#include "pdlaunch/plan/yaml_edit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

struct Line {
  size_t begin = 0;  // Offsets into the text; `end` before the '\r' of a "\r\n".
  size_t end = 0;
  size_t next = 0;  // Where the next line begins (past the newline).
  int indent = 0;
  bool content = false;  // Neither blank nor a comment.
  bool tab = false;      // A tab in the indentation.
  bool scalar = false;   // A line of a block scalar's text ('#' lines too): never a key.
};

// A mapping line: its key, where its value begins (just past the ':'), and the value's text
// without the comment.
struct KeyLine {
  std::string key;
  size_t value_begin = 0;  // Offset into the text.
  std::string value;       // Trimmed, comment removed.
  size_t value_end = 0;    // Offset into the text: the value's end, before spaces and comment.
};

std::vector<Line> SplitLines(std::string_view text) {
  std::vector<Line> lines;
  size_t at = 0;
  while (at < text.size()) {
    Line line;
    line.begin = at;
    const size_t newline = text.find('\n', at);
    line.next = newline == std::string_view::npos ? text.size() : newline + 1;
    line.end = newline == std::string_view::npos ? text.size() : newline;
    if (line.end > line.begin && text[line.end - 1] == '\r') --line.end;
    size_t first = line.begin;
    while (first < line.end && (text[first] == ' ' || text[first] == '\t')) {
      if (text[first] == '\t') line.tab = true;
      ++first;
    }
    line.indent = static_cast<int>(first - line.begin);
    line.content = first < line.end && text[first] != '#';
    lines.push_back(line);
    at = line.next;
  }
  return lines;
}

[[noreturn]] void Fail(std::string_view key, size_t line, std::string_view why) {
  throw LaunchError(fmt::format("{}: {} (line {})", OneLine(key), why, line + 1));
}

// The end of a quoted scalar starting at `at` (on its quote), past the closing quote; npos
// when it does not close on this line.
size_t QuotedEnd(std::string_view s, size_t at) {
  const char quote = s[at];
  for (size_t i = at + 1; i < s.size(); ++i) {
    if (quote == '"' && s[i] == '\\') {
      ++i;
    } else if (s[i] == quote) {
      if (quote == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
        ++i;  // '' is a quote inside single quotes.
      } else {
        return i + 1;
      }
    }
  }
  return std::string_view::npos;
}

// Where the comment of `s` (a value's text) begins: a '#' after whitespace, outside quotes;
// s.size() without one.
size_t CommentStart(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if ((s[i] == '"' || s[i] == '\'') && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      const size_t end = QuotedEnd(s, i);
      if (end == std::string_view::npos) return s.size();
      i = end;
      continue;
    }
    if (s[i] == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) return i;
    ++i;
  }
  return s.size();
}

std::string Unquote(std::string_view quoted) {
  std::string out;
  const char quote = quoted.front();
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    if (quote == '\'' && quoted[i] == '\'' && quoted[i + 1] == '\'') {
      out += '\'';
      ++i;
    } else if (quote == '"' && quoted[i] == '\\' && i + 2 < quoted.size()) {
      out += quoted[++i];
    } else {
      out += quoted[i];
    }
  }
  return out;
}

// The line as a mapping entry; nullopt for a sequence item or anything else.
std::optional<KeyLine> ParseKeyLine(std::string_view text, const Line& line) {
  const size_t first = line.begin + static_cast<size_t>(line.indent);
  const std::string_view s = text.substr(first, line.end - first);
  // A sequence item, a complex key, a flow collection, an anchor, alias or tag, a block
  // scalar's indicator, a directive or reserved character: not a plain mapping key.
  if (s.empty() || std::string_view("-?{}[]&*!|>%@`,").find(s[0]) != std::string_view::npos) {
    return std::nullopt;
  }
  size_t colon = std::string_view::npos;
  std::string key;
  if (s[0] == '"' || s[0] == '\'') {
    const size_t end = QuotedEnd(s, 0);
    if (end == std::string_view::npos) return std::nullopt;
    size_t i = end;
    while (i < s.size() && s[i] == ' ') ++i;
    if (i >= s.size() || s[i] != ':') return std::nullopt;
    colon = i;
    key = Unquote(s.substr(0, end));
  } else {
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '#' && i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) break;
      if (s[i] == ':' && (i + 1 == s.size() || s[i + 1] == ' ' || s[i + 1] == '\t')) {
        colon = i;
        break;
      }
    }
    if (colon == std::string_view::npos) return std::nullopt;
    key = std::string(s.substr(0, colon));
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
  }
  KeyLine entry;
  entry.key = std::move(key);
  entry.value_begin = first + colon + 1;
  const std::string_view rest = s.substr(colon + 1);
  const size_t comment = CommentStart(rest);
  size_t end = comment;
  while (end > 0 && (rest[end - 1] == ' ' || rest[end - 1] == '\t')) --end;
  size_t start = 0;
  while (start < end && (rest[start] == ' ' || rest[start] == '\t')) ++start;
  entry.value = std::string(rest.substr(start, end - start));
  entry.value_end = entry.value_begin + end;
  return entry;
}

// Whether a flow collection `value` ([..] or {..}) closes on its line.
bool FlowCloses(std::string_view value) {
  int depth = 0;
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '"' || c == '\'') {
      const size_t end = QuotedEnd(value, i);
      if (end == std::string_view::npos) return false;
      i = end - 1;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth == 0) return i + 1 == value.size();
    }
  }
  return false;
}

bool PlainSafe(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (const char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
          c == '-')) {
      return false;
    }
  }
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // YAML 1.1's booleans and nulls, and what 1.2 reads as numbers (.inf, .nan): not strings.
  for (const char* word :
       {"y", "n", "yes", "no", "on", "off", "true", "false", "null", ".inf", ".nan"}) {
    if (lower == word) return false;
  }
  return true;
}

// Whether the line's value opens a block scalar (`key: |`, `- >-`, `- key: |2 # c`, `key: !!str
// |`): the column its text must be deeper than (the key's, or the dash's for an item), or
// nullopt. What follows, deeper than that or blank, is the scalar's text.
std::optional<int> BlockScalarColumn(std::string_view text, const Line& line) {
  // Past the dashes of sequence items ("- ", "- - "): the item's own value or mapping entry.
  size_t at = line.begin + static_cast<size_t>(line.indent);
  int column = line.indent;
  while (at < line.end && text[at] == '-' && (at + 1 == line.end || text[at + 1] == ' ')) {
    column = static_cast<int>(at - line.begin);
    ++at;
    while (at < line.end && text[at] == ' ') ++at;
  }
  Line rest = line;
  rest.indent = static_cast<int>(at - line.begin);
  std::string value;  // A copy: the entry's own string goes with it.
  if (const std::optional<KeyLine> entry = ParseKeyLine(text, rest)) {
    value = entry->value;
    column = rest.indent;
  } else {
    value = std::string(text.substr(at, line.end - at));
  }
  // A tag or an anchor may come before the indicator.
  while (!value.empty() && (value[0] == '!' || value[0] == '&')) {
    const size_t space = value.find(' ');
    if (space == std::string::npos) return std::nullopt;
    value.erase(0, value.find_first_not_of(' ', space));
  }
  if (value.empty() || (value[0] != '|' && value[0] != '>')) return std::nullopt;
  return column;
}

// Marks the lines of every block scalar: a '#' line in one is its text, not a comment, so that
// a key added after it does not land inside it.
void MarkBlockScalars(std::string_view text, std::vector<Line>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].content) continue;
    const std::optional<int> column = BlockScalarColumn(text, lines[i]);
    if (!column) continue;
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      Line& line = lines[j];
      const bool blank = text.find_first_not_of(" \t", line.begin) >= line.end;
      if (blank) continue;
      if (line.indent <= *column) break;
      line.content = true;
      line.scalar = true;
    }
    i = j - 1;
  }
}

}  // namespace

std::string YamlValue(std::string_view value_json) {
  const nlohmann::ordered_json value = nlohmann::ordered_json::parse(value_json);
  if (value.is_string() && PlainSafe(value.get<std::string>())) return value.get<std::string>();
  std::string text = value.dump();
  if (value.is_number_float()) {
    // YAML 1.1 (PyYAML) reads a float only with a '.' and a signed exponent: 1e-05 would be a
    // string there; 1.0e-05 is a float in both 1.1 and 1.2.
    const size_t e = text.find_first_of("eE");
    if (e != std::string::npos) {
      if (text.find('.') == std::string::npos) text.insert(e, ".0");
      const size_t after = text.find_first_of("eE") + 1;
      if (after < text.size() && text[after] != '-' && text[after] != '+') text.insert(after, "+");
    } else if (text.find('.') == std::string::npos &&
               text.find_first_of("ni") == std::string::npos) {
      text += ".0";
    }
  }
  return text;
}

namespace {

std::vector<std::string> SplitDottedKey(std::string_view dotted_key) {
  std::vector<std::string> keys;
  for (size_t at = 0;;) {
    const size_t dot = dotted_key.find('.', at);
    keys.emplace_back(dotted_key.substr(at, dot == std::string_view::npos ? dot : dot - at));
    if (dot == std::string_view::npos) return keys;
    at = dot + 1;
  }
}

/// The first line of the document: past a leading "---"; a second document is not read.
size_t DocumentStart(std::string_view text, const std::vector<Line>& lines,
                     std::string_view dotted_key) {
  size_t from = 0;
  bool first_content = true;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].content) continue;
    const std::string_view s = text.substr(lines[i].begin, lines[i].end - lines[i].begin);
    const bool marker = s.starts_with("---") || s.starts_with("...");
    if (first_content && s.starts_with("---")) {
      const size_t more = s.find_first_not_of(' ', 3);
      if (more != std::string_view::npos && s[more] != '#') {
        Fail(dotted_key, i, "content after the document start '---' is not read");
      }
      from = i + 1;
    } else if (marker) {
      Fail(dotted_key, i, "the file has several YAML documents");
    }
    first_content = false;
  }
  return from;
}

/// One mapping's lines, [begin, end), and where its parent key is.
struct Scope {
  size_t begin = 0;
  size_t end = 0;
  int parent_indent = -1;
  std::optional<size_t> parent_line;
};

/// What a look for `key` among a scope's entries found.
struct KeySearch {
  std::optional<size_t> found;         ///< The key's line.
  std::optional<int> child_indent;     ///< The indent of the scope's entries.
  std::optional<size_t> last_content;  ///< The scope's last content line.
};

KeySearch FindKey(std::string_view text, const std::vector<Line>& lines, const Scope& scope,
                  const std::string& key, const std::string& path, bool top_level) {
  KeySearch search;
  for (size_t i = scope.begin; i < scope.end; ++i) {
    const Line& line = lines[i];
    if (!line.content) continue;
    if (line.tab) Fail(path, i, "a tab in the indentation is not read");
    if (line.scalar) {  // A block scalar's text: deeper than its key, never a key itself.
      search.last_content = i;
      continue;
    }
    const bool first_line = !search.child_indent;
    if (!search.child_indent) search.child_indent = line.indent;
    search.last_content = i;
    if (line.indent != *search.child_indent) continue;  // Deeper: a value's own lines.
    const std::optional<KeyLine> entry = ParseKeyLine(text, line);
    if (!entry) {
      if (first_line && top_level) Fail(path, i, "the file's top level is not a mapping");
      if (first_line) Fail(path, i, "what is on the way is not a block mapping");
      continue;
    }
    if (entry->key == key) {
      // YAML keeps the last of a repeated key: editing the first would change nothing.
      if (search.found) Fail(path, i, "the key is twice in its mapping (YAML keeps the last)");
      search.found = i;
    }
  }
  return search;
}

/// A missing leaf key added at the end of its mapping, as Paddle sets a missing key.
std::string AddKey(std::string_view text, const std::vector<Line>& lines, const Scope& scope,
                   const KeySearch& search, const std::string& key, std::string_view value_json) {
  const int indent = search.child_indent.value_or(scope.parent_line ? scope.parent_indent + 2 : 0);
  const std::string line = fmt::format("{}{}: {}", std::string(static_cast<size_t>(indent), ' '),
                                       key, YamlValue(value_json));
  std::string out(text);
  if (!search.last_content && !scope.parent_line) {  // No mapping at all yet: the first key.
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + line + "\n";
  }
  const Line& at = lines[search.last_content ? *search.last_content : *scope.parent_line];
  if (at.next == at.end) {  // The file's last line, without a newline.
    out.insert(at.next, "\n" + line);
  } else {
    const bool crlf = text.substr(at.end, at.next - at.end) == "\r\n";
    out.insert(at.next, line + (crlf ? "\r\n" : "\n"));
  }
  return out;
}

/// Where the block of the key on line `found` ends: the next content line not deeper than it.
/// `has_block`: the key has lines of its own below it (a list at its indent included).
size_t KeyBlockEnd(std::string_view text, const std::vector<Line>& lines, size_t found,
                   size_t scope_end, bool& has_block) {
  size_t block_end = found + 1;
  while (block_end < scope_end &&
         (!lines[block_end].content || lines[block_end].indent > lines[found].indent)) {
    ++block_end;
  }
  has_block = false;
  for (size_t i = found + 1; i < block_end; ++i) has_block = has_block || lines[i].content;
  if (block_end < scope_end && lines[block_end].indent == lines[found].indent &&
      text[lines[block_end].begin + static_cast<size_t>(lines[block_end].indent)] == '-') {
    has_block = true;  // A list at the key's own indent is its value.
  }
  return block_end;
}

/// The leaf's value rewritten, between its spacing and its comment; the rest as it is.
std::string ReplaceValue(std::string_view text, const KeyLine& entry, const std::string& path,
                         size_t found, bool has_block, std::string_view value_json) {
  const std::string& v = entry.value;
  const char first = v.empty() ? '\0' : v[0];
  if (v.empty() && has_block) {
    Fail(path, found, "a mapping or list, not a value: give the key of a value in it");
  }
  if ((first == '[' || first == '{') && !FlowCloses(v)) {
    Fail(path, found, "a flow collection over several lines is not rewritten");
  }
  // A plain scalar folded over the lines below it, or a quoted one not closed on its line.
  if ((has_block && !v.empty()) ||
      ((first == '"' || first == '\'') && QuotedEnd(v, 0) == std::string_view::npos)) {
    Fail(path, found, "a value over several lines is not rewritten");
  }
  std::string out(text);
  size_t start = entry.value_begin;
  while (start < entry.value_end && (text[start] == ' ' || text[start] == '\t')) ++start;
  const std::string value = YamlValue(value_json);
  if (start == entry.value_begin) {
    out.replace(start, entry.value_end - start, " " + value);
  } else {
    out.replace(start, entry.value_end - start, value);
  }
  return out;
}

}  // namespace

std::string SetYamlValue(std::string_view text, std::string_view dotted_key,
                         std::string_view value_json) {
  std::vector<Line> lines = SplitLines(text);
  MarkBlockScalars(text, lines);
  const std::vector<std::string> keys = SplitDottedKey(dotted_key);
  Scope scope{DocumentStart(text, lines, dotted_key), lines.size(), -1, std::nullopt};
  for (size_t depth = 0; depth < keys.size(); ++depth) {
    const std::string& key = keys[depth];
    const std::string path = fmt::format(
        "{}", fmt::join(keys.begin(), keys.begin() + static_cast<long>(depth) + 1, "."));
    const KeySearch search = FindKey(text, lines, scope, key, path, depth == 0);
    const bool leaf = depth + 1 == keys.size();
    if (!search.found) {
      if (!leaf) {
        throw LaunchError(fmt::format("{}: no such key in the file ({} is not there)",
                                      OneLine(dotted_key), OneLine(path)));
      }
      return AddKey(text, lines, scope, search, key, value_json);
    }
    const size_t found = *search.found;
    const KeyLine entry = *ParseKeyLine(text, lines[found]);
    const char first = entry.value.empty() ? '\0' : entry.value[0];
    bool has_block = false;
    const size_t block_end = KeyBlockEnd(text, lines, found, scope.end, has_block);
    if (first == '&' || first == '*' || first == '!') {
      Fail(path, found, "an anchor, alias or tag is not rewritten (the file would change meaning)");
    }
    if (first == '|' || first == '>') Fail(path, found, "a block scalar is not rewritten");
    if (leaf) return ReplaceValue(text, entry, path, found, has_block, value_json);
    if (first == '[' || first == '{') {
      Fail(path, found, "a flow collection on the way to a key is not rewritten");
    }
    if (!entry.value.empty()) Fail(path, found, "a value, not a mapping: no key under it");
    scope = Scope{found + 1, block_end, lines[found].indent, found};
  }
  return std::string(text);  // Unreachable: the leaf returns.
}

}  // namespace pdlaunch
