#include "pdlaunch/options/options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pdlaunch/cli/cli.h"

// GCC 12 misfires -Wmaybe-uninitialized on a default-constructed LaunchOptions whose
// std::optional<std::string> members are then set (the product code builds clean).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pdlaunch {
namespace {

// The line of `dump` that starts with "name: ", without its newline ("" if absent).
std::string LineOf(const std::string& dump, const std::string& name) {
  const size_t start = dump.find("\n" + name + ": ");
  if (start == std::string::npos) return "";
  return dump.substr(start + 1, dump.find('\n', start + 1) - start - 1);
}

std::string GraceLine(double grace) {
  LaunchOptions options;
  options.grace = grace;
  return LineOf(FormatConfigurationArguments(options), "grace");
}

TEST(OptionsTest, ConfigurationDumpMatchesContractExample) {
  // Paddle's example (docs/cli.md, "Configuration dump"): `--gpus=0,1 train.py --lr=0.1`, plus
  // pdlaunch's own lines in sorted position.
  LaunchOptions options;
  options.gpus = "0,1";
  options.training_script = "train.py";
  options.training_script_args = {"--lr=0.1"};
  EXPECT_EQ(FormatConfigurationArguments(options),
            "-----------  Configuration Arguments -----------\n"
            "backend: auto\n"
            "echo: None\n"
            "elastic_pre_hook: None\n"
            "elastic_server: None\n"
            "force: False\n"
            "gpus: 0,1\n"
            "grace: 5.0\n"
            "heter_devices: \n"
            "heter_worker_num: None\n"
            "heter_workers: \n"
            "host: None\n"
            "http_port: None\n"
            "ips: 127.0.0.1\n"
            "job_id: None\n"
            "log_dir: log\n"
            "log_overwrite: False\n"
            "max_restart: None\n"
            "nodes_meet: True\n"
            "np: None\n"
            "nproc_per_node: None\n"
            "numa_binding: none\n"
            "report: None\n"
            "run_mode: None\n"
            "scale: 0\n"
            "server_num: None\n"
            "servers: \n"
            "start_port: None\n"
            "training_script: train.py\n"
            "training_script_args: ['--lr=0.1']\n"
            "worker_num: None\n"
            "workers: \n"
            "xpus: None\n"
            "------------------------------------------------\n");
}

TEST(OptionsTest, TodaysDumpListsEveryOptionThatTakesPart) {
  // docs/cli.md, "Configuration dump" (issue #29 item 10: it named five of pdlaunch's options
  // as if they were all). --help, --version and --dry_run print no dump.
  LaunchOptions options;
  options.training_script = "t.py";
  options.new_flags.insert("--log_level");  // A command of today's interface.
  std::string dump;
  for (const std::string& line : ConfigurationLogLines(options)) dump += "\n" + line;
  dump += "\n";
  for (const FlagInfo& flag : ListFlags()) {
    if (flag.dest == "help" || flag.dest == "version" || flag.dest == "dry_run") continue;
    if (!flag.supported) continue;  // Refused before any dump.
    EXPECT_NE(dump.find("\n" + std::string(flag.dest) + ": "), std::string::npos) << flag.name;
  }
}

TEST(OptionsTest, HeaderAndFooterAreFortyEightCharacters) {
  const std::string dump = FormatConfigurationArguments(LaunchOptions{});
  const std::string header = dump.substr(0, dump.find('\n'));
  EXPECT_EQ(header.size(), 48u);
  const std::string footer = dump.substr(dump.rfind('\n', dump.size() - 2) + 1);
  EXPECT_EQ(footer, std::string(48, '-') + "\n");
}

TEST(OptionsTest, ValuesRenderAsPythonStr) {
  LaunchOptions options;
  options.force = true;
  options.log_overwrite = true;
  options.nproc_per_node = 4;
  options.scale = -2;
  options.start_port = 6170;
  options.np = "2:4";
  options.run_mode = "collective";
  options.log_dir = "";
  const std::string dump = FormatConfigurationArguments(options);
  EXPECT_EQ(LineOf(dump, "force"), "force: True");
  EXPECT_EQ(LineOf(dump, "log_overwrite"), "log_overwrite: True");
  EXPECT_EQ(LineOf(dump, "nproc_per_node"), "nproc_per_node: 4");
  EXPECT_EQ(LineOf(dump, "scale"), "scale: -2");
  EXPECT_EQ(LineOf(dump, "start_port"), "start_port: 6170");
  EXPECT_EQ(LineOf(dump, "np"), "np: 2:4");
  EXPECT_EQ(LineOf(dump, "run_mode"), "run_mode: collective");
  EXPECT_EQ(LineOf(dump, "log_dir"), "log_dir: ");
}

TEST(OptionsTest, GraceRendersAsPythonFloat) {
  EXPECT_EQ(GraceLine(5.0), "grace: 5.0");
  EXPECT_EQ(GraceLine(0.0), "grace: 0.0");
  EXPECT_EQ(GraceLine(2.5), "grace: 2.5");
  EXPECT_EQ(GraceLine(0.1), "grace: 0.1");
  EXPECT_EQ(GraceLine(120.0), "grace: 120.0");
  EXPECT_EQ(GraceLine(0.0001), "grace: 0.0001");
  EXPECT_EQ(GraceLine(0.00001), "grace: 1e-05");
  EXPECT_EQ(GraceLine(1234567890123456.0), "grace: 1234567890123456.0");
  EXPECT_EQ(GraceLine(1e16), "grace: 1e+16");
  EXPECT_EQ(GraceLine(1.5e16), "grace: 1.5e+16");
}

TEST(OptionsTest, ScriptArgumentsRenderAsPythonList) {
  LaunchOptions options;
  options.training_script_args = {"--lr", "0.1", "--name=it's"};
  EXPECT_EQ(LineOf(FormatConfigurationArguments(options), "training_script_args"),
            "training_script_args: ['--lr', '0.1', \"--name=it's\"]");
}

TEST(OptionsTest, PythonListReprOfEmptyList) { EXPECT_EQ(PythonListRepr({}), "[]"); }

TEST(OptionsTest, PythonListReprQuotesEachItem) {
  EXPECT_EQ(PythonListRepr({"--lr=0.1", "--epochs=2"}), "['--lr=0.1', '--epochs=2']");
  EXPECT_EQ(PythonListRepr({""}), "['']");
}

TEST(OptionsTest, PythonListReprEscapesBackslash) {
  EXPECT_EQ(PythonListRepr({"a\\b"}), "['a\\\\b']");
}

TEST(OptionsTest, PythonListReprChoosesQuotesLikePython) {
  EXPECT_EQ(PythonListRepr({"it's"}), "[\"it's\"]");
  EXPECT_EQ(PythonListRepr({"say \"hi\""}), "['say \"hi\"']");
  EXPECT_EQ(PythonListRepr({"it's \"x\""}), "['it\\'s \"x\"']");
}

TEST(OptionsTest, PythonListReprEscapesControlCharacters) {
  EXPECT_EQ(PythonListRepr({"a\nb\tc\rd\x1b\x7f"}), "['a\\nb\\tc\\rd\\x1b\\x7f']");
}

TEST(OptionsTest, PythonListReprKeepsUtf8Text) {
  EXPECT_EQ(PythonListRepr({"caf\xc3\xa9"}), "['caf\xc3\xa9']");
}

TEST(OptionsTest, WasGivenLooksAtDestinations) {
  LaunchOptions options;
  options.given = {"gpus"};
  EXPECT_TRUE(options.WasGiven("gpus"));
  EXPECT_FALSE(options.WasGiven("selected_gpus"));
}

}  // namespace
}  // namespace pdlaunch
