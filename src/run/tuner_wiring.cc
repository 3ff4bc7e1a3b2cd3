// The auto tuner's agreement between nodes (tuner_wiring.h), over the job's HTTP master or etcd.
#include "run/tuner_wiring.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/coord/elastic.h"
#include "pdlaunch/plan/master_config.h"
#include "run/launch_paths.h"
#include "run/node_inputs.h"

namespace pdlaunch {
namespace {

namespace fs = std::filesystem;

/// The HTTP master the nodes agree through: with a multi-node --ips (`ips_search`), the --master
/// given beside it while each trial is an --ips job of the list; else the --master job's own,
/// when its address is given (without it, the first node would host each job on a port of its
/// own, printing a new command for the others every time).
std::optional<MasterSettings> HttpAgreement(const LaunchOptions& options,
                                            const JobDecision& decision, const EnvMap& env,
                                            bool ips_search, size_t ips_count) {
  if (ips_search) {
    LaunchOptions as_master = options;
    as_master.given.erase("ips");
    as_master.ips = "127.0.0.1";
    as_master.nnodes = std::to_string(ips_count);
    return SelectLaunchPath(as_master, env).master;
  }
  if (decision.path.kind == LaunchPath::Kind::kMaster && decision.path.master &&
      decision.path.master->nnodes > 1 && decision.path.master->master_given) {
    return decision.path.master;
  }
  return std::nullopt;
}

TunerExchange ExchangeOverHttp(const LaunchOptions& options, const MasterSettings& settings,
                               const std::optional<JobToken>& token) {
  return [&options, settings, token](const std::string& job_id, const std::string& value,
                                     bool first, const std::string& /*trial*/, double wait) {
    if (job_id.empty()) return ExchangeResult{};  // Jobs of a master hold nothing.
    LaunchOptions at = options;
    at.auto_tuner_json.reset();
    at.report.reset();
    // No log of its own: the directory of the tuner's file, which exists.
    const fs::path dir = fs::path(*options.auto_tuner_json).parent_path();
    at.log_dir = dir.empty() ? "." : dir.string();
    // The plan waits for the nodes to start, as a rendezvous does; an outcome, for nodes that
    // ended the same trial: their jobs end within a heartbeat of each other.
    const double timeout =
        first ? settings.rendezvous_timeout : 3 * settings.heartbeat_timeout + options.grace + 10;
    return internal::ExchangeOverMaster(at, settings, job_id, value, std::max(timeout, wait),
                                        token);
  };
}

/// Through etcd (Paddle's way) each trial is an etcd job of all the nodes, run once: a fixed
/// node count and no restart.
void CheckElasticSearch(const ElasticConfig& elastic) {
  if (elastic.elastic_level()) {
    throw UsageError(fmt::format(
        "--auto_tuner_json through etcd needs a fixed --nnodes, not {}:{}: every trial runs on "
        "the same nodes",
        elastic.np_min, elastic.np_max));
  }
  if (elastic.level != -1) {
    throw UsageError(fmt::format(
        "--auto_tuner_json runs each trial once: --elastic_level {} would restart or shrink it "
        "(leave it at -1, the default through --master etcd://)",
        elastic.level));
  }
}

/// Across nodes of an etcd job, the agreement goes through etcd too: one client, the
/// exchange's, which also removes each trial's keys once every node is past it.
TunerExchange ExchangeOverEtcd(const LaunchOptions& options, const ElasticConfig& elastic,
                               const std::optional<JobToken>& token) {
  std::shared_ptr<KvStore> store = MakeEtcdStore(elastic.server, std::chrono::milliseconds(3000));
  auto call = internal::MakeStoreExchange(store, options.job_id.value_or("default"), elastic.np_min,
                                          elastic.timeout_seconds, token);
  return [&options, call, store, rendezvous = options.rendezvous_timeout,
          outcome = elastic.ttl_seconds + options.grace + 10](
             const std::string& job_id, const std::string& value, bool first,
             const std::string& trial_job, double wait) {
    // The plan waits for the nodes to start, as a rendezvous does; an outcome, for nodes that
    // ended the same trial: a node's departure ends it on the others within its TTL.
    if (job_id.empty()) return call("", "", 0);
    ExchangeResult result = call(job_id, value, std::max(first ? rendezvous : outcome, wait));
    if (result.code == 0 && !trial_job.empty()) {
      // A failed etcd job keeps its failure record for nodes that come late; none of a
      // trial's does.
      const ElasticKeys trial(TrialKeyJob(options, trial_job));
      try {
        store->DeletePrefix(trial.prefix());
        store->Delete(trial.status());
      } catch (const KvUnavailable& e) {
        PDLOG_WARN("auto tuner: cannot remove the keys of {}: {}", trial.job, e.what());
      }
    }
    return result;
  };
}

}  // namespace

TunerWiring WireTuner(const LaunchOptions& options, const JobDecision& decision,
                      const EnvMap& env) {
  TunerWiring wiring;
  const size_t ips_count = SplitAndStrip(decision.options.ips, ',').size();
  const bool several_nodes =
      (decision.elastic.config && decision.elastic.config->np_max > 1) || decision.slurm ||
      (decision.path.master && decision.path.master->nnodes > 1) || ips_count > 1;
  wiring.ips_search = options.WasGiven("ips") && ips_count > 1 &&
                      decision.path.kind == LaunchPath::Kind::kDefault &&
                      !decision.elastic.config && options.master &&
                      !options.master->starts_with("etcd://");
  if (const std::optional<MasterSettings> agreement =
          HttpAgreement(options, decision, env, wiring.ips_search, ips_count)) {
    wiring.exchange = ExchangeOverHttp(options, *agreement, decision.token);
  }
  if (decision.elastic.config) CheckElasticSearch(*decision.elastic.config);
  if (decision.path.kind == LaunchPath::Kind::kEtcd && decision.elastic.config &&
      decision.elastic.config->np_min > 1) {
    wiring.exchange = ExchangeOverEtcd(options, *decision.elastic.config, decision.token);
  }
  if (!wiring.exchange && several_nodes) throw UsageError(kTunerNeedsAMaster);
  return wiring;
}

}  // namespace pdlaunch
