#include <gtest/gtest.h>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/coord/elastic.h"

namespace pdlaunch {
namespace {

LaunchOptions ElasticFlags(const std::string& np = "2") {
  LaunchOptions options;
  options.elastic_server = "127.0.0.1:2379";
  options.job_id = "job1";
  options.np = np;
  options.given = {"elastic_server", "job_id", "np"};
  return options;
}

EnvMap ElasticEnv(const std::string& np = "2") {
  return {{"PADDLE_ELASTIC_SERVER", "10.0.0.9:2379"},
          {"PADDLE_ELASTIC_JOB_ID", "job-env"},
          {"PADDLE_ELASTIC_NP", np}};
}

ElasticConfig Config(const LaunchOptions& options, const EnvMap& env = {}) {
  const ElasticDecision decision = ResolveElasticConfig(options, env);
  if (!decision.config) throw std::logic_error("not elastic: " + decision.info);
  return *decision.config;
}

// The message of the UsageError ResolveElasticConfig throws, or "no error".
std::string UsageMessage(const LaunchOptions& options, const EnvMap& env = {}) {
  try {
    ResolveElasticConfig(options, env);
  } catch (const UsageError& error) {
    EXPECT_EQ(error.exit_code(), 2);
    return error.what();
  }
  return "no error";
}

TEST(ElasticConfigTest, NothingGivenIsNotElastic) {
  const ElasticDecision decision = ResolveElasticConfig(LaunchOptions{}, {{"POD_IP", "1.2.3.4"}});
  EXPECT_FALSE(decision.config.has_value());
  EXPECT_EQ(decision.info, "");
}

TEST(ElasticConfigTest, FlagsGiveConfigWithDefaults) {
  ElasticConfig expected;
  expected.server = "127.0.0.1:2379";
  expected.job_id = "job1";
  expected.np_min = 2;
  expected.np_max = 2;
  expected.force = false;
  expected.ttl_seconds = 60;
  expected.timeout_seconds = 120;
  expected.max_restart = 3;
  expected.pre_hook = std::nullopt;
  const ElasticDecision decision = ResolveElasticConfig(ElasticFlags(), {});
  EXPECT_EQ(decision.config, expected);
  EXPECT_EQ(decision.info, "");
  EXPECT_FALSE(decision.config->elastic_level());
}

TEST(ElasticConfigTest, ElasticLevelAndTimeoutAsPaddleReadsThem) {
  // issue #29 item 9: the legacy flags restart in place (1); --master etcd:// is Paddle's -1.
  EXPECT_EQ(Config(ElasticFlags()).level, 1);
  LaunchOptions todays = ElasticFlags();
  todays.master = "etcd://127.0.0.1:2379";
  EXPECT_EQ(Config(todays).level, -1);
  todays.elastic_level = 0;
  EXPECT_EQ(Config(todays).level, 0);
  todays.elastic_level = 2;
  EXPECT_EQ(UsageMessage(todays),
            "--elastic_level: '2' is not an elastic level (-1: a failure ends the job, 0: the "
            "other nodes hold, 1: every node restarts)");
  LaunchOptions timeout = ElasticFlags("2:4");
  timeout.elastic_timeout = 45;
  EXPECT_EQ(Config(timeout, {{"PADDLE_ELASTIC_TIMEOUT", "300"}}).timeout_seconds, 45);
  EXPECT_EQ(Config(ElasticFlags("2:4"), {{"PADDLE_ELASTIC_TIMEOUT", "300"}}).timeout_seconds, 300);
}

TEST(ElasticConfigTest, EnvironmentAloneGivesConfig) {
  const ElasticConfig config = Config(LaunchOptions{}, ElasticEnv("2:4"));
  EXPECT_EQ(config.server, "10.0.0.9:2379");
  EXPECT_EQ(config.job_id, "job-env");
  EXPECT_EQ(config.np_min, 2);
  EXPECT_EQ(config.np_max, 4);
  EXPECT_TRUE(config.elastic_level());
}

TEST(ElasticConfigTest, FlagsBeatEnvironment) {
  const ElasticConfig config = Config(ElasticFlags("3"), ElasticEnv("2:4"));
  EXPECT_EQ(config.server, "127.0.0.1:2379");
  EXPECT_EQ(config.job_id, "job1");
  EXPECT_EQ(config.np_min, 3);
  EXPECT_EQ(config.np_max, 3);
}

TEST(ElasticConfigTest, EnvironmentCompletesFlags) {
  LaunchOptions options;
  options.elastic_server = "127.0.0.1:2379";
  options.given = {"elastic_server"};
  const ElasticConfig config =
      Config(options, {{"PADDLE_ELASTIC_JOB_ID", "j"}, {"PADDLE_ELASTIC_NP", " 2 : 3 "}});
  EXPECT_EQ(config.server, "127.0.0.1:2379");
  EXPECT_EQ(config.job_id, "j");
  EXPECT_EQ(config.np_min, 2);
  EXPECT_EQ(config.np_max, 3);
}

TEST(ElasticConfigTest, EtcdServiceVariablesGiveServer) {
  EnvMap env = ElasticEnv();
  env.erase("PADDLE_ELASTIC_SERVER");
  env["PADDLE_ELASTIC_ETCD_SERVICE_HOST"] = "etcd.svc";
  env["PADDLE_ELASTIC_ETCD_SERVICE_PORT"] = "2379";
  EXPECT_EQ(Config(LaunchOptions{}, env).server, "etcd.svc:2379");
  env["PADDLE_ELASTIC_SERVER"] = "10.0.0.9:2379";
  EXPECT_EQ(Config(LaunchOptions{}, env).server, "10.0.0.9:2379");
}

TEST(ElasticConfigTest, EtcdServiceHostWithoutPortIsNoServer) {
  const ElasticDecision decision =
      ResolveElasticConfig(LaunchOptions{}, {{"PADDLE_ELASTIC_ETCD_SERVICE_HOST", "etcd.svc"},
                                             {"PADDLE_ELASTIC_JOB_ID", "j"},
                                             {"PADDLE_ELASTIC_NP", "2"}});
  EXPECT_FALSE(decision.config.has_value());
  EXPECT_EQ(decision.info, "Elastic is not enabled with server None name j and np 2");
}

TEST(ElasticConfigTest, MissingFlagNamesTheFirstMissing) {
  LaunchOptions options = ElasticFlags();
  options.job_id.reset();
  EXPECT_EQ(UsageMessage(options),
            "elastic mode needs --elastic_server, --job_id and --np: --job_id is missing");
  options.elastic_server.reset();
  EXPECT_EQ(UsageMessage(options),
            "elastic mode needs --elastic_server, --job_id and --np: --elastic_server is missing");
  LaunchOptions only_server = ElasticFlags();
  only_server.np.reset();
  EXPECT_EQ(UsageMessage(only_server),
            "elastic mode needs --elastic_server, --job_id and --np: --np is missing");
}

TEST(ElasticConfigTest, PartialEnvironmentGivesPaddleInfoLine) {
  const ElasticDecision decision =
      ResolveElasticConfig(LaunchOptions{}, {{"PADDLE_ELASTIC_SERVER", "127.0.0.1:2379"}});
  EXPECT_FALSE(decision.config.has_value());
  EXPECT_EQ(decision.info,
            "Elastic is not enabled with server 127.0.0.1:2379 name None and np None");
}

TEST(ElasticConfigTest, EnvironmentNpZeroDoesNotEnable) {
  const ElasticDecision decision = ResolveElasticConfig(LaunchOptions{}, ElasticEnv("0"));
  EXPECT_FALSE(decision.config.has_value());
  EXPECT_EQ(decision.info,
            "Elastic is not enabled with server 10.0.0.9:2379 name job-env and np 0");
}

TEST(ElasticConfigTest, EmptyVariablesCountAsAbsent) {
  const ElasticDecision decision = ResolveElasticConfig(
      LaunchOptions{},
      {{"PADDLE_ELASTIC_SERVER", ""}, {"PADDLE_ELASTIC_JOB_ID", "j"}, {"PADDLE_ELASTIC_NP", ""}});
  EXPECT_FALSE(decision.config.has_value());
  EXPECT_EQ(decision.info, "Elastic is not enabled with server None name j and np None");
}

TEST(ElasticConfigTest, ServerWithoutPortIsUsageError) {
  LaunchOptions options = ElasticFlags();
  options.elastic_server = "127.0.0.1";
  EXPECT_EQ(UsageMessage(options), "--elastic_server: '127.0.0.1' is not host:port");
  options.elastic_server = ":2379";
  EXPECT_EQ(UsageMessage(options), "--elastic_server: ':2379' is not host:port");
  options.elastic_server = "etcd:70000";
  EXPECT_EQ(UsageMessage(options), "--elastic_server: 'etcd:70000' is not host:port");
  EnvMap env = ElasticEnv();
  env["PADDLE_ELASTIC_SERVER"] = "etcd:port";
  EXPECT_EQ(UsageMessage(LaunchOptions{}, env),
            "PADDLE_ELASTIC_SERVER: 'etcd:port' is not host:port");
}

TEST(ElasticConfigTest, BadNpIsUsageError) {
  EXPECT_EQ(UsageMessage(ElasticFlags("2:1")), "--np: '2:1' is not N or N:M with 1 <= N <= M");
  EXPECT_EQ(UsageMessage(ElasticFlags("0")), "--np: '0' is not N or N:M with 1 <= N <= M");
  EXPECT_EQ(UsageMessage(ElasticFlags("0:2")), "--np: '0:2' is not N or N:M with 1 <= N <= M");
  EXPECT_EQ(UsageMessage(ElasticFlags("2:")), "--np: '2:' is not N or N:M with 1 <= N <= M");
  EXPECT_EQ(UsageMessage(ElasticFlags("2:3:4")), "--np: '2:3:4' is not N or N:M with 1 <= N <= M");
  EXPECT_EQ(UsageMessage(LaunchOptions{}, ElasticEnv("two")),
            "PADDLE_ELASTIC_NP: 'two' is not N or N:M with 1 <= N <= M");
}

TEST(ElasticConfigTest, ScaleAddsToBothBounds) {
  LaunchOptions options = ElasticFlags("2:4");
  options.scale = 1;
  options.given.insert("scale");
  const ElasticConfig scaled = Config(options, {{"PADDLE_ELASTIC_SCALE", "5"}});
  EXPECT_EQ(scaled.np_min, 3);
  EXPECT_EQ(scaled.np_max, 5);
  const ElasticConfig from_env = Config(ElasticFlags("2"), {{"PADDLE_ELASTIC_SCALE", " -1 "}});
  EXPECT_EQ(from_env.np_min, 1);
  EXPECT_EQ(from_env.np_max, 1);
}

TEST(ElasticConfigTest, ScaleBelowOneIsUsageError) {
  LaunchOptions options = ElasticFlags("2:4");
  options.scale = -2;
  options.given.insert("scale");
  EXPECT_EQ(UsageMessage(options), "--scale: '-2' makes np 0; np must be at least 1");
  EXPECT_EQ(UsageMessage(ElasticFlags("1"), {{"PADDLE_ELASTIC_SCALE", "-3"}}),
            "PADDLE_ELASTIC_SCALE: '-3' makes np -2; np must be at least 1");
  EXPECT_EQ(UsageMessage(ElasticFlags("1"), {{"PADDLE_ELASTIC_SCALE", "x"}}),
            "PADDLE_ELASTIC_SCALE: 'x' is not an integer");
}

TEST(ElasticConfigTest, ForceFromFlagOrEnvironment) {
  LaunchOptions forced = ElasticFlags();
  forced.force = true;
  forced.given.insert("force");
  EXPECT_TRUE(Config(forced).force);
  for (const char* yes : {"1", "true", "True", "yes"}) {
    EXPECT_TRUE(Config(ElasticFlags(), {{"PADDLE_ELASTIC_FORCE", yes}}).force) << yes;
  }
  for (const char* no : {"0", "false", "no", "TRUE"}) {
    EXPECT_FALSE(Config(ElasticFlags(), {{"PADDLE_ELASTIC_FORCE", no}}).force) << no;
  }
  LaunchOptions not_forced = ElasticFlags();
  not_forced.given.insert("force");
  EXPECT_FALSE(Config(not_forced, {{"PADDLE_ELASTIC_FORCE", "1"}}).force);
}

TEST(ElasticConfigTest, TtlAndTimeoutFromEnvironment) {
  const ElasticConfig config =
      Config(ElasticFlags(), {{"PADDLE_ELASTIC_TTL", " 30 "}, {"PADDLE_ELASTIC_TIMEOUT", "+45"}});
  EXPECT_EQ(config.ttl_seconds, 30);
  EXPECT_EQ(config.timeout_seconds, 45);
}

TEST(ElasticConfigTest, BadTtlOrTimeoutIsUsageError) {
  EXPECT_EQ(UsageMessage(ElasticFlags(), {{"PADDLE_ELASTIC_TTL", "0"}}),
            "PADDLE_ELASTIC_TTL: '0' must be at least 1");
  EXPECT_EQ(UsageMessage(ElasticFlags(), {{"PADDLE_ELASTIC_TTL", "1.5"}}),
            "PADDLE_ELASTIC_TTL: '1.5' is not an integer");
  EXPECT_EQ(UsageMessage(ElasticFlags(), {{"PADDLE_ELASTIC_TIMEOUT", "ten"}}),
            "PADDLE_ELASTIC_TIMEOUT: 'ten' is not an integer");
  EXPECT_EQ(UsageMessage(ElasticFlags(), {{"PADDLE_ELASTIC_TIMEOUT", "-5"}}),
            "PADDLE_ELASTIC_TIMEOUT: '-5' must be at least 1");
}

TEST(ElasticConfigTest, MaxRestartFromFlagThenEnvironment) {
  LaunchOptions options = ElasticFlags();
  EXPECT_EQ(Config(options, {{"PADDLE_MAX_RESTART", "7"}}).max_restart, 7);
  options.max_restart = 0;
  options.given.insert("max_restart");
  EXPECT_EQ(Config(options, {{"PADDLE_MAX_RESTART", "7"}}).max_restart, 0);
}

TEST(ElasticConfigTest, NegativeMaxRestartIsUsageError) {
  LaunchOptions options = ElasticFlags();
  options.max_restart = -1;
  EXPECT_EQ(UsageMessage(options), "--max_restart: '-1' must be at least 0");
  EXPECT_EQ(UsageMessage(ElasticFlags(), {{"PADDLE_MAX_RESTART", "-1"}}),
            "PADDLE_MAX_RESTART: '-1' must be at least 0");
}

TEST(ElasticConfigTest, PreHookIsCopied) {
  LaunchOptions options = ElasticFlags();
  options.elastic_pre_hook = "hostname";
  EXPECT_EQ(Config(options).pre_hook, std::optional<std::string>("hostname"));
}

}  // namespace
}  // namespace pdlaunch
