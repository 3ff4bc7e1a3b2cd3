// The argparse layer in front of CLI11 on its own: where the launcher's options end, the
// canonical tokens CLI11 is handed, and the lines argparse prints for what it refuses.
#include "cli/argparse_layer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pdlaunch/base/errors.h"

namespace pdlaunch::argparse {
namespace {

using Args = std::vector<std::string>;

std::string ErrorOf(const Args& args) {
  try {
    Split(args);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

TEST(ArgparseLayerTest, PrefixesBecomeFullNamesWithTheirValues) {
  const LauncherArgs split = Split({"--nn", "2", "--log_d=x", "--gr", "3", "t.py", "--nn", "5"});
  EXPECT_EQ(split.tokens, (Args{"--nnodes=2", "--log_dir=x", "--grace=3"}));
  EXPECT_EQ(split.script, 5u);
  EXPECT_FALSE(split.exit_request);
}

TEST(ArgparseLayerTest, AnEmptyValueIsItsOwnToken) {
  // CLI11 reads "--opt=" as an option without a value and would take the next token.
  EXPECT_EQ(Split({"--log_dir=", "t.py"}).tokens, (Args{"--log_dir", ""}));
  EXPECT_EQ(Split({"--job_id", "", "t.py"}).tokens, (Args{"--job_id", ""}));
}

TEST(ArgparseLayerTest, OptionalBoolTakesOnlyABoolWord) {
  EXPECT_EQ(Split({"--force", "t.py"}).tokens, (Args{"--force=true"}));
  EXPECT_EQ(Split({"--force", "False", "t.py"}).tokens, (Args{"--force=False"}));
  EXPECT_EQ(Split({"--force=no", "t.py"}).tokens, (Args{"--force=no"}));
  EXPECT_EQ(Split({"--force", "t.py"}).script, 1u);
}

TEST(ArgparseLayerTest, TheScriptStartsAtAPositionalADashDashOrDashM) {
  EXPECT_EQ(Split({"--dry_run", "--", "--not-an-option"}).script, 2u);
  EXPECT_EQ(Split({"--dry_run", "-m", "pkg.mod"}).script, 1u);
  EXPECT_EQ(Split({"t.py", "--dry_run"}).tokens, Args{});
  EXPECT_EQ(Split({}).script, 0u);
}

TEST(ArgparseLayerTest, NegativeNumbersAreValuesNotOptions) {
  EXPECT_EQ(Split({"--rank", "-1", "t.py"}).tokens, (Args{"--rank=-1"}));
  EXPECT_FALSE(LooksLikeOption("-1"));
  EXPECT_FALSE(LooksLikeOption("-.5"));
  EXPECT_FALSE(LooksLikeOption("-"));
  EXPECT_TRUE(LooksLikeOption("-1."));
  EXPECT_TRUE(LooksLikeOption("-x"));
}

TEST(ArgparseLayerTest, HelpAndVersionActWhenRead) {
  const LauncherArgs help = Split({"--nproc_per_node=x", "-h", "--bogus"});
  EXPECT_TRUE(help.exit_request);
  EXPECT_EQ(help.tokens, Args{"-h"});
  EXPECT_EQ(Split({"--vers"}).tokens, Args{"--version"});
}

TEST(ArgparseLayerTest, RefusalsUseArgparsesLines) {
  EXPECT_EQ(ErrorOf({"--log_dir", "--nnodes", "2", "t.py"}),
            "argument --log_dir: expected one argument");
  EXPECT_EQ(ErrorOf({"--log_dir"}), "argument --log_dir: expected one argument");
  EXPECT_EQ(ErrorOf({"--ma", "x", "t.py"}),
            "ambiguous option: --ma could match --master, --max_restart");
  EXPECT_EQ(ErrorOf({"--dry_run=1", "t.py"}), "argument --dry_run: ignored explicit argument '1'");
  EXPECT_EQ(ErrorOf({"--help=1"}), "argument -h/--help: ignored explicit argument '1'");
  EXPECT_EQ(ErrorOf({"--nproc-per-node", "2", "t.py"}),
            "unrecognized arguments: --nproc-per-node (did you mean --nproc_per_node?)");
  EXPECT_EQ(ErrorOf({"-x", "t.py"}), "unrecognized arguments: -x");
}

TEST(ArgparseLayerTest, ReadOptionNamesTheFlagOfAnAlias) {
  std::vector<std::string> tokens;
  const flags::FlagSpec* flag = nullptr;
  const Args args = {"--selected_g", "0,1", "t.py"};
  EXPECT_EQ(ReadOption(args, 0, tokens, flag), 2u);
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(flag->dest, "gpus");
  EXPECT_EQ(tokens, Args{"--selected_gpus=0,1"});
}

}  // namespace
}  // namespace pdlaunch::argparse
