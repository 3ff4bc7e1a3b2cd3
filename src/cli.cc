#include "pdlaunch/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pdlaunch/endpoint.h"
#include "pdlaunch/errors.h"
#include "pdlaunch/version.h"

namespace pdlaunch {

namespace {

enum class Kind {
  kValue,         // --opt VALUE, --opt=VALUE
  kFlag,          // --opt
  kOptionalBool,  // --opt, --opt=BOOL, --opt BOOL (BOOL one of true/false/1/0)
  kHelp,
  kVersion,
};

// Converts and stores one value; `flag` is the option's primary name, for messages.
using Store = void (*)(LaunchOptions& options, std::string_view flag, const std::string& value);

struct FlagSpec {
  std::string_view name;  // Long name as typed, "--gpus".
  std::string_view dest;  // argparse destination, shared by aliases.
  Kind kind;
  // Declared by Paddle's launcher. A prefix that matches exactly one Paddle flag means that flag
  // even if it also matches one of pdlaunch's additions, so Paddle command lines keep working.
  bool paddle;
  Store store;               // nullptr for --help and --version.
  std::string_view group;    // Help section.
  std::string_view help;     // Empty: no help text.
  std::string_view refused;  // Non-empty: not supported yet; the reason in parentheses.
};

[[noreturn]] void ThrowInvalid(std::string_view flag, std::string_view type,
                               const std::string& value, std::string_view hint = "") {
  throw UsageError(fmt::format("argument {}: invalid {} value: '{}'{}", flag, type, value, hint));
}

// Python's int() for decimal text: surrounding whitespace and a leading '+' allowed. Unlike
// CLI11's own conversion, "010" is ten (not octal) and "0x10" is an error, as in argparse.
int ToInt(std::string_view flag, const std::string& value) {
  std::string_view text = StripSpace(value);
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  int number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    ThrowInvalid(flag, "int", value);
  }
  return number;
}

int ToPort(std::string_view flag, const std::string& value) {
  const int port = ToInt(flag, value);
  if (port < 1 || port > 65535) ThrowInvalid(flag, "port", value, " (expected 1..65535)");
  return port;
}

double ToSeconds(std::string_view flag, const std::string& value) {
  const std::string_view text = StripSpace(value);
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(seconds) || seconds < 0) {
    ThrowInvalid(flag, "non-negative float", value);
  }
  return seconds;
}

std::string ToLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

bool IsBoolLiteral(std::string_view text) {
  const std::string lower = ToLower(text);
  return lower == "true" || lower == "false" || lower == "1" || lower == "0";
}

// Paddle's type=bool made "--force False" true (contract §9 bug 6); this reads the word.
bool ToBool(std::string_view flag, const std::string& value) {
  if (!IsBoolLiteral(value)) ThrowInvalid(flag, "bool", value, " (use true, false, 1 or 0)");
  const std::string lower = ToLower(value);
  return lower == "true" || lower == "1";
}

template <auto Field>
void StoreText(LaunchOptions& options, std::string_view, const std::string& value) {
  options.*Field = value;
}

template <auto Field>
void StoreInt(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.*Field = ToInt(flag, value);
}

void StoreStartPort(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.start_port = ToPort(flag, value);
}

void StoreGrace(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.grace = ToSeconds(flag, value);
}

void StoreForce(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.force = ToBool(flag, value);
}

void StoreLogOverwrite(LaunchOptions& options, std::string_view, const std::string&) {
  options.log_overwrite = true;
}

constexpr std::string_view kOptionalGroup = "optional arguments";
constexpr std::string_view kBaseGroup = "Base Parameters";
constexpr std::string_view kCollectiveGroup = "Collective Parameters";
constexpr std::string_view kPsGroup = "Parameter-Server Parameters";
constexpr std::string_view kElasticGroup = "Elastic Parameters";
constexpr std::string_view kOwnGroup = "pdlaunch Parameters";

constexpr std::string_view kXpu = "XPU devices";

using LO = LaunchOptions;

// Every option, in Paddle's declaration order (contract §1.2), then pdlaunch's own.
const std::array<FlagSpec, 30> kFlags = {{
    {"--help", "help", Kind::kHelp, true, nullptr, kOptionalGroup,
     "show this help message and exit", ""},
    {"--version", "version", Kind::kVersion, false, nullptr, kOptionalGroup,
     "show program's version number and exit", ""},
    {"--log_dir", "log_dir", Kind::kValue, true, &StoreText<&LO::log_dir>, kBaseGroup,
     "The path for each process's log. Default --log_dir=log/", ""},
    {"--backend", "backend", Kind::kValue, true, &StoreText<&LO::backend>, kBaseGroup,
     "Specifize the backend, can be gloo|nccl|bkcl|auto. Default value is auto which perfers "
     "nccl or bkcl.",
     ""},
    {"--nproc_per_node", "nproc_per_node", Kind::kValue, true, &StoreInt<&LO::nproc_per_node>,
     kBaseGroup,
     "The number of processes to launch on a node.In gpu training, it should be less or equal to "
     "the gpus number of you system(or you set by --gpus). And so each process can bound to one "
     "or average number of gpus.",
     ""},
    {"--run_mode", "run_mode", Kind::kValue, true, &StoreText<&LO::run_mode>, kBaseGroup,
     "run mode of job, can be:collective/ps/ps-heter", ""},
    {"--gpus", "gpus", Kind::kValue, true, &StoreText<&LO::gpus>, kBaseGroup,
     "It's for gpu training.For example:--gpus=\"0,1,2,3\" will launch four training processes "
     "each bound to one gpu.",
     ""},
    {"--selected_gpus", "gpus", Kind::kValue, true, &StoreText<&LO::gpus>, kBaseGroup,
     "Deprecated alias of --gpus.", ""},
    {"--xpus", "xpus", Kind::kValue, true, &StoreText<&LO::xpus>, kBaseGroup,
     "It's for xpu training. For example: --xpus=\"0,1,2,3\" will launch four training processes "
     "each bound to one xpu.",
     kXpu},
    {"--selected_xpus", "xpus", Kind::kValue, true, &StoreText<&LO::xpus>, kBaseGroup,
     "Deprecated alias of --xpus.", kXpu},
    {"--ips", "ips", Kind::kValue, true, &StoreText<&LO::ips>, kCollectiveGroup,
     "Paddle cluster nodes ips, such as 192.168.0.16,192.168.0.17..", ""},
    {"--servers", "servers", Kind::kValue, true, &StoreText<&LO::servers>, kPsGroup,
     "User defined servers ip:port", ""},
    {"--workers", "workers", Kind::kValue, true, &StoreText<&LO::workers>, kPsGroup,
     "User defined workers ip:port", ""},
    {"--heter_workers", "heter_workers", Kind::kValue, true, &StoreText<&LO::heter_workers>,
     kPsGroup, "User defined heter workers in each stage ip1:port1;ip2:port2", ""},
    {"--heter_devices", "heter_devices", Kind::kValue, true, &StoreText<&LO::heter_devices>,
     kPsGroup, "User defined heter devices in each stage cpu;gpu;cpu", ""},
    {"--worker_num", "worker_num", Kind::kValue, true, &StoreInt<&LO::worker_num>, kPsGroup,
     "number of workers", ""},
    {"--server_num", "server_num", Kind::kValue, true, &StoreInt<&LO::server_num>, kPsGroup,
     "number of servers", ""},
    {"--heter_worker_num", "heter_worker_num", Kind::kValue, true,
     &StoreText<&LO::heter_worker_num>, kPsGroup, "number of heter_workers in each stage 1;2;3",
     ""},
    {"--http_port", "http_port", Kind::kValue, true, &StoreInt<&LO::http_port>, kPsGroup,
     "Gloo http Port", ""},
    {"--elastic_server", "elastic_server", Kind::kValue, true, &StoreText<&LO::elastic_server>,
     kElasticGroup, "etcd server host:port", ""},
    {"--job_id", "job_id", Kind::kValue, true, &StoreText<&LO::job_id>, kElasticGroup,
     "job unique id", ""},
    {"--np", "np", Kind::kValue, true, &StoreText<&LO::np>, kElasticGroup, "job pod/node number",
     ""},
    {"--scale", "scale", Kind::kValue, true, &StoreInt<&LO::scale>, kElasticGroup, "scale np", ""},
    {"--host", "host", Kind::kValue, true, &StoreText<&LO::host>, kElasticGroup,
     "bind host, default to POD_IP env", ""},
    {"--force", "force", Kind::kOptionalBool, true, &StoreForce, kElasticGroup, "update np force",
     ""},
    {"--elastic_pre_hook", "elastic_pre_hook", Kind::kValue, true,
     &StoreText<&LO::elastic_pre_hook>, kElasticGroup, "elastic pre_hook shell cmd", ""},
    {"--max_restart", "max_restart", Kind::kValue, true, &StoreInt<&LO::max_restart>, kElasticGroup,
     "restart budget of the elastic controller", ""},
    {"--start_port", "start_port", Kind::kValue, false, &StoreStartPort, kOwnGroup,
     "First port of the trainers' fixed ports; takes precedence over env FLAGS_START_PORT, "
     "which takes precedence over env PADDLE_START_PORT.",
     ""},
    {"--log_overwrite", "log_overwrite", Kind::kFlag, false, &StoreLogOverwrite, kOwnGroup,
     "Truncate the workerlog.N files instead of appending to them.", ""},
    {"--grace", "grace", Kind::kValue, false, &StoreGrace, kOwnGroup,
     "Seconds between SIGTERM and SIGKILL when the trainers are stopped. Default 5.", ""},
}};

bool IsPrimary(const FlagSpec& flag) { return flag.name.substr(2) == flag.dest; }

[[noreturn]] void ThrowUnrecognized(std::string_view token) {
  throw UsageError(fmt::format("unrecognized arguments: {}", token));
}

std::string JoinNames(const std::vector<const FlagSpec*>& flags) {
  std::string joined;
  for (const FlagSpec* flag : flags) {
    joined += joined.empty() ? "" : ", ";
    joined += flag->name;
  }
  return joined;
}

// argparse's abbreviation rule: an exact name wins, else a unique prefix (see FlagSpec::paddle).
const FlagSpec& ResolveFlag(std::string_view name, std::string_view token) {
  std::vector<const FlagSpec*> paddle;
  std::vector<const FlagSpec*> own;
  for (const FlagSpec& flag : kFlags) {
    if (flag.name == name) return flag;
    if (name.size() > 2 && flag.name.starts_with(name)) {
      (flag.paddle ? paddle : own).push_back(&flag);
    }
  }
  const std::vector<const FlagSpec*>& matches = paddle.empty() ? own : paddle;
  if (matches.empty()) ThrowUnrecognized(token);
  if (matches.size() > 1) {
    throw UsageError(fmt::format("ambiguous option: {} could match {}", name, JoinNames(matches)));
  }
  return *matches.front();
}

// argparse's test for a positional that starts with '-': "-1", "-.5", "-2.5".
bool IsNegativeNumber(std::string_view token) {
  if (token.size() < 2 || token.front() != '-') return false;
  const std::string_view rest = token.substr(1);
  const size_t dot = rest.find('.');
  const auto all_digits = [](std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos) return all_digits(rest);
  return all_digits(rest.substr(0, dot)) && dot + 1 < rest.size() &&
         all_digits(rest.substr(dot + 1));
}

bool LooksLikeOption(std::string_view token) {
  return token.size() > 1 && token.front() == '-' && !IsNegativeNumber(token);
}

// The launcher's part of argv after prefix expansion, in a form CLI11 parses unambiguously.
struct Scan {
  std::vector<std::string> cli11_args;
  std::set<std::string> given;
  std::optional<Kind> exit_request;  // kHelp or kVersion.
  size_t script = 0;                 // Index of the training script in argv.
};

void Emit(const FlagSpec& flag, const std::string& value, Scan& scan) {
  // "--opt=" is refused by CLI11, and a value like "--x" must not look like an option to it.
  if (value.empty()) {
    scan.cli11_args.insert(scan.cli11_args.end(), {std::string(flag.name), ""});
  } else {
    scan.cli11_args.push_back(fmt::format("{}={}", flag.name, value));
  }
  scan.given.insert(std::string(flag.dest));
}

void RequireNoValue(const FlagSpec& flag, const std::optional<std::string>& value) {
  if (!value) return;
  const std::string_view names = flag.kind == Kind::kHelp ? "-h/--help" : flag.name;
  throw UsageError(fmt::format("argument {}: ignored explicit argument '{}'", names, *value));
}

// Returns the value of a kValue option: after '=', or the next token unless it is an option.
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
  if (index + 1 < args.size() && IsBoolLiteral(args[index + 1])) return args[++index];
  return "true";
}

// Scans the option at args[index]; returns the index of the next token.
size_t ScanOption(const std::vector<std::string>& args, size_t index, Scan& scan) {
  const std::string& token = args[index];
  if (token == "-h") {
    scan.exit_request = Kind::kHelp;
    return index + 1;
  }
  if (!token.starts_with("--")) ThrowUnrecognized(token);
  const size_t equals = token.find('=');
  std::optional<std::string> explicit_value;
  if (equals != std::string::npos) explicit_value = token.substr(equals + 1);
  const FlagSpec& flag = ResolveFlag(std::string_view(token).substr(0, equals), token);
  switch (flag.kind) {
    case Kind::kHelp:
    case Kind::kVersion:
      RequireNoValue(flag, explicit_value);
      scan.exit_request = flag.kind;
      break;
    case Kind::kFlag:
      RequireNoValue(flag, explicit_value);
      scan.cli11_args.emplace_back(flag.name);
      scan.given.insert(std::string(flag.dest));
      break;
    case Kind::kOptionalBool:
      Emit(flag, TakeOptionalBool(explicit_value, args, index), scan);
      break;
    case Kind::kValue:
      Emit(flag, TakeValue(flag, explicit_value, args, index), scan);
      break;
  }
  return index + 1;
}

// Splits argv into launcher options and the training command (contract §1.1).
Scan ScanArguments(const std::vector<std::string>& args) {
  Scan scan;
  size_t index = 0;
  while (index < args.size() && !scan.exit_request) {
    if (args[index] == "--") {
      ++index;
      break;
    }
    if (!LooksLikeOption(args[index])) break;
    index = ScanOption(args, index, scan);
  }
  scan.script = index;
  return scan;
}

// Binds every option of kFlags to `options` (aliases share one CLI11 option, last one wins).
void AddLaunchOptions(CLI::App& app, LaunchOptions& options) {
  for (const FlagSpec& flag : kFlags) {
    if (!IsPrimary(flag) || flag.store == nullptr) continue;
    std::string names(flag.name);
    for (const FlagSpec& alias : kFlags) {
      if (alias.dest == flag.dest && !IsPrimary(alias)) names += fmt::format(",{}", alias.name);
    }
    const FlagSpec* spec = &flag;
    if (flag.kind == Kind::kFlag) {
      app.add_flag_callback(names, [&options, spec] { spec->store(options, spec->name, ""); });
    } else {
      app.add_option_function<std::string>(names, [&options, spec](const std::string& value) {
        spec->store(options, spec->name, value);
      });
    }
  }
}

void BindOptions(std::vector<std::string> cli11_args, LaunchOptions& options) {
  CLI::App app("", "launch");
  app.set_help_flag();  // -h/--help are found by ScanArguments, with argparse's rules.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  AddLaunchOptions(app, options);
  std::reverse(cli11_args.begin(), cli11_args.end());  // CLI11 takes argv reversed.
  try {
    app.parse(cli11_args);
  } catch (const CLI::ParseError& error) {
    throw UsageError(error.what());
  }
}

bool IsOneOf(std::string_view value, std::initializer_list<std::string_view> choices) {
  return std::find(choices.begin(), choices.end(), value) != choices.end();
}

void ValidateChoices(const LaunchOptions& options) {
  if (options.run_mode && !IsOneOf(*options.run_mode, {"collective", "ps", "ps-heter"})) {
    throw UsageError(fmt::format(
        "argument --run_mode: invalid choice: '{}' (choose from 'collective', 'ps', 'ps-heter')",
        *options.run_mode));
  }
  if (!IsOneOf(options.backend, {"nccl", "gloo", "bkcl", "auto"})) {
    throw UsageError(fmt::format(
        "paddle.distributed initialize error, backend argument can only be one of 'nccl', "
        "'gloo', 'bkcl', 'auto', but got {}",
        options.backend));
  }
}

// --- Help text, laid out as argparse's HelpFormatter does for an 80-column terminal. ---

constexpr size_t kHelpWidth = 78;   // argparse: terminal columns - 2.
constexpr size_t kHelpColumn = 24;  // argparse: max_help_position.
constexpr std::string_view kUsagePrefix = "usage: launch ";

constexpr std::string_view kDescription =
    "start paddle training using multi-process mode.\n"
    "see: http://www.paddlepaddle.org/documentation/docs/zh/1.6/user_guides/howto/training/"
    "cluster_howto.html#permalink-8--nccl2-\n";

constexpr std::string_view kScriptHelp =
    "The full path to the single GPU training program/script to be launched in parallel, "
    "followed by all the arguments for the training script";

struct GroupInfo {
  std::string_view name;
  std::string_view description;
};

const std::array<GroupInfo, 6> kGroups = {{
    {kOptionalGroup, ""},
    {kBaseGroup, ""},
    {kCollectiveGroup, ""},
    {kPsGroup, "Parameter-server jobs: servers, workers and heter workers (docs/ps.md)."},
    {kElasticGroup,
     "Elastic and fault-tolerant jobs coordinated through etcd (docs/elastic.md). --host also "
     "selects this node in --ips in collective mode."},
    {kOwnGroup, "Options of pdlaunch that Paddle's launcher does not have."},
}};

// argparse's default metavar: the destination in upper case.
std::string Metavar(const FlagSpec& flag) {
  std::string upper(flag.dest);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

// "--log_dir LOG_DIR", "-h, --help", "--force [FORCE]".
std::string Invocation(const FlagSpec& flag) {
  switch (flag.kind) {
    case Kind::kHelp:
      return "-h, --help";
    case Kind::kVersion:
    case Kind::kFlag:
      return std::string(flag.name);
    case Kind::kOptionalBool:
      return fmt::format("{} [{}]", flag.name, Metavar(flag));
    case Kind::kValue:
      break;
  }
  return fmt::format("{} {}", flag.name, Metavar(flag));
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

std::string HelpGroup(const GroupInfo& group) {
  std::string out = fmt::format("\n{}:\n", group.name);
  for (const std::string& line : Wrap(group.description, kHelpWidth - 2)) {
    out += fmt::format("  {}\n", line);
  }
  if (!group.description.empty()) out += "\n";
  for (const FlagSpec& flag : kFlags) {
    if (flag.group == group.name) out += HelpEntry(Invocation(flag), flag.help);
  }
  if (group.name == kBaseGroup) {
    out += HelpEntry("training_script", kScriptHelp);
    out += HelpEntry("training_script_args", "");
  }
  return out;
}

std::vector<std::string> UsageParts() {
  std::vector<std::string> parts;
  for (const FlagSpec& flag : kFlags) {
    const std::string invocation = flag.kind == Kind::kHelp ? std::string("-h") : Invocation(flag);
    parts.push_back(fmt::format("[{}]", invocation));
  }
  parts.emplace_back("training_script");
  parts.emplace_back("...");
  return parts;
}

}  // namespace

CommandLine ParseArguments(const std::vector<std::string>& args) {
  Scan scan = ScanArguments(args);
  CommandLine command_line;
  if (scan.exit_request) {
    command_line.exit_text = *scan.exit_request == Kind::kHelp
                                 ? HelpText()
                                 : fmt::format("launch (pdlaunch) {}\n", kVersion);
    return command_line;
  }
  LaunchOptions& options = command_line.options;
  BindOptions(scan.cli11_args, options);
  if (scan.script >= args.size()) {
    throw UsageError("the following arguments are required: training_script, training_script_args");
  }
  options.given = std::move(scan.given);
  options.training_script = args[scan.script];
  options.training_script_args.assign(args.begin() + static_cast<std::ptrdiff_t>(scan.script) + 1,
                                      args.end());
  ValidateChoices(options);
  return command_line;
}

CommandLine ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine command_line = ParseArguments(args);
  if (!command_line.exit_text) RejectUnsupportedOptions(command_line.options);
  return command_line;
}

void RejectUnsupportedOptions(const LaunchOptions& options) {
  for (const FlagSpec& flag : kFlags) {
    if (IsPrimary(flag) && !flag.refused.empty() && options.WasGiven(std::string(flag.dest))) {
      throw UsageError(fmt::format("{} is not supported yet ({})", flag.name, flag.refused));
    }
  }
  if (options.backend == "bkcl") {
    throw UsageError(fmt::format("--backend=bkcl is not supported yet ({})", kXpu));
  }
}

std::string UsageText() {
  const std::string indent(kUsagePrefix.size(), ' ');
  std::string out(kUsagePrefix);
  size_t column = out.size();
  bool first = true;
  for (const std::string& part : UsageParts()) {
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

std::string HelpText() {
  std::string out = UsageText();
  out += fmt::format("\n{}", kDescription);
  for (const GroupInfo& group : kGroups) out += HelpGroup(group);
  return out;
}

}  // namespace pdlaunch
