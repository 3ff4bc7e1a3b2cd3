#include "pdlaunch/plan/dry_run.h"

#include <nlohmann/json.hpp>

#include "pdlaunch/base/json_lossless.h"

namespace pdlaunch {
namespace {

using Json = nlohmann::ordered_json;

Json ClusterJson(const Cluster& cluster) {
  Json pods = Json::array();
  for (const Pod& pod : cluster.pods) {
    Json trainers = Json::array();
    for (const Trainer& t : pod.trainers) {
      trainers.push_back({{"rank", t.global_rank},
                          {"local_rank", t.local_rank},
                          {"endpoint", t.endpoint.ToString()},
                          {"devices", t.devices}});
    }
    pods.push_back({{"host", pod.ip}, {"node_rank", pod.node_index}, {"trainers", trainers}});
  }
  return {{"nodes", cluster.pods.size()},       {"node_rank", cluster.local_index},
          {"world_size", cluster.world_size()}, {"master", cluster.master.ToString()},
          {"backend", cluster.backend},         {"pods", pods}};
}

Json PsJson(const DryRunPlan::PsJob& ps) {
  return {{"hosts", ps.hosts},     {"this_host", ps.this_host},       {"servers", ps.servers},
          {"workers", ps.workers}, {"heter_stages", ps.heter_stages}, {"gloo_http", ps.gloo_http}};
}

}  // namespace

std::string FormatDryRun(const DryRunPlan& plan) {
  Json out;
  out["dry_run"] = true;
  out["mode"] = plan.mode;
  out["launch_path"] = plan.launch_path;
  out["device_mode"] = plan.device_mode.empty() ? Json(nullptr) : Json(plan.device_mode);
  out["cluster"] = plan.cluster ? ClusterJson(*plan.cluster) : Json(nullptr);
  out["ps"] = plan.ps ? PsJson(*plan.ps) : Json(nullptr);
  out["command"] = plan.command;
  Json processes = Json::array();
  for (const DryRunPlan::Process& p : plan.processes) {
    Json env = Json::object();
    for (const auto& [name, value] : p.env) env[name] = value;
    processes.push_back({{"role", p.role},
                         {"rank", p.rank},
                         {"local_rank", p.local_rank},
                         {"log", p.log},
                         {"env", env}});
  }
  out["processes"] = plan.cluster || plan.ps || !plan.processes.empty() ? processes : Json(nullptr);
  out["notes"] = plan.notes;
  out["warnings"] = plan.warnings;
  return DumpLossless(out, 2) + "\n";  // Every byte of the arguments (docs/report.md).
}

}  // namespace pdlaunch
