#include "pdlaunch/cli/cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

// CLI11 reads the launcher's options (docs/design.md, "The command line"); its header stays in
// this file. It includes <iostream> only for std::cout and std::cerr, which it names in functions
// pdlaunch never calls (App::exit, deprecate_option, retire_option, AutoTimer). <iostream> also
// defines a static std::ios_base::Init in each file that includes it, and with it every start of
// the launcher would construct the standard streams and the classic locale: 0.18 ms and 25 page
// faults (`launch --version`, docs/performance.md). The streams are declared here as <iostream>
// declares them, without that object; the statically linked libstdc++ then leaves its stream
// set-up out of the binary. Nothing of pdlaunch writes through iostreams.
#include <version>
#if defined(__GLIBCXX__) && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1  // NOLINT(bugprone-reserved-identifier): libstdc++'s include guard.
#include <istream>
#include <ostream>
namespace std {  // NOLINT(cert-dcl58-cpp): the declarations of <iostream>, nothing new.
extern istream cin;
extern ostream cout;
extern ostream cerr;
extern ostream clog;
}  // namespace std
#endif
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/argparse_layer.h"
#include "cli/flag_table.h"
#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/nested_launch.h"
#include "pdlaunch/base/version.h"

namespace pdlaunch {

namespace {

using flags::FlagSpec;
using flags::Kind;

// --- Help text, laid out as argparse's HelpFormatter does for an 80-column terminal. ---

constexpr size_t kHelpWidth = 78;   // argparse: terminal columns - 2.
constexpr size_t kHelpColumn = 24;  // argparse: max_help_position.
constexpr std::string_view kUsagePrefix = "usage: launch ";

constexpr std::string_view kDescription =
    "Start a distributed training job: one process per device (or --nproc_per_node), with "
    "Paddle's and PyTorch's environment variables, supervised until every process is done.\n"
    "Flags may also come from their environment twins (PADDLE_NNODES, PADDLE_MASTER, ...; "
    "a flag on the command line wins). Documentation: below, after the exit codes.\n"
    "\n"
    "Examples:\n"
    "  launch --gpus 0,1 train.py --lr 0.1\n"
    "                        one node, one process per GPU\n"
    "  launch --ips 10.0.0.1,10.0.0.2 --gpus 0,1 train.py\n"
    "                        the same command on every node of the list\n"
    "  launch --master 10.0.0.1:8090 --nnodes 2 --devices 0,1 train.py\n"
    "                        the same command on each node: they meet at the master\n"
    "  srun -N2 --ntasks-per-node=1 launch train.py\n"
    "                        inside a Slurm allocation: the nodes come from Slurm\n"
    "  launch --dry_run --gpus 0,1 train.py\n"
    "                        what a run would do, as JSON; nothing is started\n";

constexpr std::string_view kScriptHelp =
    "The full path to the single GPU training program/script to be launched in parallel, "
    "followed by all the arguments for the training script";

// argparse's default metavar: the destination in upper case.
std::string Metavar(const FlagSpec& flag) { return AsciiUpper(flag.dest); }

// "--log_dir LOG_DIR", "-h, --help", "--force [FORCE]": what CLI11 was told of the option.
std::string Invocation(const CLI::Option& option) {
  std::string name = option.get_name();
  if (option.get_snames().size() == 1) return fmt::format("-{}, {}", option.get_snames()[0], name);
  if (option.get_items_expected_max() == 0) return name;
  if (option.get_items_expected_min() == 0) {
    return fmt::format("{} [{}]", name, option.get_option_text());
  }
  return fmt::format("{} {}", name, option.get_option_text());
}

// Greedy word wrap of `text` into lines of at most `width` (longer words stay whole).
std::vector<std::string> Wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(' ', start), text.size());
    const std::string_view word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    line += line.empty() ? "" : " ";
    line += word;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

// One entry of a group: invocation at column 2, help from column 24.
std::string HelpEntry(std::string_view invocation, std::string_view help) {
  const std::vector<std::string> lines = Wrap(help, kHelpWidth - kHelpColumn);
  std::string out = fmt::format("  {}", invocation);
  const bool same_line = invocation.size() + 4 <= kHelpColumn && !lines.empty();
  if (same_line) out += std::string(kHelpColumn - 2 - invocation.size(), ' ');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0 || !same_line) out += "\n" + std::string(kHelpColumn, ' ');
    out += lines[i];
  }
  return out + "\n";
}

std::vector<std::string> UsageParts(const CLI::App& app) {
  std::vector<std::string> parts;
  for (const CLI::Option* option : app.get_options()) {
    const std::string invocation =
        option->get_snames().empty() ? Invocation(*option) : "-" + option->get_snames()[0];
    parts.push_back(fmt::format("[{}]", invocation));
  }
  parts.emplace_back("training_script");
  parts.emplace_back("...");
  return parts;
}

std::string Usage(const CLI::App& app) {
  const std::string indent(kUsagePrefix.size(), ' ');
  std::string out(kUsagePrefix);
  size_t column = out.size();
  bool first = true;
  for (const std::string& part : UsageParts(app)) {
    if (!first && column + 1 + part.size() > kHelpWidth) {
      out += "\n" + indent;
      column = indent.size();
    } else if (!first) {
      out += ' ';
      ++column;
    }
    out += part;
    column += part.size();
    first = false;
  }
  return out + "\n";
}

constexpr std::string_view kEpilog = R"(
Environment (besides the flags' twins above):
  CUDA_VISIBLE_DEVICES      the GPUs --devices/--gpus labels refer to
  XPU_VISIBLE_DEVICES       the Kunlun XPUs (--xpus, --devices) labels refer to
  PADDLE_XCCL_BACKEND=TYPE  a custom device (npu, mlu, gcu, ...), labels of
                            TYPE_VISIBLE_DEVICES (docs/cli.md, "Devices")
  POD_IP                    this node's address (as --host)
  FLAGS_START_PORT, PADDLE_START_PORT
                            fixed first port (after --start_port)
  PADDLE_TRAINERS, PADDLE_TRAINER_ID, ...
                            PaddleCloud's cluster description (docs/multi-node.md)
  PADDLE_LAUNCH_PYTHON      the interpreter of a .py script (default: python3 on PATH)

Exit codes:
  0        every process exited 0 (on every node, with --master)
  1        set-up error (script not found, busy port, ...), a lost node or master,
           or a rendezvous that timed out
  2        a usage error: one line names the bad token; nothing was started
  3, 101   an elastic job failed for good (--np N:M, --np N)
  130/143  the launcher got SIGINT/SIGTERM (a second one kills at once)
  N        any other code: a process exited with N (128+S: killed by signal S); with
           --master, every node exits with the failing process's code

Documentation (docs/ in the source tree; /usr/share/doc/pdlaunch/ where the Debian package is
installed, with README.md and examples/): cli.md (every flag), master.md (several hosts, no IP
list), multi-node.md (--ips), ps.md, elastic.md, exit-codes.md.
)";

// CLI11's extension point for help: argparse's layout (usage, description, the groups in the
// table's order with their descriptions, the environment and exit codes), from the App's own
// declarations (names, groups, descriptions, option texts).
class ArgparseFormatter : public CLI::FormatterBase {
 public:
  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    std::string out = Usage(*app);
    out += fmt::format("\n{}", kDescription);
    for (const flags::Group& group : flags::Groups()) out += Group(*app, group);
    out += kEpilog;
    return out;
  }

 private:
  static std::string Group(const CLI::App& app, const flags::Group& group) {
    std::string out = fmt::format("\n{}:\n", group.name);
    for (const std::string& line : Wrap(group.description, kHelpWidth - 2)) {
      out += fmt::format("  {}\n", line);
    }
    if (!group.description.empty()) out += "\n";
    for (const CLI::Option* option : app.get_options()) {
      if (option->get_group() != group.name) continue;
      out += HelpEntry(Invocation(*option), option->get_description());
    }
    if (group.name == flags::Groups()[1].name) {
      out += HelpEntry("training_script", kScriptHelp);
      out += HelpEntry("training_script_args", "");
    }
    return out;
  }
};

// argparse's `choices` for a flag whose value Paddle's parser checks at every occurrence; the
// message is the rest of argparse's line after "argument --flag: ".
CLI::Validator Choices(std::vector<std::string_view> choices) {
  return CLI::Validator(
      [choices = std::move(choices)](std::string& value) -> std::string {
        if (std::find(choices.begin(), choices.end(), value) != choices.end()) return {};
        std::vector<std::string> quoted;
        for (std::string_view choice : choices) quoted.push_back(fmt::format("'{}'", choice));
        return fmt::format("invalid choice: '{}' (choose from {})", OneLine(value),
                           fmt::join(quoted, ", "));
      },
      "");
}

// One CLI11 option per row of the table, in its order, each with its own group, description
// and metavar, so that --help is CLI11's view of its declarations. Aliases are options of their
// own (an alias has its own help line and group, as in Paddle) that store into one field: a
// flag whose value argparse converts is stored as it is read (trigger_on_parse), so that every
// occurrence is checked and the last one typed, under any alias, wins, as argparse's "store";
// a value argparse keeps as a string is stored once, the last one (TakeLast).
//
// `named`: declare only the rows whose names the command line uses (the layer has resolved every
// token to a row; anything else would be refused before CLI11 runs), or every row (nullptr, for
// --help and the usage line). CLI11 checks each new option's names against every option before
// it (`Option::matching_name`, which copies both name lists): 58 options cost a job 0.16 ms,
// the five of a typical command line a few microseconds.
void Declare(CLI::App& app, LaunchOptions& options,
             const std::vector<std::string_view>* named = nullptr) {
  app.formatter(std::make_shared<ArgparseFormatter>());
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  for (const FlagSpec& spec : flags::All()) {
    if (named != nullptr && spec.kind != Kind::kHelp &&
        std::find(named->begin(), named->end(), spec.name) == named->end()) {
      continue;
    }
    const std::string help =
        spec.env.empty() ? std::string(spec.help) : fmt::format("{} [env {}]", spec.help, spec.env);
    CLI::Option* option = nullptr;
    switch (spec.kind) {
      case Kind::kHelp:
        option = app.set_help_flag("-h," + std::string(spec.name), help);
        break;
      case Kind::kVersion:
        option = app.set_version_flag(
            std::string(spec.name),
            fmt::format("launch (pdlaunch) {}\ncommit {}\n", kVersion, BuildCommit()), help);
        break;
      case Kind::kFlag:
        option = app.add_flag_callback(
            std::string(spec.name), [&options, &spec] { spec.store(options, spec.name, ""); },
            help);
        break;
      case Kind::kOptionalBool:
      case Kind::kValue:
        option = app.add_option(
            std::string(spec.name),
            [&options, &spec](const CLI::results_t& results) {
              spec.store(options, spec.name, results.back());
              return true;
            },
            help);
        option->option_text(Metavar(spec));
        if (spec.kind == Kind::kOptionalBool) option->expected(0, 1);
        option->trigger_on_parse(!flags::IsStringDest(spec.dest));
        break;
    }
    option->group(std::string(spec.group));
    // --run_mode's store keeps the text (plan/ps.h's SelectMode checks the value in force, the
    // environment twin's too); argparse checks every occurrence on the command line.
    if (spec.dest == "run_mode") option->check(Choices({kRunModes.begin(), kRunModes.end()}));
  }
}

// What CLI11 saw, for the rest of the launcher: the destinations given, the name each was typed
// as last, the flags of today's interface.
void RecordGiven(const CLI::App& app, LaunchOptions& options) {
  for (const CLI::Option* option : app.parse_order()) {
    const FlagSpec* spec = flags::Find(option->get_name());
    if (spec == nullptr) continue;
    options.given.insert(std::string(spec->dest));
    options.typed[std::string(spec->dest)] = std::string(spec->name);
    if (spec->tier == flags::Tier::kNew) options.new_flags.insert(std::string(spec->name));
  }
}

// Runs CLI11 over the layer's tokens. Returns the text of --help or --version, if asked.
// `exit_request`: the tokens are one -h/--help/--version; the help text needs every declaration.
std::optional<std::string> ParseLauncherOptions(std::vector<std::string> tokens, bool exit_request,
                                                LaunchOptions& options) {
  std::vector<std::string_view> named;  // The flags the tokens name, "--name[=value]".
  for (const std::string& token : tokens) {
    if (token.starts_with("--"))
      named.push_back(std::string_view(token).substr(0, token.find('=')));
  }
  CLI::App app("", "launch");
  const bool help = exit_request && tokens.front() != "--version";
  Declare(app, options, help ? nullptr : &named);
  std::reverse(tokens.begin(), tokens.end());  // CLI11 takes a vector last token first.
  try {
    app.parse(tokens);
  } catch (const CLI::CallForHelp&) {
    return app.help();
  } catch (const CLI::CallForVersion& version) {
    return std::string(version.what());
  } catch (const CLI::ValidationError& error) {
    throw UsageError(fmt::format("argument {}", error.what()));
  } catch (const CLI::ParseError& error) {
    // The layer hands CLI11 only declared flags with their values; a CLI11 refusal past it is
    // still a usage error, in CLI11's words.
    throw UsageError(error.what());
  }
  RecordGiven(app, options);
  return std::nullopt;
}

// Paddle's own check of the backend (of the value in force only).
void ValidateBackend(const LaunchOptions& options) {
  if (std::find(kBackends.begin(), kBackends.end(), options.backend) == kBackends.end()) {
    throw UsageError(fmt::format(
        "paddle.distributed initialize error, backend argument can only be one of 'nccl', "
        "'gloo', 'bkcl', 'auto', 'heter', 'xccl' but got {}",
        options.backend));
  }
}

// Paddle 3's test plugin (plugins/__init__.py, test_mode): today's launcher, at least two
// nodes, so that `launch run_check` on each node is a barrier until they meet.
void ApplyRunCheck(LaunchOptions& options) {
  options.new_flags.insert(std::string(kRunCheck));
  const std::string nnodes = options.nnodes.value_or("1");
  int count = 0;
  const auto [end, ec] = std::from_chars(nnodes.data(), nnodes.data() + nnodes.size(), count);
  if (nnodes.find(':') == std::string::npos && (ec != std::errc() || count < 2)) {
    options.nnodes = "2";
    options.given.insert("nnodes");
  }
}

}  // namespace

CommandLine ParseArguments(const std::vector<std::string>& args) {
  argparse::LauncherArgs split = argparse::Split(args);
  CommandLine command_line;
  LaunchOptions& options = command_line.options;
  command_line.exit_text =
      ParseLauncherOptions(std::move(split.tokens), split.exit_request, options);
  if (command_line.exit_text) return command_line;
  if (split.script >= args.size()) throw UsageError(std::string(kMissingScript));
  options.training_script = args[split.script];
  options.training_script_args.assign(args.begin() + static_cast<std::ptrdiff_t>(split.script) + 1,
                                      args.end());
  if (options.training_script == kRunCheck) ApplyRunCheck(options);
  if (options.training_script == "-m" && options.training_script_args.empty()) {
    throw UsageError(
        "argument -m: expected a module name (launch [options] -m package.module "
        "[args ...])");
  }
  ValidateBackend(options);
  return command_line;
}

std::vector<std::string> WithoutOptions(const std::vector<std::string>& args,
                                        std::initializer_list<std::string_view> dests) {
  std::vector<std::string> kept;
  size_t index = 0;
  while (index < args.size() && args[index] != "--" && argparse::LooksLikeOption(args[index])) {
    std::vector<std::string> tokens;
    const FlagSpec* flag = nullptr;
    const size_t next = argparse::ReadOption(args, index, tokens, flag);
    const bool drop = std::find(dests.begin(), dests.end(), flag->dest) != dests.end();
    if (!drop) kept.insert(kept.end(), args.begin() + index, args.begin() + next);
    index = next;
  }
  kept.insert(kept.end(), args.begin() + index, args.end());
  return kept;
}

CommandLine ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine command_line = ParseArguments(args);
  if (!command_line.exit_text) RejectUnsupportedOptions(command_line.options);
  return command_line;
}

void RejectUnsupportedOptions(const LaunchOptions& options) {
  for (const FlagSpec& flag : flags::All()) {
    if (flags::IsPrimary(flag) && !flag.refused.empty() &&
        options.WasGiven(std::string(flag.dest))) {
      throw UsageError(fmt::format("{} is not supported yet ({})",
                                   options.FlagName(std::string(flag.dest)), flag.refused));
    }
  }
  // Paddle's launcher turns the script name "ipu" into a poprun command line (its IPU
  // controller); running a program of that name instead would be a different job.
  if (options.training_script == "ipu") {
    throw UsageError(
        "ipu: Graphcore IPU jobs (Paddle's poprun controller) are not supported: run poprun "
        "directly");
  }
}

std::vector<std::string> ApplyEnvironmentTwins(LaunchOptions& options, const EnvMap& env) {
  std::vector<std::string> notes;
  const bool nested = env.count(std::string(kNestedMarker)) != 0;
  for (const FlagSpec& flag : flags::All()) {
    if (flag.env.empty() || options.WasGiven(std::string(flag.dest))) continue;
    const auto it = env.find(std::string(flag.env));
    if (it == env.end() || StripSpace(it->second).empty()) continue;
    if (nested && IsSetForRanks(flag.env)) {
      notes.push_back(
          fmt::format("{} is inherited from the job that started this launcher: "
                      "ignored (pass --{} to set it)",
                      flag.env, flag.dest));
      continue;
    }
    if (flag.kind == Kind::kFlag) {
      if (flags::ToBool(flag.env, it->second)) flag.store(options, flag.env, it->second);
    } else {
      flag.store(options, flag.env, it->second);
    }
    options.given.insert(std::string(flag.dest));
    options.from_env.insert(std::string(flag.dest));
    options.typed[std::string(flag.dest)] = std::string(flag.env);  // Checks name the variable.
  }
  // Not a twin, but read for the node's rank (docs/master.md): ignored too, and said.
  if (const auto it = env.find("PADDLE_TRAINER_ID");
      nested && it != env.end() && !StripSpace(it->second).empty()) {
    notes.push_back(
        "PADDLE_TRAINER_ID is inherited from the job that started this launcher: ignored (pass "
        "--rank to set this node's rank)");
  }
  return notes;
}

std::string UsageText() {
  LaunchOptions options;
  CLI::App app("", "launch");
  Declare(app, options);
  return Usage(app);
}

std::string ResolveOptionName(std::string_view prefix) {
  return std::string(argparse::Resolve(prefix, prefix).name);
}

std::vector<FlagInfo> ListFlags() {
  std::vector<FlagInfo> flags;
  for (const flags::Group& group : flags::Groups()) {
    for (const FlagSpec& spec : flags::All()) {
      if (spec.group != group.name) continue;
      FlagInfo& flag = flags.emplace_back();
      flag.name = spec.name;
      flag.dest = spec.dest;
      flag.help = spec.help;
      flag.env = spec.env;
      flag.supported = spec.refused.empty();
      switch (spec.kind) {
        case Kind::kValue:
          flag.value = FlagInfo::Value::kRequired;
          break;
        case Kind::kOptionalBool:
          flag.value = FlagInfo::Value::kOptionalBool;
          flag.choices = {"true", "false"};
          break;
        case Kind::kFlag:
        case Kind::kHelp:
        case Kind::kVersion:
          break;
      }
      if (spec.dest == "run_mode") flag.choices.assign(kRunModes.begin(), kRunModes.end());
      if (spec.dest == "backend") flag.choices.assign(kBackends.begin(), kBackends.end());
      if (spec.dest == "log_level") flag.choices.assign(kLogLevels.begin(), kLogLevels.end());
    }
  }
  return flags;
}

std::string HelpText() {
  LaunchOptions options;
  CLI::App app("", "launch");
  Declare(app, options);
  return app.help();
}

}  // namespace pdlaunch
