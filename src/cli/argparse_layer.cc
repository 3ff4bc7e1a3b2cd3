#include "cli/argparse_layer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pdlaunch/base/errors.h"

namespace pdlaunch::argparse {

namespace {

using flags::FlagSpec;
using flags::Kind;

// Spellings of other launchers (torchrun's dashes, its renamed flags) that mean one of ours.
std::string_view KnownSpelling(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 13> kOthers = {{
      {"max_restarts", "--max_restart"},
      {"node_rank", "--rank"},
      {"master_addr", "--master"},
      {"master_port", "--master"},
      {"rdzv_endpoint", "--master"},
      {"rdzv_id", "--job_id"},
      {"nproc", "--nproc_per_node"},
      {"local_ranks_filter", "--echo"},
      {"module", "-m"},
      {"tee", ""},
      {"redirects", ""},
      {"standalone", ""},
      {"monitor_interval", ""},
  }};
  for (const auto& [other, ours] : kOthers) {
    if (name == other) return ours.empty() ? std::string_view("(none)") : ours;
  }
  return {};
}

// " (did you mean --nproc_per_node?)" for --nproc-per-node or torchrun's --max-restarts.
std::string Hint(std::string_view token) {
  std::string name(token.substr(
      2, token.find('=') == std::string_view::npos ? std::string_view::npos : token.find('=') - 2));
  std::replace(name.begin(), name.end(), '-', '_');
  if (const FlagSpec* flag = flags::Find("--" + name)) {
    return fmt::format(" (did you mean {}?)", flag->name);
  }
  const std::string_view ours = KnownSpelling(name);
  if (ours == "(none)") return " (a torchrun flag; pdlaunch writes each rank's output to log/)";
  if (!ours.empty()) return fmt::format(" (did you mean {}?)", ours);
  return "";
}

[[noreturn]] void ThrowUnrecognized(std::string_view token) {
  const std::string hint = token.starts_with("--") && token.size() > 2 ? Hint(token) : "";
  throw UsageError(fmt::format("unrecognized arguments: {}{}", token, hint));
}

bool InParser(std::span<const std::string_view> parser, std::string_view name) {
  return std::find(parser.begin(), parser.end(), name) != parser.end();
}

// The one flag of `names` that `prefix` starts, nullptr for none; more than one is argparse's
// error, naming them in `names`' order.
const FlagSpec* UniquePrefixIn(std::span<const std::string_view> names, std::string_view prefix) {
  std::vector<std::string_view> matches;
  for (std::string_view name : names) {
    if (name.starts_with(prefix)) matches.push_back(name);
  }
  if (matches.size() > 1) {
    throw UsageError(
        fmt::format("ambiguous option: {} could match {}", prefix, fmt::join(matches, ", ")));
  }
  return matches.empty() ? nullptr : flags::Find(matches.front());
}

void RequireNoValue(const FlagSpec& flag, const std::optional<std::string>& value) {
  if (!value) return;
  const std::string_view names = flag.kind == Kind::kHelp ? "-h/--help" : flag.name;
  throw UsageError(fmt::format("argument {}: ignored explicit argument '{}'", names, *value));
}

// The value of a kValue option: after '=', or the next token unless it looks like an option.
std::string TakeValue(const FlagSpec& flag, const std::optional<std::string>& explicit_value,
                      const std::vector<std::string>& args, size_t& index) {
  if (explicit_value) return *explicit_value;
  if (index + 1 >= args.size() || args[index + 1] == "--" || LooksLikeOption(args[index + 1])) {
    throw UsageError(fmt::format("argument {}: expected one argument", flag.name));
  }
  return args[++index];
}

std::string TakeOptionalBool(const std::optional<std::string>& explicit_value,
                             const std::vector<std::string>& args, size_t& index) {
  if (explicit_value) return *explicit_value;
  if (index + 1 < args.size() && flags::IsBoolLiteral(args[index + 1])) return args[++index];
  return "true";
}

void PushValue(const FlagSpec& flag, std::string value, std::vector<std::string>& tokens) {
  if (value.empty()) {
    tokens.emplace_back(flag.name);  // CLI11 reads `--opt=` as no value; the next token is one.
    tokens.emplace_back();
  } else {
    tokens.push_back(fmt::format("{}={}", flag.name, value));
  }
}

}  // namespace

// argparse's abbreviation rule, as `python -m paddle.distributed.launch` applies it: an exact
// name wins; else today's parser resolves the prefix (parse_known_args: one match is that flag,
// several are an error there and then), and a prefix it does not know goes, with the whole
// command line, to the legacy parser, which resolves it the same way. What neither parser knows
// is resolved the same way among pdlaunch's own additions. So `--ma` is ambiguous (--master,
// --max_restart), as in Paddle, and `--gr` is --grace.
const FlagSpec& Resolve(std::string_view name, std::string_view token) {
  if (const FlagSpec* exact = flags::Find(name)) return *exact;
  if (name.size() > 2) {
    std::vector<std::string_view> own;
    for (const FlagSpec& flag : flags::All()) {
      if (!InParser(flags::TodaysParser(), flag.name) &&
          !InParser(flags::LegacyParser(), flag.name)) {
        own.push_back(flag.name);
      }
    }
    for (std::span<const std::string_view> names :
         {flags::TodaysParser(), flags::LegacyParser(), std::span<const std::string_view>(own)}) {
      if (const FlagSpec* flag = UniquePrefixIn(names, name)) return *flag;
    }
  }
  ThrowUnrecognized(token);
}

// argparse's test for a positional that starts with '-': "-1", "-.5", "-2.5".
bool LooksLikeOption(std::string_view token) {
  if (token.size() < 2 || token.front() != '-') return false;
  const std::string_view rest = token.substr(1);
  const auto all_digits = [](std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return !all_digits(rest);
  return !(all_digits(rest.substr(0, dot)) && dot + 1 < rest.size() &&
           all_digits(rest.substr(dot + 1)));
}

size_t ReadOption(const std::vector<std::string>& args, size_t index,
                  std::vector<std::string>& tokens, const FlagSpec*& flag) {
  const std::string& token = args[index];
  if (token == "-h") {
    flag = flags::Find("--help");
    tokens.push_back(token);
    return index + 1;
  }
  if (!token.starts_with("--")) ThrowUnrecognized(token);
  const size_t equals = token.find('=');
  std::optional<std::string> explicit_value;
  if (equals != std::string::npos) explicit_value = token.substr(equals + 1);
  flag = &Resolve(std::string_view(token).substr(0, equals), token);
  switch (flag->kind) {
    case Kind::kHelp:
    case Kind::kVersion:
    case Kind::kFlag:
      RequireNoValue(*flag, explicit_value);
      tokens.emplace_back(flag->name);
      break;
    case Kind::kOptionalBool:
      PushValue(*flag, TakeOptionalBool(explicit_value, args, index), tokens);
      break;
    case Kind::kValue:
      PushValue(*flag, TakeValue(*flag, explicit_value, args, index), tokens);
      break;
  }
  return index + 1;
}

LauncherArgs Split(const std::vector<std::string>& args) {
  LauncherArgs out;
  size_t index = 0;
  while (index < args.size()) {
    if (args[index] == "--") {
      ++index;
      break;
    }
    // `-m module`, as Python's (and torchrun's): the training command starts here.
    if (!LooksLikeOption(args[index]) || args[index] == "-m") break;
    std::vector<std::string> tokens;
    const FlagSpec* flag = nullptr;
    index = ReadOption(args, index, tokens, flag);
    if (flag->kind == Kind::kHelp || flag->kind == Kind::kVersion) {
      out.tokens = std::move(tokens);
      out.exit_request = true;
      break;
    }
    out.tokens.insert(out.tokens.end(), std::make_move_iterator(tokens.begin()),
                      std::make_move_iterator(tokens.end()));
  }
  out.script = index;
  return out;
}

}  // namespace pdlaunch::argparse
