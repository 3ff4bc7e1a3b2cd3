#include "pdlaunch/cli/cli.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/version.h"
#include "pdlaunch/plan/master_config.h"
#include "support/scoped_env.h"

namespace pdlaunch {
namespace {

using Args = std::vector<std::string>;

// The message of the UsageError that ParseCommandLine throws for `args` ("" if none).
std::string ErrorOf(const Args& args) {
  try {
    ParseCommandLine(args);
  } catch (const UsageError& error) {
    EXPECT_EQ(error.exit_code(), 2);
    return error.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

std::string ArgumentsErrorOf(const Args& args) {
  try {
    ParseArguments(args);
  } catch (const UsageError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

LaunchOptions Options(const Args& args) {
  CommandLine command_line = ParseCommandLine(args);
  EXPECT_FALSE(command_line.exit_text.has_value());
  return command_line.options;
}

TEST(CliTest, DefaultsMatchPaddle) {
  const CommandLine command_line = ParseCommandLine({"train.py"});
  EXPECT_FALSE(command_line.exit_text.has_value());
  const LaunchOptions& o = command_line.options;
  EXPECT_EQ(o.log_dir, "log");
  EXPECT_EQ(o.backend, "auto");
  EXPECT_EQ(o.nproc_per_node, std::nullopt);
  EXPECT_EQ(o.run_mode, std::nullopt);
  EXPECT_EQ(o.gpus, std::nullopt);
  EXPECT_EQ(o.xpus, std::nullopt);
  EXPECT_EQ(o.ips, "127.0.0.1");
  EXPECT_EQ(o.servers, "");
  EXPECT_EQ(o.server_num, std::nullopt);
  EXPECT_EQ(o.scale, 0);
  EXPECT_EQ(o.host, std::nullopt);
  EXPECT_FALSE(o.force);
  EXPECT_EQ(o.max_restart, std::nullopt);
  EXPECT_EQ(o.start_port, std::nullopt);
  EXPECT_FALSE(o.log_overwrite);
  EXPECT_EQ(o.grace, 5.0);
  EXPECT_EQ(o.training_script, "train.py");
  EXPECT_TRUE(o.training_script_args.empty());
  EXPECT_TRUE(o.given.empty());
}

TEST(CliTest, AcceptsSpaceSeparatedValues) {
  const LaunchOptions o =
      Options({"--log_dir", "out", "--nproc_per_node", "2", "--ips", "10.0.0.1", "t.py"});
  EXPECT_EQ(o.log_dir, "out");
  EXPECT_EQ(o.nproc_per_node, 2);
  EXPECT_EQ(o.ips, "10.0.0.1");
  EXPECT_EQ(o.given, (std::set<std::string>{"ips", "log_dir", "nproc_per_node"}));
}

TEST(CliTest, AcceptsEqualsValues) {
  const LaunchOptions o = Options({"--log_dir=out", "--nproc_per_node=2", "--gpus=0,1", "t.py"});
  EXPECT_EQ(o.log_dir, "out");
  EXPECT_EQ(o.nproc_per_node, 2);
  EXPECT_EQ(o.gpus, "0,1");
}

TEST(CliTest, EqualsValueMayBeEmpty) {
  const LaunchOptions o = Options({"--servers=", "--ips=", "t.py"});
  EXPECT_EQ(o.servers, "");
  EXPECT_EQ(o.ips, "");
  EXPECT_TRUE(o.WasGiven("ips"));
}

TEST(CliTest, JobIdMustBeAName) {
  EXPECT_EQ(Options({"--job_id", "job-1.a_b", "t.py"}).job_id, "job-1.a_b");
  EXPECT_EQ(Options({"--job_id", std::string(244, 'j'), "t.py"}).job_id, std::string(244, 'j'));
  EXPECT_EQ(ErrorOf({"--job_id", std::string(245, 'j'), "t.py"}),
            "argument --job_id: the job id is 245 characters long; at most 244 fit in the pod "
            "log's file name");
  for (const char* bad : {"", ".", "..", "../x", "a/b", "/abs", "a?b", "a#b", "a b", "50%"}) {
    EXPECT_EQ(ErrorOf({fmt::format("--job_id={}", bad), "t.py"}),
              fmt::format("argument --job_id: invalid job id value: '{}' (a name: letters, "
                          "digits, '-', '_' and '.', not '.' or '..')",
                          bad));
  }
}

TEST(CliTest, EqualsValueKeepsDashesAndEqualsSigns) {
  EXPECT_EQ(Options({"--log_dir=--weird=dir", "t.py"}).log_dir, "--weird=dir");
}

TEST(CliTest, SpaceValueMayBeNegativeNumber) {
  EXPECT_EQ(Options({"--nproc_per_node", "-1", "t.py"}).nproc_per_node, -1);
}

TEST(CliTest, MissingValueIsUsageError) {
  EXPECT_EQ(ErrorOf({"--log_dir"}), "argument --log_dir: expected one argument");
  EXPECT_EQ(ErrorOf({"--log_dir", "--gpus", "0", "t.py"}),
            "argument --log_dir: expected one argument");
  EXPECT_EQ(ErrorOf({"--gpus", "--", "t.py"}), "argument --gpus: expected one argument");
}

TEST(CliTest, SelectedGpusIsAliasOfGpus) {
  const LaunchOptions o = Options({"--selected_gpus", "2,3", "t.py"});
  EXPECT_EQ(o.gpus, "2,3");
  EXPECT_EQ(o.given, (std::set<std::string>{"gpus"}));
}

TEST(CliTest, LastOfGpusAndSelectedGpusWins) {
  EXPECT_EQ(Options({"--gpus", "0", "--selected_gpus", "1", "t.py"}).gpus, "1");
  EXPECT_EQ(Options({"--selected_gpus", "1", "--gpus=0", "t.py"}).gpus, "0");
}

TEST(CliTest, RepeatedOptionLastOneWins) {
  EXPECT_EQ(Options({"--log_dir", "a", "--log_dir", "b", "t.py"}).log_dir, "b");
}

// argparse converts every occurrence: a bad value that a later one replaces is still an error.
TEST(CliTest, EveryOccurrenceOfARepeatedOptionIsChecked) {
  EXPECT_EQ(ErrorOf({"--nproc_per_node=abc", "--nproc_per_node=1", "t.py"}),
            "argument --nproc_per_node: invalid int value: 'abc'");
  EXPECT_EQ(ErrorOf({"--run_mode=x", "--run_mode=collective", "t.py"}),
            "argument --run_mode: invalid choice: 'x' (choose from 'collective', 'ps', "
            "'ps-heter', 'rpc')");
  EXPECT_EQ(ErrorOf({"--gloo_port=0", "--gloo_port=6170", "t.py"}),
            "argument --gloo_port: invalid port value: '0' (expected 1..65535)");
  // What argparse does not check (a str flag, even one pdlaunch checks in the value in force;
  // the backend is Paddle's check of the value in force) stays the last one's.
  EXPECT_EQ(Options({"--backend=x", "--backend=gloo", "t.py"}).backend, "gloo");
  EXPECT_EQ(Options({"--gpus=a", "--gpus=0", "t.py"}).gpus, "0");
  EXPECT_EQ(Options({"--log_dir=", "--log_dir=log", "t.py"}).log_dir, "log");
  EXPECT_EQ(Options({"--nnodes", "0", "--nnodes", "1", "t.py"}).nnodes, "1");
  EXPECT_EQ(Options({"--log_level", "bogus", "--log_level", "INFO", "t.py"}).log_level, "INFO");
}

// As argparse converts values while it reads them, the first bad one in argv order is named.
TEST(CliTest, TheFirstBadValueTypedIsTheOneNamed) {
  EXPECT_EQ(ErrorOf({"--grace=y", "--nproc_per_node=x", "t.py"}),
            "argument --grace: invalid non-negative float value: 'y'");
  EXPECT_EQ(ErrorOf({"--nproc_per_node=x", "--grace=y", "t.py"}),
            "argument --nproc_per_node: invalid int value: 'x'");
  // An alias is named as typed.
  EXPECT_EQ(ErrorOf({"--trainer_num=x", "t.py"}), "argument --trainer_num: invalid int value: 'x'");
}

TEST(CliTest, WithoutOptionsDropsEverySpellingAndKeepsTheScript) {
  EXPECT_EQ(WithoutOptions({"--host", "10.0.0.1", "--nnodes=2", "--rank=0", "t.py", "--host", "x",
                            "--rank", "1"},
                           {"host", "rank"}),
            (Args{"--nnodes=2", "t.py", "--host", "x", "--rank", "1"}));
  EXPECT_EQ(WithoutOptions({"--ho=10.0.0.1", "--gpus", "0", "--", "--rank"}, {"host", "rank"}),
            (Args{"--gpus", "0", "--", "--rank"}));
  EXPECT_EQ(WithoutOptions({"--force", "true", "--rank", "-1", "t.py"}, {"rank"}),
            (Args{"--force", "true", "t.py"}));
}

TEST(CliTest, GlooPortAndHostAreCheckedInEveryMode) {
  EXPECT_EQ(Options({"--http_port", "6170", "t.py"}).http_port, 6170);
  EXPECT_EQ(ErrorOf({"--http_port=0", "t.py"}),
            "argument --http_port: invalid port value: '0' (expected 1..65535)");
  EXPECT_EQ(ErrorOf({"--gloo_port=65536", "t.py"}),
            "argument --gloo_port: invalid port value: '65536' (expected 1..65535)");
  EXPECT_EQ(ErrorOf({"--host=", "t.py"}),
            "argument --host: invalid host value: '' (leave --host out to find this node's "
            "address)");
}

TEST(CliTest, UniquePrefixExpands) {
  const LaunchOptions o = Options({"--nproc", "2", "--gpu=1", "--ip", "10.0.0.2", "t.py"});
  EXPECT_EQ(o.nproc_per_node, 2);
  EXPECT_EQ(o.gpus, "1");
  EXPECT_EQ(o.ips, "10.0.0.2");
  EXPECT_EQ(o.given, (std::set<std::string>{"gpus", "ips", "nproc_per_node"}));
}

// Issue #29 item 3. What Python's argparse makes of every prefix that two or more of the
// launcher's long options share, as `python -m paddle.distributed.launch` applies it: printed by
// tests/helpers/argparse_prefixes.py (real argparse parsers with Paddle's option strings in
// Paddle's order; run it with every long option of the launcher when one is added:
// SharedPrefixesAreTheOraclesOnes fails until then). One deliberate difference, in the script
// too: an exact name of either parser wins, so "--np" is the legacy --np (docs/cli.md).
struct PrefixCase {
  const char* prefix;
  const char* outcome;  // The option, or the error line.
};
// clang-format off
constexpr PrefixCase kArgparsePrefixes[] = {
    {"--a", "ambiguous option: --a could match --auto_parallel_config, --auto_cluster_config, --auto_tuner_json"},
    {"--au", "ambiguous option: --au could match --auto_parallel_config, --auto_cluster_config, --auto_tuner_json"},
    {"--aut", "ambiguous option: --aut could match --auto_parallel_config, --auto_cluster_config, --auto_tuner_json"},
    {"--auto", "ambiguous option: --auto could match --auto_parallel_config, --auto_cluster_config, --auto_tuner_json"},
    {"--auto_", "ambiguous option: --auto_ could match --auto_parallel_config, --auto_cluster_config, --auto_tuner_json"},
    {"--d", "--devices"},
    {"--e", "ambiguous option: --e could match --enable_gpu_log, --elastic_level, --elastic_timeout"},
    {"--el", "ambiguous option: --el could match --elastic_level, --elastic_timeout"},
    {"--ela", "ambiguous option: --ela could match --elastic_level, --elastic_timeout"},
    {"--elas", "ambiguous option: --elas could match --elastic_level, --elastic_timeout"},
    {"--elast", "ambiguous option: --elast could match --elastic_level, --elastic_timeout"},
    {"--elasti", "ambiguous option: --elasti could match --elastic_level, --elastic_timeout"},
    {"--elastic", "ambiguous option: --elastic could match --elastic_level, --elastic_timeout"},
    {"--elastic_", "ambiguous option: --elastic_ could match --elastic_level, --elastic_timeout"},
    {"--g", "ambiguous option: --g could match --gpus, --gloo_port"},
    {"--h", "ambiguous option: --h could match --help, --host"},
    {"--he", "--help"},
    {"--het", "ambiguous option: --het could match --heter_workers, --heter_devices, --heter_worker_num"},
    {"--hete", "ambiguous option: --hete could match --heter_workers, --heter_devices, --heter_worker_num"},
    {"--heter", "ambiguous option: --heter could match --heter_workers, --heter_devices, --heter_worker_num"},
    {"--heter_", "ambiguous option: --heter_ could match --heter_workers, --heter_devices, --heter_worker_num"},
    {"--heter_w", "ambiguous option: --heter_w could match --heter_workers, --heter_worker_num"},
    {"--heter_wo", "ambiguous option: --heter_wo could match --heter_workers, --heter_worker_num"},
    {"--heter_wor", "ambiguous option: --heter_wor could match --heter_workers, --heter_worker_num"},
    {"--heter_work", "ambiguous option: --heter_work could match --heter_workers, --heter_worker_num"},
    {"--heter_worke", "ambiguous option: --heter_worke could match --heter_workers, --heter_worker_num"},
    {"--heter_worker", "ambiguous option: --heter_worker could match --heter_workers, --heter_worker_num"},
    {"--l", "ambiguous option: --l could match --legacy, --log_level, --log_overwrite, --log_dir"},
    {"--lo", "ambiguous option: --lo could match --log_level, --log_overwrite, --log_dir"},
    {"--log", "ambiguous option: --log could match --log_level, --log_overwrite, --log_dir"},
    {"--log_", "ambiguous option: --log_ could match --log_level, --log_overwrite, --log_dir"},
    {"--m", "ambiguous option: --m could match --master, --max_restart"},
    {"--ma", "ambiguous option: --ma could match --master, --max_restart"},
    {"--n", "ambiguous option: --n could match --nnodes, --nproc_per_node, --npus"},
    {"--np", "--np"},
    {"--r", "ambiguous option: --r could match --rank, --run_mode"},
    {"--re", "ambiguous option: --re could match --report, --rendezvous_timeout"},
    {"--s", "ambiguous option: --s could match --sort_ip, --start_port, --servers, --server_num"},
    {"--se", "ambiguous option: --se could match --servers, --server_num"},
    {"--sel", "ambiguous option: --sel could match --selected_gpus, --selected_xpus"},
    {"--sele", "ambiguous option: --sele could match --selected_gpus, --selected_xpus"},
    {"--selec", "ambiguous option: --selec could match --selected_gpus, --selected_xpus"},
    {"--select", "ambiguous option: --select could match --selected_gpus, --selected_xpus"},
    {"--selecte", "ambiguous option: --selecte could match --selected_gpus, --selected_xpus"},
    {"--selected", "ambiguous option: --selected could match --selected_gpus, --selected_xpus"},
    {"--selected_", "ambiguous option: --selected_ could match --selected_gpus, --selected_xpus"},
    {"--ser", "ambiguous option: --ser could match --servers, --server_num"},
    {"--serv", "ambiguous option: --serv could match --servers, --server_num"},
    {"--serve", "ambiguous option: --serve could match --servers, --server_num"},
    {"--server", "ambiguous option: --server could match --servers, --server_num"},
    {"--t", "ambiguous option: --t could match --trainers, --trainer_num"},
    {"--tr", "ambiguous option: --tr could match --trainers, --trainer_num"},
    {"--tra", "ambiguous option: --tra could match --trainers, --trainer_num"},
    {"--trai", "ambiguous option: --trai could match --trainers, --trainer_num"},
    {"--train", "ambiguous option: --train could match --trainers, --trainer_num"},
    {"--traine", "ambiguous option: --traine could match --trainers, --trainer_num"},
    {"--trainer", "ambiguous option: --trainer could match --trainers, --trainer_num"},
    {"--w", "--with_gloo"},
    {"--wo", "ambiguous option: --wo could match --workers, --worker_num"},
    {"--wor", "ambiguous option: --wor could match --workers, --worker_num"},
    {"--work", "ambiguous option: --work could match --workers, --worker_num"},
    {"--worke", "ambiguous option: --worke could match --workers, --worker_num"},
    {"--worker", "ambiguous option: --worker could match --workers, --worker_num"},
};
// clang-format on

std::string Outcome(std::string_view prefix) {
  try {
    return ResolveOptionName(prefix);
  } catch (const UsageError& e) {
    return e.what();
  }
}

TEST(ArgparsePrefixTest, EverySharedPrefixMeansWhatArgparseMakesOfIt) {
  for (const PrefixCase& c : kArgparsePrefixes) {
    EXPECT_EQ(Outcome(c.prefix), c.outcome) << c.prefix;
  }
}

TEST(ArgparsePrefixTest, SharedPrefixesAreTheOraclesOnes) {
  std::set<std::string> names;
  for (const FlagInfo& flag : ListFlags()) names.insert(std::string(flag.name));
  std::set<std::string> shared;
  for (const std::string& a : names) {
    for (const std::string& b : names) {
      if (a >= b) continue;
      size_t common = 0;
      while (common < std::min(a.size(), b.size()) && a[common] == b[common]) ++common;
      for (size_t length = 3; length <= common; ++length) shared.insert(a.substr(0, length));
    }
  }
  std::set<std::string> in_table;
  for (const PrefixCase& c : kArgparsePrefixes) in_table.insert(c.prefix);
  EXPECT_EQ(shared, in_table);
}

TEST(ArgparsePrefixTest, PaddlesAmbiguitiesAreErrorsOnTheCommandLine) {
  EXPECT_EQ(ErrorOf({"--ma", "127.0.0.1:5", "t.py"}),
            "ambiguous option: --ma could match --master, --max_restart");
  EXPECT_EQ(ErrorOf({"--log=out", "t.py"}),
            "ambiguous option: --log could match --log_level, --log_overwrite, --log_dir");
  EXPECT_EQ(ErrorOf({"--g", "3", "t.py"}), "ambiguous option: --g could match --gpus, --gloo_port");
}

TEST(CliTest, PrefixOfPdlaunchAdditionExpands) {
  const LaunchOptions o = Options({"--start", "7000", "--log_o", "--gr=1.5", "t.py"});
  EXPECT_EQ(o.start_port, 7000);
  EXPECT_TRUE(o.log_overwrite);
  EXPECT_EQ(o.grace, 1.5);
}

TEST(CliTest, AmbiguousPrefixNamesCandidates) {
  EXPECT_EQ(ErrorOf({"--server", "1", "t.py"}),
            "ambiguous option: --server could match --servers, --server_num");
  EXPECT_EQ(ErrorOf({"--selected=0", "t.py"}),
            "ambiguous option: --selected could match --selected_gpus, --selected_xpus");
}

TEST(CliTest, ExactNameBeatsLongerNameItPrefixes) {
  // "--np" is also a prefix of "--nproc_per_node"; the exact elastic flag is meant.
  const LaunchOptions o = Options({"--np", "2", "t.py"});
  EXPECT_EQ(o.np, "2");
  EXPECT_EQ(o.nproc_per_node, std::nullopt);
  EXPECT_EQ(ArgumentsErrorOf({"--np", "2"}),
            "the following arguments are required: training_script (see launch --help)");
  EXPECT_EQ(ParseArguments({"--np", "2", "t.py"}).options.np, "2");
}

TEST(CliTest, ScriptArgumentsPassVerbatim) {
  const LaunchOptions o =
      Options({"--gpus", "0", "train.py", "--gpus", "1", "--lr=0.1", "-h", "--", "--version"});
  EXPECT_EQ(o.gpus, "0");
  EXPECT_EQ(o.training_script, "train.py");
  EXPECT_EQ(o.training_script_args, (Args{"--gpus", "1", "--lr=0.1", "-h", "--", "--version"}));
  EXPECT_EQ(o.given, (std::set<std::string>{"gpus"}));
}

TEST(CliTest, ScriptArgumentsAreNeverExpandedOrRejected) {
  const LaunchOptions o = Options({"run.sh", "--serv", "--foo", "--server_num=2"});
  EXPECT_EQ(o.training_script, "run.sh");
  EXPECT_EQ(o.training_script_args, (Args{"--serv", "--foo", "--server_num=2"}));
  EXPECT_TRUE(o.given.empty());
}

TEST(CliTest, DoubleDashEndsLauncherOptions) {
  const LaunchOptions o = Options({"--log_dir", "x", "--", "--script-like", "--gpus", "0"});
  EXPECT_EQ(o.log_dir, "x");
  EXPECT_EQ(o.training_script, "--script-like");
  EXPECT_EQ(o.training_script_args, (Args{"--gpus", "0"}));
  EXPECT_EQ(o.gpus, std::nullopt);
}

TEST(CliTest, OnlyFirstDoubleDashIsConsumed) {
  const LaunchOptions o = Options({"--", "t.py", "--", "a"});
  EXPECT_EQ(o.training_script, "t.py");
  EXPECT_EQ(o.training_script_args, (Args{"--", "a"}));
}

TEST(CliTest, UnknownOptionIsUsageError) {
  EXPECT_EQ(ErrorOf({"--foo", "t.py"}), "unrecognized arguments: --foo");
  EXPECT_EQ(ErrorOf({"--foo=1", "t.py"}), "unrecognized arguments: --foo=1");
  EXPECT_EQ(ErrorOf({"-x", "t.py"}), "unrecognized arguments: -x");
}

TEST(CliTest, UnknownOptionBeforeScriptIsNotTheScript) {
  EXPECT_EQ(ErrorOf({"--gpus", "0", "--ipz", "10.0.0.1", "train.py"}),
            "unrecognized arguments: --ipz");
}

TEST(CliTest, RemovedPaddleOneFlagsAreUnknown) {
  EXPECT_EQ(ErrorOf({"--started_port", "6170", "t.py"}), "unrecognized arguments: --started_port");
  EXPECT_EQ(ErrorOf({"--cluster_node_ips=a", "t.py"}),
            "unrecognized arguments: --cluster_node_ips=a");
}

TEST(CliTest, MissingScriptIsUsageError) {
  const std::string message =
      "the following arguments are required: training_script (see launch --help)";
  EXPECT_EQ(ErrorOf({}), message);
  EXPECT_EQ(ErrorOf({"--gpus", "0"}), message);
  EXPECT_EQ(ErrorOf({"--"}), message);
}

TEST(CliTest, BadIntNamesFlagAndValue) {
  EXPECT_EQ(ErrorOf({"--nproc_per_node", "two", "t.py"}),
            "argument --nproc_per_node: invalid int value: 'two'");
  EXPECT_EQ(ErrorOf({"--nproc_per_node=0x10", "t.py"}),
            "argument --nproc_per_node: invalid int value: '0x10'");
  EXPECT_EQ(ErrorOf({"--nproc_per_node=", "t.py"}),
            "argument --nproc_per_node: invalid int value: ''");
  EXPECT_EQ(ErrorOf({"--nproc_per_node=99999999999", "t.py"}),
            "argument --nproc_per_node: invalid int value: '99999999999'");
}

TEST(CliTest, IntIsReadAsPythonInt) {
  EXPECT_EQ(Options({"--nproc_per_node=010", "t.py"}).nproc_per_node, 10);
  EXPECT_EQ(Options({"--nproc_per_node= 3 ", "t.py"}).nproc_per_node, 3);
  EXPECT_EQ(Options({"--nproc_per_node=+4", "t.py"}).nproc_per_node, 4);
}

TEST(CliTest, StartPortMustBeAPort) {
  EXPECT_EQ(Options({"--start_port", "6170", "t.py"}).start_port, 6170);
  EXPECT_EQ(ErrorOf({"--start_port", "70000", "t.py"}),
            "argument --start_port: invalid port value: '70000' (expected 1..65535)");
  EXPECT_EQ(ErrorOf({"--start_port=0", "t.py"}),
            "argument --start_port: invalid port value: '0' (expected 1..65535)");
  EXPECT_EQ(ErrorOf({"--start_port=x", "t.py"}), "argument --start_port: invalid int value: 'x'");
}

TEST(CliTest, GraceIsNonNegativeSeconds) {
  EXPECT_EQ(Options({"--grace", "0.5", "t.py"}).grace, 0.5);
  EXPECT_EQ(Options({"--grace=0", "t.py"}).grace, 0.0);
  EXPECT_EQ(ErrorOf({"--grace", "-1", "t.py"}),
            "argument --grace: invalid non-negative float value: '-1'");
  EXPECT_EQ(ErrorOf({"--grace=inf", "t.py"}),
            "argument --grace: invalid non-negative float value: 'inf'");
  EXPECT_EQ(ErrorOf({"--grace=5s", "t.py"}),
            "argument --grace: invalid non-negative float value: '5s'");
}

TEST(CliTest, LogOverwriteTakesPaddlesBoolValue) {
  // Paddle 3 declares it type=strtobool: a value follows; pdlaunch also takes it bare.
  const LaunchOptions bare = Options({"--log_overwrite", "t.py"});
  EXPECT_TRUE(bare.log_overwrite);
  EXPECT_EQ(bare.training_script, "t.py");
  const LaunchOptions spaced = Options({"--log_overwrite", "True", "t.py", "--lr"});
  EXPECT_TRUE(spaced.log_overwrite);
  EXPECT_EQ(spaced.training_script, "t.py");
  EXPECT_FALSE(Options({"--log_overwrite", "0", "t.py"}).log_overwrite);
  EXPECT_TRUE(Options({"--log_overwrite=1", "t.py"}).log_overwrite);
  EXPECT_FALSE(Options({"--log_overwrite=False", "t.py"}).log_overwrite);
  EXPECT_EQ(ErrorOf({"--log_overwrite=maybe", "t.py"}),
            "argument --log_overwrite: invalid bool value: 'maybe' (use true/false, yes/no, "
            "on/off, 1/0)");
}

TEST(CliTest, DashMStartsTheTrainingCommandAsAModule) {
  const LaunchOptions o = Options({"--nproc_per_node", "2", "-m", "pkg.train", "--lr", "1"});
  EXPECT_EQ(o.training_script, "-m");
  EXPECT_EQ(o.training_script_args, (std::vector<std::string>{"pkg.train", "--lr", "1"}));
  EXPECT_EQ(o.nproc_per_node, 2);
  EXPECT_EQ(ErrorOf({"-m"}),
            "argument -m: expected a module name (launch [options] -m package.module [args ...])");
}

TEST(CliTest, TorchrunsRankFilterPointsAtEcho) {
  EXPECT_EQ(ErrorOf({"--local-ranks-filter", "0", "t.py"}),
            "unrecognized arguments: --local-ranks-filter (did you mean --echo?)");
}

TEST(CliTest, NodesMeetIsABoolWithItsVariable) {
  EXPECT_TRUE(Options({"t.py"}).nodes_meet);
  EXPECT_FALSE(Options({"--nodes_meet", "false", "t.py"}).nodes_meet);
  EXPECT_FALSE(Options({"--nodes_meet=0", "t.py"}).nodes_meet);
}

TEST(CliTest, ForceReadsBoolWords) {
  EXPECT_TRUE(ParseArguments({"--force", "t.py"}).options.force);
  EXPECT_FALSE(ParseArguments({"--force=false", "t.py"}).options.force);
  EXPECT_FALSE(ParseArguments({"--force=False", "t.py"}).options.force);
  EXPECT_TRUE(ParseArguments({"--force=1", "t.py"}).options.force);
  const LaunchOptions o = ParseArguments({"--force", "0", "t.py"}).options;
  EXPECT_FALSE(o.force);
  EXPECT_EQ(o.training_script, "t.py");
  // strtobool's words (issue #13: `--force yes train.py` once ran /usr/bin/yes).
  EXPECT_TRUE(ParseArguments({"--force=yes", "t.py"}).options.force);
  EXPECT_EQ(ArgumentsErrorOf({"--force=maybe", "t.py"}),
            "argument --force: invalid bool value: 'maybe' (use true/false, yes/no, on/off, 1/0)");
}

TEST(CliTest, ArgumentsOfUnsupportedModesAreStillTyped) {
  const LaunchOptions o = ParseArguments({"--server_num", "2", "--heter_worker_num", "1;2",
                                          "--http_port=8000", "--scale", "1", "t.py"})
                              .options;
  EXPECT_EQ(o.server_num, 2);
  EXPECT_EQ(o.heter_worker_num, "1;2");
  EXPECT_EQ(o.http_port, 8000);
  EXPECT_EQ(o.scale, 1);
  EXPECT_EQ(ArgumentsErrorOf({"--worker_num", "x", "t.py"}),
            "argument --worker_num: invalid int value: 'x'");
}

TEST(CliTest, ParameterServerFlagsAreAccepted) {
  const LaunchOptions o =
      Options({"--servers=127.0.0.1:6170", "--workers", "127.0.0.1:6171", "--heter_workers=a:1;b:2",
               "--heter_devices=cpu;gpu", "--worker_num=2", "--server_num", "1",
               "--heter_worker_num=1;2", "--http_port=6180", "t.py"});
  EXPECT_EQ(o.servers, "127.0.0.1:6170");
  EXPECT_EQ(o.workers, "127.0.0.1:6171");
  EXPECT_EQ(o.heter_workers, "a:1;b:2");
  EXPECT_EQ(o.heter_devices, "cpu;gpu");
  EXPECT_EQ(o.worker_num, 2);
  EXPECT_EQ(o.server_num, 1);
  EXPECT_EQ(o.heter_worker_num, "1;2");
  EXPECT_EQ(o.http_port, 6180);
  for (const char* dest : {"servers", "workers", "heter_workers", "heter_devices", "worker_num",
                           "server_num", "heter_worker_num", "http_port"}) {
    EXPECT_TRUE(o.WasGiven(dest)) << dest;
  }
}

TEST(CliTest, ElasticFlagsAreAccepted) {
  const LaunchOptions o =
      Options({"--elastic_server", "127.0.0.1:2379", "--job_id", "job1", "--np", "2:4", "--scale",
               "1", "--force", "--elastic_pre_hook", "echo hi", "--max_restart", "5", "t.py"});
  EXPECT_EQ(o.elastic_server, "127.0.0.1:2379");
  EXPECT_EQ(o.job_id, "job1");
  EXPECT_EQ(o.np, "2:4");
  EXPECT_EQ(o.scale, 1);
  EXPECT_TRUE(o.force);
  EXPECT_EQ(o.elastic_pre_hook, "echo hi");
  EXPECT_EQ(o.max_restart, 5);
  for (const char* dest :
       {"elastic_server", "job_id", "np", "scale", "force", "elastic_pre_hook", "max_restart"}) {
    EXPECT_TRUE(o.WasGiven(dest)) << dest;
  }
  EXPECT_EQ(ErrorOf({"--max_restart", "x", "t.py"}),
            "argument --max_restart: invalid int value: 'x'");
}

TEST(CliTest, HostIsAcceptedForCollective) {
  const LaunchOptions o = Options({"--ips", "10.0.0.1,10.0.0.2", "--host", "10.0.0.2", "t.py"});
  EXPECT_EQ(o.host, "10.0.0.2");
  EXPECT_TRUE(o.WasGiven("host"));
}

// Issue #27: Kunlun XPUs through the legacy --xpus/--selected_xpus and --backend bkcl/xccl.
TEST(CliTest, XpuFlagsAndBackendsAreAccepted) {
  EXPECT_EQ(Options({"--xpus", "0,1", "t.py"}).xpus, "0,1");
  const LaunchOptions legacy = Options({"--selected_xpus", "2", "t.py"});
  EXPECT_EQ(legacy.xpus, "2");
  EXPECT_EQ(legacy.FlagName("xpus"), "--selected_xpus");
  for (const char* backend : {"bkcl", "xccl", "heter", "auto", "gloo", "nccl"}) {
    EXPECT_EQ(Options({"--backend", backend, "t.py"}).backend, backend);
  }
}

TEST(CliTest, RunModeIsChecked) {
  EXPECT_EQ(Options({"--run_mode", "collective", "t.py"}).run_mode, "collective");
  EXPECT_EQ(Options({"--run_mode", "ps", "t.py"}).run_mode, "ps");
  EXPECT_EQ(Options({"--run_mode=ps-heter", "t.py"}).run_mode, "ps-heter");
  EXPECT_EQ(ErrorOf({"--run_mode", "cpuonly", "t.py"}),
            "argument --run_mode: invalid choice: 'cpuonly' (choose from 'collective', 'ps', "
            "'ps-heter', 'rpc')");
}

TEST(CliTest, BackendMustBeKnown) {
  EXPECT_EQ(Options({"--backend", "gloo", "t.py"}).backend, "gloo");
  EXPECT_EQ(Options({"--backend=nccl", "t.py"}).backend, "nccl");
  EXPECT_EQ(ErrorOf({"--backend", "mpi", "t.py"}),
            "paddle.distributed initialize error, backend argument can only be one of 'nccl', "
            "'gloo', 'bkcl', 'auto', 'heter', 'xccl' but got mpi");
}

TEST(CliTest, ParserIgnoresBackendEnvironment) {
  LaunchOptions o;
  {
    const testutil::ScopedEnv backend("PADDLE_DISTRI_BACKEND", "gloo");
    o = Options({"t.py"});
  }
  EXPECT_EQ(o.backend, "auto");
  EXPECT_FALSE(o.WasGiven("backend"));
}

TEST(CliTest, EveryFlagOfPaddle3IsTakenNowAutoParallelConfigIsBuilt) {
  LaunchOptions options;
  options.auto_parallel_config = "t.json";
  options.given.insert("auto_parallel_config");
  EXPECT_NO_THROW(RejectUnsupportedOptions(options));
  for (const FlagInfo& flag : ListFlags()) EXPECT_TRUE(flag.supported) << flag.name;
  EXPECT_EQ(Options({"--auto_parallel_config", "x.json", "t.py"}).auto_parallel_config, "x.json");
}

TEST(CliTest, HelpProducesExitText) {
  for (const Args& args : {Args{"--help"}, Args{"-h"}, Args{"--hel"}, Args{"--gpus", "0", "-h"},
                           Args{"-h", "--foo"}}) {
    const CommandLine command_line = ParseCommandLine(args);
    ASSERT_TRUE(command_line.exit_text.has_value()) << args.front();
    EXPECT_EQ(*command_line.exit_text, HelpText());
  }
  EXPECT_EQ(ErrorOf({"--help=1"}), "argument -h/--help: ignored explicit argument '1'");
}

TEST(CliTest, VersionProducesExitText) {
  const std::string expected =
      std::string("launch (pdlaunch) ") + kVersion + "\ncommit " + BuildCommit() + "\n";
  // 12 hex digits, "-dirty" after them when the tree had changes, or "unknown" outside git.
  EXPECT_TRUE(std::regex_match(BuildCommit(), std::regex("[0-9a-f]{12}(-dirty)?|unknown")))
      << BuildCommit();
  EXPECT_EQ(ParseCommandLine({"--version"}).exit_text, expected);
  EXPECT_EQ(ParseCommandLine({"--vers", "--server_num=2"}).exit_text, expected);
}

TEST(CliTest, HelpAfterScriptBelongsToScript) {
  const CommandLine command_line = ParseCommandLine({"t.py", "--help", "--version"});
  EXPECT_FALSE(command_line.exit_text.has_value());
  EXPECT_EQ(command_line.options.training_script_args, (Args{"--help", "--version"}));
}

TEST(CliTest, HelpListsEveryFlag) {
  const std::string help = HelpText();
  for (const std::string flag : {"-h, --help",
                                 "--version",
                                 "--log_dir LOG_DIR",
                                 "--backend BACKEND",
                                 "--nproc_per_node NPROC_PER_NODE",
                                 "--run_mode RUN_MODE",
                                 "--gpus GPUS",
                                 "--selected_gpus GPUS",
                                 "--xpus XPUS",
                                 "--selected_xpus XPUS",
                                 "--ips IPS",
                                 "--servers SERVERS",
                                 "--workers WORKERS",
                                 "--heter_workers HETER_WORKERS",
                                 "--heter_devices HETER_DEVICES",
                                 "--worker_num WORKER_NUM",
                                 "--server_num SERVER_NUM",
                                 "--heter_worker_num HETER_WORKER_NUM",
                                 "--http_port HTTP_PORT",
                                 "--elastic_server ELASTIC_SERVER",
                                 "--job_id JOB_ID",
                                 "--np NP",
                                 "--scale SCALE",
                                 "--host HOST",
                                 "--force [FORCE]",
                                 "--elastic_pre_hook ELASTIC_PRE_HOOK",
                                 "--max_restart MAX_RESTART",
                                 "--start_port START_PORT",
                                 "--log_overwrite",
                                 "--grace GRACE",
                                 "training_script",
                                 "training_script_args"}) {
    EXPECT_NE(help.find("\n  " + flag), std::string::npos) << flag;
  }
}

TEST(CliTest, HelpIsOurs) {
  const std::string help = HelpText();
  EXPECT_EQ(help.rfind(UsageText(), 0), 0u);
  EXPECT_NE(help.find("\nStart a distributed training job"), std::string::npos);
  // Issue #42 item 4: the commands people run most, before the reference.
  const size_t examples = help.find("\nExamples:\n  launch --gpus 0,1 train.py --lr 0.1\n");
  EXPECT_NE(examples, std::string::npos) << help;
  EXPECT_LT(examples, help.find("\noptional arguments:"));
  EXPECT_EQ(help.find("1.6"), std::string::npos);  // No link to Paddle 1.6 docs.
  EXPECT_EQ(help.find("Specifize"), std::string::npos);
  EXPECT_NE(help.find("\n  -h, --help            show this help message and exit\n"),
            std::string::npos);
  EXPECT_NE(
      help.find("\n  --run_mode RUN_MODE   collective (default), ps, ps-heter or rpc (rpc needs\n"
                "                        --master) [env PADDLE_RUN_MODE]\n"),
      std::string::npos);
  EXPECT_NE(help.find("\n  --http_port HTTP_PORT\n                        Gloo HTTP port [env "
                      "PADDLE_GLOO_PORT]\n"),
            std::string::npos);
  for (const std::string group : {"\noptional arguments:\n", "\nBase Parameters:\n",
                                  "\nLaunch Parameters (paddle.distributed.launch):\n",
                                  "\nCollective Parameters:\n", "\nParameter-Server Parameters:\n",
                                  "\nElastic Parameters:\n", "\npdlaunch Parameters:\n"}) {
    EXPECT_NE(help.find(group), std::string::npos) << group;
  }
}

TEST(CliTest, UsageWrapsLikeArgparse) {
  const std::string usage = UsageText();
  EXPECT_EQ(usage.rfind("usage: launch [-h] [--version] [--log_dir LOG_DIR]", 0), 0u);
  EXPECT_EQ(usage.substr(usage.size() - 21), " training_script ...\n");
  std::istringstream lines(usage);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    EXPECT_LE(line.size(), 78u) << line;
    if (count++ > 0) {
      EXPECT_EQ(line.rfind("              [", 0), 0u) << line;
    }
  }
  EXPECT_GT(count, 1);
}

}  // namespace
}  // namespace pdlaunch

namespace pdlaunch {
namespace {

TEST(NewInterfaceCliTest, FlagsOfTodaysLauncher) {
  const LaunchOptions o =
      Options({"--master", "10.0.0.1:8090", "--nnodes", "2", "--rank", "1", "--devices", "0,1",
               "--log_level", "debug", "--sort_ip", "--trainer_num", "3", "--gloo_port", "6767",
               "--legacy", "no", "train.py"});
  EXPECT_EQ(o.master, "10.0.0.1:8090");
  EXPECT_EQ(o.nnodes, "2");
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.gpus, "0,1");
  EXPECT_EQ(o.log_level, "DEBUG");
  EXPECT_TRUE(o.sort_ip);
  EXPECT_EQ(o.worker_num, 3);
  EXPECT_EQ(o.http_port, 6767);
  EXPECT_FALSE(o.legacy);
  EXPECT_EQ(o.training_script, "train.py");
  EXPECT_TRUE(o.new_flags.count("--devices"));
  EXPECT_TRUE(o.new_flags.count("--master"));
  EXPECT_EQ(Options({"--npus", "2", "t.py"}).gpus, "2");
}

TEST(NewInterfaceCliTest, BadValuesNameTheToken) {
  EXPECT_EQ(ErrorOf({"--nnodes", "0", "t.py"}),
            "argument --nnodes: invalid node count value: '0' (expected N or MIN:MAX, N >= 1)");
  EXPECT_EQ(ErrorOf({"--nnodes", "4:2", "t.py"}),
            "argument --nnodes: invalid node count value: '4:2' (MIN:MAX needs MIN <= MAX)");
  EXPECT_EQ(ErrorOf({"--rank", "-2", "t.py"}),
            "argument --rank: invalid rank value: '-2' (expected -1 or a node rank >= 0)");
  EXPECT_EQ(ErrorOf({"--log_level", "loud", "t.py"}),
            "argument --log_level: invalid log level value: 'loud' (choose from DEBUG, INFO, "
            "WARNING, ERROR, CRITICAL)");
  EXPECT_EQ(ErrorOf({"--rendezvous_timeout", "0", "t.py"}),
            "argument --rendezvous_timeout: invalid positive float value: '0'");
}

TEST(NewInterfaceCliTest, UniquePrefixesOfTodaysFlagsExpand) {
  EXPECT_EQ(Options({"--nn", "3", "t.py"}).nnodes, "3");
  EXPECT_EQ(Options({"--log_d", "out", "t.py"}).log_dir, "out");
}

TEST(NewInterfaceCliTest, ForceTakesStrtoboolWordsAsValues) {
  const LaunchOptions o = Options({"--force", "yes", "train.py"});
  EXPECT_TRUE(o.force);
  EXPECT_EQ(o.training_script, "train.py");
  EXPECT_FALSE(Options({"--force", "off", "t.py"}).force);
}

TEST(EnvironmentTwinsTest, CommandLineBeatsEnvironmentBeatsDefault) {
  LaunchOptions o = Options({"--nnodes", "3", "t.py"});
  ApplyEnvironmentTwins(o, {{"PADDLE_NNODES", "2"},
                            {"PADDLE_MASTER", "m:36543"},
                            {"PADDLE_JOB_ID", "job"},
                            {"PADDLE_NPROC_PER_NODE", "4"},
                            {"PADDLE_LOG_OVERWRITE", "0"},
                            {"PADDLE_DEVICES", ""}});
  EXPECT_EQ(o.nnodes, "3");
  EXPECT_EQ(o.master, "m:36543");
  EXPECT_EQ(o.job_id, "job");
  EXPECT_EQ(o.nproc_per_node, 4);
  EXPECT_FALSE(o.log_overwrite);
  EXPECT_FALSE(o.gpus);  // Empty counts as unset.
  EXPECT_TRUE(o.from_env.count("master"));
  EXPECT_FALSE(o.from_env.count("nnodes"));
}

TEST(EnvironmentTwinsTest, BadValueNamesTheVariable) {
  LaunchOptions o = Options({"t.py"});
  try {
    ApplyEnvironmentTwins(o, {{"PADDLE_NPROC_PER_NODE", "many"}});
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "PADDLE_NPROC_PER_NODE: invalid int value: 'many'");
  }
}

TEST(EnvironmentTwinsTest, NestedLaunchIgnoresWhatTheParentSetForItsRanks) {
  LaunchOptions o = Options({"t.py"});
  const std::vector<std::string> notes = ApplyEnvironmentTwins(o, {{"PDLAUNCH_PARENT", "123"},
                                                                   {"PADDLE_NNODES", "2"},
                                                                   {"PADDLE_MASTER", "h:1"},
                                                                   {"PADDLE_NPROC_PER_NODE", "2"}});
  EXPECT_FALSE(o.nnodes);
  EXPECT_FALSE(o.master);
  EXPECT_EQ(o.nproc_per_node, 2);
  EXPECT_EQ(notes.size(), 2u);
  // PADDLE_TRAINER_ID (not a twin, read for the node's rank) is ignored with a line too
  // (issue #29 item 8).
  LaunchOptions p = Options({"t.py"});
  EXPECT_EQ(ApplyEnvironmentTwins(p, {{"PDLAUNCH_PARENT", "123"}, {"PADDLE_TRAINER_ID", "3"}}),
            std::vector<std::string>{
                "PADDLE_TRAINER_ID is inherited from the job that started this launcher: ignored "
                "(pass --rank to set this node's rank)"});
  EXPECT_TRUE(ApplyEnvironmentTwins(p, {{"PADDLE_TRAINER_ID", "3"}}).empty());
}

TEST(NewInterfaceCliTest, OneRuleForTheConsoleAndTheFiles) {
  // docs/cli.md, "Console" (issue #29 item 7): today's console and files for a command that uses
  // today's interface: one of its flags typed, or PADDLE_MASTER/PADDLE_NNODES honoured; a
  // nested launch ignores the ones its parent set, so its own command line decides.
  const auto todays = [](const Args& args, const EnvMap& env) {
    LaunchOptions o = Options(args);
    ApplyEnvironmentTwins(o, env);
    return UsesNewInterface(o);
  };
  EXPECT_FALSE(todays({"t.py"}, {}));
  EXPECT_TRUE(todays({"--log_level", "INFO", "t.py"}, {}));
  EXPECT_TRUE(todays({"t.py"}, {{"PADDLE_NNODES", "2"}}));
  EXPECT_FALSE(todays({"t.py"}, {{"PADDLE_NNODES", "2"}, {"PDLAUNCH_PARENT", "7"}}));
  EXPECT_TRUE(todays({"--nnodes", "2", "t.py"}, {{"PDLAUNCH_PARENT", "7"}}));
  // Elastic through the legacy flags is the legacy interface; through --master etcd:// today's.
  EXPECT_FALSE(
      todays({"--elastic_server", "127.0.0.1:2379", "--job_id", "j", "--np", "2", "t.py"}, {}));
  EXPECT_TRUE(todays({"--master", "etcd://127.0.0.1:2379", "--nnodes", "2", "t.py"}, {}));
  EXPECT_FALSE(todays({"--legacy", "--nnodes", "2", "t.py"}, {}));
}

TEST(NewInterfaceCliTest, HelpListsBothInterfaces) {
  const std::string help = HelpText();
  for (const char* flag : {"--master", "--nnodes", "--rank", "--devices", "--ips", "--gpus",
                           "--rendezvous_timeout", "--heartbeat_timeout"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
  EXPECT_NE(help.find("Launch Parameters (paddle.distributed.launch)"), std::string::npos);
}

}  // namespace
}  // namespace pdlaunch

namespace pdlaunch {
namespace {

TEST(NewUserCliTest, OtherLaunchersSpellingsGetAHint) {
  EXPECT_EQ(ErrorOf({"--nproc-per-node", "2", "t.py"}),
            "unrecognized arguments: --nproc-per-node (did you mean --nproc_per_node?)");
  EXPECT_EQ(ErrorOf({"--max-restarts=3", "t.py"}),
            "unrecognized arguments: --max-restarts=3 (did you mean --max_restart?)");
  EXPECT_EQ(ErrorOf({"--node-rank", "1", "t.py"}),
            "unrecognized arguments: --node-rank (did you mean --rank?)");
  EXPECT_EQ(ErrorOf({"--tee", "3", "t.py"}),
            "unrecognized arguments: --tee (a torchrun flag; pdlaunch writes each rank's output "
            "to log/)");
  EXPECT_EQ(ErrorOf({"--bogus", "t.py"}), "unrecognized arguments: --bogus");
}

TEST(NewUserCliTest, EmptyLogDirIsRefused) {
  EXPECT_EQ(ErrorOf({"--log_dir=", "t.py"}),
            "argument --log_dir: invalid directory value: '' (use --log_dir . for the current "
            "directory)");
}

TEST(NewUserCliTest, IpuScriptIsRefusedSayingWhy) {
  EXPECT_EQ(ErrorOf({"ipu", "--x"}),
            "ipu: Graphcore IPU jobs (Paddle's poprun controller) are not supported: run poprun "
            "directly");
  EXPECT_NO_THROW(ParseCommandLine({"./ipu"}));
}

}  // namespace
}  // namespace pdlaunch
