#include "pdlaunch/options/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <system_error>
#include <utility>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {

bool UsesNewInterface(const LaunchOptions& options) {
  if (options.legacy) return false;
  // --job_id is also the legacy elastic mode's flag; without --elastic_server, typed on the
  // command line, it is today's launcher's job id (docs/cli.md, "Differences").
  const bool job_id_alone = options.WasGiven("job_id") && options.from_env.count("job_id") == 0 &&
                            !options.WasGiven("elastic_server") && !options.WasGiven("np");
  return !options.new_flags.empty() || options.WasGiven("master") || options.WasGiven("nnodes") ||
         job_id_alone;
}

namespace {

std::string PythonStr(const std::string& value) { return value; }

std::string PythonStr(bool value) { return value ? "True" : "False"; }

std::string PythonStr(int value) { return std::to_string(value); }

template <typename T>
std::string PythonStr(const std::optional<T>& value) {
  return value ? PythonStr(*value) : "None";
}

// Python's repr(float): the shortest round-trip digits, fixed notation for decimal exponents in
// [-4, 16) with at least one fractional digit, scientific ("1e+16", "1.5e-05") otherwise.
std::string PythonFloatStr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string sign = std::signbit(value) ? "-" : "";
  // fmt's shortest round-trip digits (Dragonbox; the same digits as std::to_chars, whose
  // floating-point part would make the launcher load libm), in whichever notation fmt chose:
  // "1234.5", "0.00012", "1e+16".
  const std::string text = fmt::format("{}", std::fabs(value));
  const size_t e = text.find('e');
  const std::string_view significand = std::string_view(text).substr(0, e);
  const size_t point = std::min(significand.find('.'), significand.size());
  std::string digits;
  for (char c : significand) {
    if (c != '.') digits += c;
  }
  // The decimal exponent of digits[0], then of the first digit that is not 0.
  int exponent =
      (e == std::string::npos ? 0 : std::stoi(text.substr(e + 1))) + static_cast<int>(point) - 1;
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return sign + "0.0";
  digits.erase(0, first);
  exponent -= static_cast<int>(first);
  digits.erase(digits.find_last_not_of('0') + 1);
  if (exponent < -4 || exponent >= 16) {
    std::string mantissa = digits.substr(0, 1);
    if (digits.size() > 1) mantissa += "." + digits.substr(1);
    return fmt::format("{}{}e{}{:02d}", sign, mantissa, exponent < 0 ? '-' : '+',
                       std::abs(exponent));
  }
  if (exponent < 0)
    return sign + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  const size_t int_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_digits) {
    return sign + digits + std::string(int_digits - digits.size(), '0') + ".0";
  }
  return sign + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

// Python's repr(str) for one string: single quotes unless the text holds a single quote and no
// double quote; backslash, the chosen quote and control characters escaped. Bytes >= 0x80 are
// kept as they are (UTF-8 text prints as itself in Python 3).
std::string StrRepr(const std::string& text) {
  const bool use_double =
      text.find('\'') != std::string::npos && text.find('"') == std::string::npos;
  const char quote = use_double ? '"' : '\'';
  std::string out;
  out.reserve(text.size() + 2);
  out += quote;
  size_t run = 0;  // Start of the bytes not yet copied: they need no escape.
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte != 0x7f && text[i] != quote && text[i] != '\\') continue;
    out.append(text, run, i - run);
    if (text[i] == quote || text[i] == '\\') out += '\\';
    AppendEscapingControl(out, text[i]);
    run = i + 1;
  }
  out.append(text, run, std::string::npos);
  out += quote;
  return out;
}

using Lines = std::vector<std::pair<std::string, std::string>>;

// Today's launcher's options, dumped only for a command that uses its interface: a legacy
// command's dump stays the legacy contract's.
Lines NewInterfaceLines(const LaunchOptions& o) {
  return {
      {"auto_cluster_config", PythonStr(o.auto_cluster_config)},
      {"auto_parallel_config", PythonStr(o.auto_parallel_config)},
      {"auto_tuner_json", PythonStr(o.auto_tuner_json)},
      {"devices", PythonStr(o.gpus)},
      {"elastic_level", PythonStr(o.elastic_level)},
      {"elastic_timeout", PythonStr(o.elastic_timeout)},
      {"enable_gpu_log", PythonStr(o.enable_gpu_log)},
      {"heartbeat_timeout", PythonFloatStr(o.heartbeat_timeout)},
      {"legacy", PythonStr(o.legacy)},
      {"log_level", PythonStr(o.log_level)},
      {"master", PythonStr(o.master)},
      {"nnodes", PythonStr(o.nnodes)},
      {"rank", PythonStr(o.rank)},
      {"rendezvous_timeout", PythonFloatStr(o.rendezvous_timeout)},
      {"sort_ip", PythonStr(o.sort_ip)},
      {"with_gloo", PythonStr(o.with_gloo)},
  };
}

Lines ConfigurationLines(const LaunchOptions& o) {
  return {
      {"backend", PythonStr(o.backend)},
      {"echo", PythonStr(o.echo)},
      {"elastic_pre_hook", PythonStr(o.elastic_pre_hook)},
      {"elastic_server", PythonStr(o.elastic_server)},
      {"force", PythonStr(o.force)},
      {"gpus", PythonStr(o.gpus)},
      {"grace", PythonFloatStr(o.grace)},
      {"heter_devices", PythonStr(o.heter_devices)},
      {"heter_worker_num", PythonStr(o.heter_worker_num)},
      {"heter_workers", PythonStr(o.heter_workers)},
      {"host", PythonStr(o.host)},
      {"http_port", PythonStr(o.http_port)},
      {"ips", PythonStr(o.ips)},
      {"nodes_meet", PythonStr(o.nodes_meet)},
      {"job_id", PythonStr(o.job_id)},
      {"log_dir", PythonStr(o.log_dir)},
      {"log_overwrite", PythonStr(o.log_overwrite)},
      {"max_restart", PythonStr(o.max_restart)},
      {"np", PythonStr(o.np)},
      {"nproc_per_node", PythonStr(o.nproc_per_node)},
      {"numa_binding", PythonStr(o.numa_binding)},
      {"report", PythonStr(o.report)},
      {"run_mode", PythonStr(o.run_mode)},
      {"scale", PythonStr(o.scale)},
      {"server_num", PythonStr(o.server_num)},
      {"servers", PythonStr(o.servers)},
      {"start_port", PythonStr(o.start_port)},
      {"training_script", PythonStr(o.training_script)},
      {"training_script_args", PythonListRepr(o.training_script_args)},
      {"worker_num", PythonStr(o.worker_num)},
      {"workers", PythonStr(o.workers)},
      {"xpus", PythonStr(o.xpus)},
  };
}

Lines SortedConfiguration(const LaunchOptions& options) {
  Lines lines = ConfigurationLines(options);
  if (UsesNewInterface(options)) {
    const Lines more = NewInterfaceLines(options);
    lines.insert(lines.end(), more.begin(), more.end());
    // Today's launcher's default, the one in force (pod log, Job line, the master's keys).
    for (auto& [name, value] : lines) {
      if (name == "job_id" && !options.job_id) value = "default";
    }
  }
  // Sorted here rather than trusted to the list above, as Python sorts vars(args).
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace

std::string FormatConfigurationArguments(const LaunchOptions& options) {
  std::string out = "-----------  Configuration Arguments -----------\n";
  for (const auto& [name, value] : SortedConfiguration(options)) {
    out += name + ": " + value + "\n";
  }
  out += std::string(48, '-') + "\n";
  return out;
}

std::vector<std::string> ConfigurationLogLines(const LaunchOptions& options) {
  std::vector<std::string> out{std::string(kConfigurationHeader)};
  for (const auto& [name, value] : SortedConfiguration(options)) out.push_back(name + ": " + value);
  out.emplace_back(kConfigurationFooter);
  return out;
}

std::string PythonStrRepr(const std::string& text) { return StrRepr(text); }

std::string PythonListRepr(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ", ";
    out += StrRepr(items[i]);
  }
  out += "]";
  return out;
}

}  // namespace pdlaunch
