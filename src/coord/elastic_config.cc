#include <fmt/format.h>

#include <climits>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <utility>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/coord/elastic.h"

namespace pdlaunch {

namespace {

constexpr int kDefaultTtlSeconds = 60;
constexpr int kDefaultTimeoutSeconds = 120;
constexpr int kDefaultMaxRestart = 3;

// A setting and where it came from: a flag name or an environment variable name.
struct Sourced {
  std::string value;
  std::string source;
  bool from_flag = false;
};

// Python's os.getenv() as Paddle tests it: unset and empty are both "not given".
std::optional<std::string> EnvValue(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::optional<Sourced> FlagOrEnv(const std::optional<std::string>& flag, std::string_view flag_name,
                                 const EnvMap& env, const std::string& var) {
  if (flag) return Sourced{*flag, std::string(flag_name), true};
  if (auto value = EnvValue(env, var)) return Sourced{*value, var, false};
  return std::nullopt;
}

std::optional<Sourced> ServerSetting(const LaunchOptions& options, const EnvMap& env) {
  if (auto server =
          FlagOrEnv(options.elastic_server, "--elastic_server", env, "PADDLE_ELASTIC_SERVER")) {
    return server;
  }
  const auto host = EnvValue(env, "PADDLE_ELASTIC_ETCD_SERVICE_HOST");
  const auto port = EnvValue(env, "PADDLE_ELASTIC_ETCD_SERVICE_PORT");
  if (!host || !port) return std::nullopt;
  return Sourced{*host + ":" + *port,
                 "PADDLE_ELASTIC_ETCD_SERVICE_HOST and PADDLE_ELASTIC_ETCD_SERVICE_PORT", false};
}

// Paddle 2.2 reads PADDLE_ELASTIC_NP as an int that must be non-zero: "0" does not enable.
bool EnablesElastic(const Sourced& np) {
  if (np.from_flag) return true;
  try {
    return ParsePythonInt(np.value, np.source, INT_MIN, INT_MAX) != 0;
  } catch (const UsageError&) {
    return true;  // Not an integer: enabled, and refused by ParseNp.
  }
}

void CheckServer(const Sourced& server) {
  const std::string& text = server.value;
  const size_t colon = text.rfind(':');
  bool valid = colon != std::string::npos && colon != 0;
  if (valid) {
    try {
      ParseInt(std::string_view(text).substr(colon + 1), "port", 1, 65535);
    } catch (const UsageError&) {
      valid = false;
    }
  }
  if (!valid) {
    throw UsageError(fmt::format("{}: '{}' is not host:port", server.source, text));
  }
}

// "N" or "N:M" with 1 <= N <= M, as (N, M).
std::pair<int, int> ParseNp(const Sourced& np) {
  const std::string_view text = np.value;
  const size_t colon = text.find(':');
  try {
    const int min = ParsePythonInt(text.substr(0, colon), np.source, 1, INT_MAX);
    const int max = colon == std::string_view::npos
                        ? min
                        : ParsePythonInt(text.substr(colon + 1), np.source, min, INT_MAX);
    return {min, max};
  } catch (const UsageError&) {
    throw UsageError(fmt::format("{}: '{}' is not N or N:M with 1 <= N <= M", np.source, np.value));
  }
}

// --scale when given, else PADDLE_ELASTIC_SCALE, else 0; as (value, source).
std::pair<int, std::string> ScaleSetting(const LaunchOptions& options, const EnvMap& env) {
  if (options.WasGiven("scale") || options.scale != 0) return {options.scale, "--scale"};
  const auto value = EnvValue(env, "PADDLE_ELASTIC_SCALE");
  if (!value) return {0, "PADDLE_ELASTIC_SCALE"};
  return {ParsePythonInt(*value, "PADDLE_ELASTIC_SCALE", INT_MIN, INT_MAX), "PADDLE_ELASTIC_SCALE"};
}

void ApplyScale(ElasticConfig& config, const LaunchOptions& options, const EnvMap& env) {
  const auto [scale, source] = ScaleSetting(options, env);
  const int64_t min = int64_t{config.np_min} + scale;
  const int64_t max = int64_t{config.np_max} + scale;
  if (min < 1) {
    throw UsageError(
        fmt::format("{}: '{}' makes np {}; np must be at least 1", source, scale, min));
  }
  if (max > INT_MAX) {
    throw UsageError(
        fmt::format("{}: '{}' makes np {}; np must be at most {}", source, scale, max, INT_MAX));
  }
  config.np_min = static_cast<int>(min);
  config.np_max = static_cast<int>(max);
}

bool ForceSetting(const LaunchOptions& options, const EnvMap& env) {
  if (options.force || options.WasGiven("force")) return options.force;
  const auto value = EnvValue(env, "PADDLE_ELASTIC_FORCE");
  return value && (*value == "1" || *value == "true" || *value == "True" || *value == "yes");
}

int EnvInt(const EnvMap& env, const std::string& name, int fallback, int min) {
  const auto value = EnvValue(env, name);
  return value ? ParsePythonInt(*value, name, min, INT_MAX) : fallback;
}

int MaxRestartSetting(const LaunchOptions& options, const EnvMap& env) {
  if (!options.max_restart) return EnvInt(env, "PADDLE_MAX_RESTART", kDefaultMaxRestart, 0);
  if (*options.max_restart < 0) {
    throw UsageError(fmt::format("--max_restart: '{}' must be at least 0", *options.max_restart));
  }
  return *options.max_restart;
}

ElasticConfig MakeConfig(const Sourced& server, const Sourced& job, const Sourced& np,
                         const LaunchOptions& options, const EnvMap& env) {
  CheckServer(server);
  ElasticConfig config;
  config.server = server.value;
  config.job_id = job.value;
  std::tie(config.np_min, config.np_max) = ParseNp(np);
  ApplyScale(config, options, env);
  config.force = ForceSetting(options, env);
  config.ttl_seconds = EnvInt(env, "PADDLE_ELASTIC_TTL", kDefaultTtlSeconds, 1);
  config.timeout_seconds = EnvInt(env, "PADDLE_ELASTIC_TIMEOUT", kDefaultTimeoutSeconds, 1);
  config.max_restart = MaxRestartSetting(options, env);
  config.pre_hook = options.elastic_pre_hook;
  // Today's launcher (--master etcd://) defaults to Paddle's -1; the legacy flags keep the
  // in-place restarts they always had here.
  const bool todays = options.master && options.master->starts_with("etcd://");
  config.level = options.elastic_level.value_or(todays ? -1 : 1);
  if (config.level < -1 || config.level > 1) {
    throw UsageError(fmt::format(
        "{}: '{}' is not an elastic level (-1: a failure ends the job, 0: the other nodes hold, "
        "1: every node restarts)",
        options.FlagName("elastic_level"), config.level));
  }
  if (options.elastic_timeout) {
    if (*options.elastic_timeout < 1) {
      throw UsageError(fmt::format("{}: '{}' must be at least 1 (seconds)",
                                   options.FlagName("elastic_timeout"), *options.elastic_timeout));
    }
    config.timeout_seconds = *options.elastic_timeout;
  }
  return config;
}

std::string ValueOrNone(const std::optional<Sourced>& setting) {
  return setting ? setting->value : "None";
}

}  // namespace

ElasticDecision ResolveElasticConfig(const LaunchOptions& options, const EnvMap& env) {
  const std::optional<Sourced> server = ServerSetting(options, env);
  const std::optional<Sourced> job =
      FlagOrEnv(options.job_id, "--job_id", env, "PADDLE_ELASTIC_JOB_ID");
  const std::optional<Sourced> np = FlagOrEnv(options.np, "--np", env, "PADDLE_ELASTIC_NP");
  const bool np_enables = np && EnablesElastic(*np);
  if (server && job && np_enables) return {MakeConfig(*server, *job, *np, options, env), ""};
  // --job_id alone is today's launcher's job id (docs/master.md), not a request for elastic mode.
  const bool any_flag = (server && server->from_flag) || (np && np->from_flag);
  if (any_flag) {
    const char* missing = !server ? "--elastic_server" : !job ? "--job_id" : "--np";
    throw UsageError(fmt::format(
        "elastic mode needs --elastic_server, --job_id and --np: {} is missing", missing));
  }
  if (!server && !job && !np) return {};
  return {std::nullopt, fmt::format("Elastic is not enabled with server {} name {} and np {}",
                                    ValueOrNone(server), ValueOrNone(job), ValueOrNone(np))};
}

}  // namespace pdlaunch
