#pragma once

#include <string>
#include <string_view>

namespace pdlaunch {

/// The shells `launch` ships a completion script for.
enum class Shell { kBash, kZsh };

/// Parses "bash" or "zsh"; throws UsageError naming anything else.
Shell ParseShell(std::string_view name);

/// The completion script for `shell`, generated from the parser's own flag table (ListFlags), so
/// it never lists a flag the parser does not know or misses one it does. What it completes:
/// * every long option (and -h), `--opt VALUE` and `--opt=VALUE` alike; options that are refused
///   as "not supported yet" are not offered;
/// * the values of options with a closed set (--run_mode, --backend, --log_level, true/false of
///   the bool options), directories for --log_dir, file names for --report;
/// * the training script as a file name and, after it, its arguments as file names: from the
///   script on, every word belongs to the script (argparse's REMAINDER), options included.
/// Bash: a function `_launch` registered with `complete` (for bash-completion's
/// completions/launch). Zsh: an `#compdef launch` function using `_arguments` (for an fpath
/// directory such as vendor-completions/_launch).
std::string CompletionScript(Shell shell);

}  // namespace pdlaunch
