#pragma once

// What Python's argparse does with Paddle's command line and CLI11 does not, as a layer in front
// of CLI11 (cli.cc). It reads argv only as far as the training script and hands CLI11 one
// canonical token per option; CLI11 then reads those tokens against its declarations, runs the
// checks and stores, keeps the last value of a repeated flag, and answers --help and --version.
//
// The layer owns exactly these argparse rules (docs/cli.md, "Command line"):
// * where the launcher's options end: the first token that is not an option or an option's value
//   is the training script; `--` ends the options; `-m` starts the command (`-m module`);
// * a unique prefix of a long option is that option, resolved per Paddle parser (today's, then
//   the legacy one, then pdlaunch's own flags), with argparse's "ambiguous option" line;
// * a token that looks like an option ("-x", "--y", but not "-1" or "-.5") is never a value:
//   "argument --log_dir: expected one argument";
// * --force-style flags take an optional bool word: `--force`, `--force=BOOL`, `--force BOOL`;
// * a flag without a value given one (`--dry_run=x`) is "ignored explicit argument 'x'";
// * -h/--help and --version act when read: the tokens before them are not checked;
// * an unknown flag is "unrecognized arguments: --foo", with a hint for torchrun's spellings.
//
// CLI11 2.1.2 resolves no prefixes, takes an option-looking token as a value and reads an empty
// `--opt=` as "no value here", so the layer hands it `--name=value`, or `--name` and "" for an
// empty value, with `name` the flag's full name as declared.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cli/flag_table.h"

namespace pdlaunch::argparse {

struct LauncherArgs {
  std::vector<std::string> tokens;  // The launcher's options, canonical, in argv order.
  size_t script = 0;                // Index of the training script in argv; argv.size(): none.
  bool exit_request = false;        // tokens is one -h/--help/--version token.
};

LauncherArgs Split(const std::vector<std::string>& args);

// The option at args[index] as canonical tokens appended to `tokens`; returns the index of the
// token after it (and its value) and sets `flag` to the flag it names.
size_t ReadOption(const std::vector<std::string>& args, size_t index,
                  std::vector<std::string>& tokens, const flags::FlagSpec*& flag);

// The flag `name` ("--nn") stands for; `token` is what was typed, for the error line.
const flags::FlagSpec& Resolve(std::string_view name, std::string_view token);

// argparse's test: a token that starts with '-' and is not a negative number.
bool LooksLikeOption(std::string_view token);

}  // namespace pdlaunch::argparse
