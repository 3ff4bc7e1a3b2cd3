#pragma once

#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/options/options.h"

namespace pdlaunch {

/// The outcome of parsing argv: either options to run with, or text to print before exiting 0
/// (`-h/--help`, `--version`).
struct CommandLine {
  LaunchOptions options;
  std::optional<std::string> exit_text;  ///< Set for --help and --version; print to stdout, exit 0.
};

/// Parses the launcher's arguments (argv without the program name) with argparse semantics, then
/// refuses the modes not implemented yet (RejectUnsupportedOptions). CLI11 reads the launcher's
/// options; a layer in front of it (src/cli/argparse_layer.h) applies the argparse rules CLI11
/// lacks (docs/design.md, "The command line"):
/// * Launcher options come first; the first positional token (or the token after a `--` that
///   ends the launcher options) is the training script; every later token goes verbatim to
///   `training_script_args`, options and `--` included.
/// * `--opt value` and `--opt=value`; a repeated option or an alias (--selected_gpus,
///   --selected_xpus) overrides the earlier one.
/// * A unique prefix of a long option is that option; an exact name always wins. A prefix is
///   resolved among today's Paddle flags, then the legacy ones, then pdlaunch's own (`--ma` is
///   ambiguous, --master or --max_restart, as in Paddle; `--gr` is --grace).
/// * --force takes an optional value: `--force`, `--force=BOOL` or `--force BOOL`, BOOL one of
///   true/false/1/0 in any case (Paddle's type=bool read "False" as true).
/// * `-h/--help` and `--version` before the script stop parsing and return `exit_text`.
/// * Values are checked as they are read: the first bad one in argv order is named.
/// Never reads the environment. Every destination seen is recorded in `options.given`.
/// Throws UsageError (exit 2) with argparse's wording, naming the bad token: "unrecognized
/// arguments: --foo", "ambiguous option: --server could match --servers, --server_num",
/// "argument --log_dir: expected one argument", "argument --nproc_per_node: invalid int value:
/// 'x'", "the following arguments are required: training_script, training_script_args", a bad
/// --run_mode choice, a --backend outside nccl/gloo/bkcl/auto (Paddle's message), and
/// "<flag> is not supported yet (<mode>)".
CommandLine ParseCommandLine(const std::vector<std::string>& args);

/// ParseCommandLine without RejectUnsupportedOptions: every flag is bound and checked for its
/// type and choices, whatever the mode.
CommandLine ParseArguments(const std::vector<std::string>& args);

/// `args` (as ParseArguments takes them, already valid) without the launcher options whose
/// destination is one of `dests`, however they were spelled (alias, unique prefix, `=value` or
/// the value as the next token). The training script and its arguments are kept as they are.
std::vector<std::string> WithoutOptions(const std::vector<std::string>& args,
                                        std::initializer_list<std::string_view> dests);

/// The UsageError of a command line without a training script.
inline constexpr std::string_view kMissingScript =
    "the following arguments are required: training_script (see launch --help)";

/// The training script that runs Paddle's own distributed check (Paddle 3's test plugin): the
/// command line is today's interface with --nnodes at least 2, the program Paddle's
/// paddle/distributed/launch/plugins/test.py (docs/cli.md, "run_check").
inline constexpr std::string_view kRunCheck = "run_check";

/// Applies the environment twins (PADDLE_NNODES → --nnodes, ...;
/// docs/cli.md lists them) to every option not given on the command line: command line >
/// environment > default. An empty variable counts as unset. Values are checked as the flag's
/// are; a bad one is a UsageError naming the variable. Destinations set are added to
/// `options.given` and `options.from_env`. In a nested launch (kNestedMarker set) the variables
/// the parent launcher sets for its ranks are ignored; returns one note per variable ignored.
std::vector<std::string> ApplyEnvironmentTwins(LaunchOptions& options, const EnvMap& env);

/// The text of --help: argparse-like usage, description and option groups (Paddle's help
/// strings, pdlaunch's own options in their own group). Ends with '\n'.
std::string HelpText();

/// The usage lines alone ("usage: launch [-h] ... training_script ..."), ending with '\n'. Print
/// them before "launch: error: <message>" on a UsageError, as argparse does.
std::string UsageText();

/// Refuses the options of modes pdlaunch does not implement yet, with a one-line UsageError naming
/// the first offending flag (declaration order), e.g. "--server_num is not supported yet
/// (parameter-server mode)": every parameter-server flag, every elastic flag except --host,
/// --xpus/--selected_xpus, --run_mode=ps/ps-heter and --backend=bkcl. A flag counts when its
/// destination is in `options.given`, whatever its value. ParseCommandLine calls it last; it is
/// the one place to relax when a mode is added.
void RejectUnsupportedOptions(const LaunchOptions& options);

/// The values --run_mode, --backend and --log_level accept (--log_level in any case; WARN and
/// NOTSET are accepted too, as Python's logging does, but not offered).
inline constexpr std::array<std::string_view, 4> kRunModes = {"collective", "ps", "ps-heter",
                                                              "rpc"};
inline constexpr std::array<std::string_view, 6> kBackends = {"auto", "gloo",  "nccl",
                                                              "bkcl", "heter", "xccl"};
inline constexpr std::array<std::string_view, 5> kLogLevels = {"DEBUG", "INFO", "WARNING", "ERROR",
                                                               "CRITICAL"};

/// One option as --help shows it, for generated documents (the shells' completion scripts).
struct FlagInfo {
  enum class Value {
    kNone,          ///< --opt
    kRequired,      ///< --opt VALUE, --opt=VALUE
    kOptionalBool,  ///< --opt, --opt=BOOL, --opt BOOL
  };
  std::string_view name;  ///< "--log_dir"; "--help" also has "-h".
  std::string_view dest;  ///< Shared by aliases ("gpus" for --gpus, --devices, --npus).
  Value value = Value::kNone;
  std::string_view help;  ///< Its --help text, without the environment twin.
  std::string_view env;   ///< The environment twin, or empty.
  bool supported = true;  ///< false: refused as "not supported yet" when given.
  /// The whole set of values offered, when there is one (--run_mode's modes, true/false for a
  /// bool); empty for free text.
  std::vector<std::string_view> choices;
};

/// Every option the parser knows, in --help's order.
std::vector<FlagInfo> ListFlags();

/// The long option `prefix` ("--nn") stands for ("--nnodes"), by argparse's abbreviation rule
/// as `python -m paddle.distributed.launch` applies it (docs/cli.md, "Command line"). Throws
/// UsageError for an ambiguous or unknown one, with the line the launcher prints.
std::string ResolveOptionName(std::string_view prefix);

}  // namespace pdlaunch
