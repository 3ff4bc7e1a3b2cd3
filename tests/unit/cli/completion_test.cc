#include "pdlaunch/cli/completion.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/cli/cli.h"

namespace pdlaunch {
namespace {

// Every "--name" token of a text.
std::set<std::string> LongOptionsIn(const std::string& text) {
  std::set<std::string> names;
  const std::regex option("--[a-z][a-z0-9_]*");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), option);
       it != std::sregex_iterator(); ++it) {
    names.insert(it->str());
  }
  return names;
}

// The options --help shows in its groups (an entry starts at column 2), refused ones included.
std::set<std::string> HelpEntries() {
  std::set<std::string> names;
  const std::regex entry("  (-h, )?(--[a-z][a-z0-9_]*).*");
  std::istringstream help(HelpText());
  std::smatch match;
  for (std::string line; std::getline(help, line);) {
    if (std::regex_match(line, match, entry)) names.insert(match[2].str());
  }
  return names;
}

TEST(CompletionTest, ListFlagsIsWhatHelpShows) {
  std::set<std::string> listed;
  for (const FlagInfo& flag : ListFlags()) listed.insert(std::string(flag.name));
  EXPECT_EQ(listed, HelpEntries());
  EXPECT_GT(listed.size(), 50u);
}

TEST(CompletionTest, EverySupportedFlagIsOfferedAndNoRefusedOne) {
  for (const Shell shell : {Shell::kBash, Shell::kZsh}) {
    const std::set<std::string> offered = LongOptionsIn(CompletionScript(shell));
    for (const FlagInfo& flag : ListFlags()) {
      EXPECT_EQ(offered.count(std::string(flag.name)), flag.supported ? 1u : 0u)
          << flag.name << (shell == Shell::kBash ? " (bash)" : " (zsh)");
    }
  }
}

TEST(CompletionTest, ClosedValueSetsComeFromTheParser) {
  const std::string bash = CompletionScript(Shell::kBash);
  EXPECT_NE(bash.find("--run_mode) COMPREPLY=($(compgen -W 'collective ps ps-heter rpc'"),
            std::string::npos);
  EXPECT_NE(bash.find("--log_level) COMPREPLY=($(compgen -W 'DEBUG INFO WARNING ERROR CRITICAL'"),
            std::string::npos);
  EXPECT_NE(bash.find("--backend) COMPREPLY=($(compgen -W 'auto gloo nccl bkcl heter xccl'"),
            std::string::npos);
  EXPECT_NE(bash.find("--log_dir) compopt -o filenames; COMPREPLY=($(compgen -d"),
            std::string::npos);
  EXPECT_NE(bash.find("--force) COMPREPLY=($(compgen -W 'true false'"), std::string::npos);
  const std::string zsh = CompletionScript(Shell::kZsh);
  EXPECT_NE(zsh.find("'--run_mode=[collective (default), ps, ps-heter or rpc (rpc needs "
                     "--master)]:run_mode:(collective ps ps-heter rpc)'"),
            std::string::npos)
      << zsh;
  EXPECT_NE(zsh.find(":log_dir:_directories'"), std::string::npos);
  EXPECT_NE(zsh.find("'--force=-["), std::string::npos);  // --force, --force=BOOL
}

TEST(CompletionTest, OnlyValuedFlagsTakeTheNextWord) {
  const std::string bash = CompletionScript(Shell::kBash);
  const size_t start = bash.find("_launch_valued='");
  ASSERT_NE(start, std::string::npos);
  const std::string valued = bash.substr(start, bash.find('\n', start) - start);
  EXPECT_NE(valued.find(" --nproc_per_node "), std::string::npos);
  EXPECT_NE(valued.find(" --master "), std::string::npos);
  EXPECT_EQ(valued.find(" --dry_run "), std::string::npos);  // a plain flag
  EXPECT_EQ(valued.find(" --force "), std::string::npos);    // its value is optional
}

TEST(CompletionTest, ZshDescriptionsAreQuoted) {
  // Help texts with ':' (Default: log), brackets and quotes must not break _arguments' specs:
  // each spec line is one single-quoted word (quotes balanced), brackets escaped inside.
  const std::string zsh = CompletionScript(Shell::kZsh);
  size_t line_start = 0;
  while (line_start < zsh.size()) {
    const size_t end = zsh.find('\n', line_start);
    const std::string line = zsh.substr(line_start, end - line_start);
    line_start = end == std::string::npos ? zsh.size() : end + 1;
    if (line.rfind("  '", 0) != 0 && line.rfind("  '(", 0) != 0) continue;
    size_t quotes = 0;  // '\'' is a quote inside the word: close, a literal quote, reopen
    for (size_t i = 0; i < line.size(); ++i) {
      if (line.compare(i, 4, "'\\''") == 0) {
        i += 3;
      } else {
        quotes += line[i] == '\'';
      }
    }
    EXPECT_EQ(quotes % 2, 0u) << line;
  }
  EXPECT_NE(zsh.find("Directory of the log files (workerlog.N, ...)"), std::string::npos);
  EXPECT_EQ(zsh.find("Default: log]"), std::string::npos);  // only the first sentence
}

TEST(CompletionTest, UnknownShellIsAUsageError) {
  EXPECT_EQ(ParseShell("bash"), Shell::kBash);
  EXPECT_EQ(ParseShell("zsh"), Shell::kZsh);
  EXPECT_THROW(ParseShell("fish"), UsageError);
}

}  // namespace
}  // namespace pdlaunch
