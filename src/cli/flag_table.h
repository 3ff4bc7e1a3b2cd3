#pragma once

// The launcher's flags as data: one row per name (aliases included), in --help's order within
// each group. cli.cc declares them to CLI11 from this table; the argparse layer
// (argparse_layer.h) resolves prefixes against it; the completion scripts and ListFlags read it.

#include <span>
#include <string>
#include <string_view>

#include "pdlaunch/options/options.h"

namespace pdlaunch::flags {

enum class Tier {
  kLegacy,  // paddle.distributed.fleet.launch
  kNew,     // paddle.distributed.launch since Paddle 2.3
  kOwn,     // pdlaunch's additions
};

enum class Kind {
  kValue,         // --opt VALUE, --opt=VALUE
  kFlag,          // --opt
  kOptionalBool,  // --opt, --opt=BOOL, --opt BOOL (BOOL one of true/false/1/0, yes/no, on/off)
  kHelp,
  kVersion,
};

// Converts, checks and stores one value; `flag` is the name to put in a message: the flag as
// typed ("--gloo_port") or the environment twin's variable ("PADDLE_NNODES").
using Store = void (*)(LaunchOptions& options, std::string_view flag, const std::string& value);

struct FlagSpec {
  std::string_view name;  // Long name as typed, "--gpus".
  std::string_view dest;  // argparse destination, shared by aliases.
  Kind kind;
  Tier tier;                  // Which interface declares it (prefixes resolve per interface).
  Store store;                // nullptr for --help and --version.
  std::string_view group;     // Help section.
  std::string_view help;      // Empty: no help text.
  std::string_view refused;   // Non-empty: not supported yet; the reason in parentheses.
  std::string_view env = {};  // Environment twin; empty: none.
};

// Every flag: the legacy launcher's in its declaration order, today's launcher's, then pdlaunch's.
std::span<const FlagSpec> All();

// The flag named exactly `name` ("--log_dir"), or nullptr.
const FlagSpec* Find(std::string_view name);

// Whether `flag` is its destination's primary name (--gpus, not --selected_gpus).
bool IsPrimary(const FlagSpec& flag);

// The long options of Paddle's two argparse parsers that this launcher takes, each in its
// parser's declaration order (the order argparse names them in an ambiguity error).
std::span<const std::string_view> TodaysParser();
std::span<const std::string_view> LegacyParser();

struct Group {
  std::string_view name;
  std::string_view description;
};

// The help sections, in --help's order.
std::span<const Group> Groups();

// The words of Python's strtobool (the bool flags' values), in any case.
bool IsBoolLiteral(std::string_view text);
bool ToBool(std::string_view flag, const std::string& value);

// Whether argparse keeps the destination's value as a string (type=str) that pdlaunch checks
// only when it binds the value in force: an earlier occurrence is replaced unchecked.
bool IsStringDest(std::string_view dest);

}  // namespace pdlaunch::flags
