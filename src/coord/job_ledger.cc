#include "pdlaunch/coord/job_ledger.h"

#include <fmt/format.h>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

// Whether `key` is `prefix` and a non-empty rest, put in `rest`.
bool Below(const std::string& key, const std::string& prefix, std::string& rest) {
  if (key.size() <= prefix.size() || !key.starts_with(prefix)) return false;
  rest = key.substr(prefix.size());
  return true;
}

}  // namespace

JobLedger::JobLedger(MasterKeys keys, JobTerms terms, std::string host_pod)
    : keys_(std::move(keys)), terms_(std::move(terms)), host_pod_(std::move(host_pod)) {}

void JobLedger::Update(const std::string& key, const std::string* value) {
  if (!key.starts_with(keys_.job_prefix())) return;
  const bool was_tracked = value ? !tracked_.insert(key).second : tracked_.erase(key) == 1;
  std::string pod;
  UpdatePod(key, value, pod);
  if (pod.empty() || was_tracked == (value != nullptr)) return;
  if (value) {
    ++keys_of_pod_[pod];
  } else if (const auto it = keys_of_pod_.find(pod);
             it != keys_of_pod_.end() && --it->second == 0) {
    keys_of_pod_.erase(it);
    Prune(pod);
  }
}

// A pod none of whose keys is left is forgotten altogether, unless it is a member of the formed
// world: what the ledger holds is bounded by what the store holds, whatever a client PUTs and
// DELETEs (a stranger's pairs of random pods grew it by 16 KiB a pair).
void JobLedger::Prune(const std::string& pod) {
  if (formed_ && members_.count(pod)) return;
  seen_alive_.erase(pod);
  alive_.erase(pod);
  done_.erase(pod);
  refused_.erase(pod);
  late_pods_.erase(pod);
  dormant_.erase(pod);
  running_.erase(pod);
}

void JobLedger::UpdatePod(const std::string& key, const std::string* value, std::string& pod) {
  if (key.starts_with(keys_.info_prefix())) {
    pod = InfoKeyPod(keys_, key);
    if (!value) {
      counted_.erase(key);
      const auto it = info_by_pod_.find(pod);
      if (it != info_by_pod_.end() && it->second.erase(key) && it->second.empty()) {
        info_by_pod_.erase(it);
      }
      return;
    }
    info_by_pod_[pod].insert(key);
    const bool gone = !formed_ && pod != host_pod_ && seen_alive_.count(pod) && !alive_.count(pod);
    if (refused_.count(pod) || gone) {
      stale_.push_back(key);
      if (gone) left_.push_back(pod);
    } else {
      counted_[key] = *value;
    }
    if (formed_ && !members_.count(pod) && late_pods_.insert(pod).second) {
      late_.emplace_back(key, *value);
    }
  } else if (Below(key, keys_.alive(""), pod)) {
    if (value) {
      alive_.insert(pod);
      if (*value == kRunningHeartbeat) running_.insert(pod);
      if (const auto it = dormant_.find(pod); it != dormant_.end()) {
        if (!formed_) revived_.insert(revived_.end(), it->second.begin(), it->second.end());
        dormant_.erase(it);
      }
      const bool first = seen_alive_.insert(pod).second;
      if (formed_ && members_.count(pod)) {
        if (first && !done_.count(pod)) waiting_.insert(pod);
        lost_.erase(pod);
      }
    } else {
      alive_.erase(pod);
      if (!formed_) {
        if (pod != host_pod_) Forget(pod, /*left=*/true);
      } else if (waiting_.count(pod)) {
        lost_.insert(pod);
      }
    }
  } else if (Below(key, keys_.done(""), pod)) {
    if (value) {
      done_.insert(pod);
      waiting_.erase(pod);
      lost_.erase(pod);
    } else {
      done_.erase(pod);
    }
  } else if (Below(key, keys_.node_terms(""), pod)) {
    const std::optional<JobTerms> terms = value ? DecodeJobTerms(*value) : std::nullopt;
    if (!terms) return;
    const std::optional<std::string> mismatch = TermsMismatch(terms_, *terms);
    if (mismatch && !formed_ && refused_.insert(pod).second) {
      const std::string node =
          terms->node.empty() ? OneLine(pod) : fmt::format("{} ({})", terms->node, OneLine(pod));
      refusals_.push_back(Refusal{pod, node, *mismatch});
      Forget(pod, /*left=*/false);
    }
  } else if (Below(key, keys_.refused(""), pod)) {
    // Written by this host, or by any client: either way the node does not count.
    if (value && !formed_ && refused_.insert(pod).second) Forget(pod, /*left=*/false);
  } else if (key == keys_.failure()) {
    if (value && !failure_) failure_ = DecodeFailure(*value);
  }
}

void JobLedger::Forget(const std::string& pod, bool left) {
  const auto it = info_by_pod_.find(pod);
  if (it == info_by_pod_.end()) return;
  for (const std::string& key : it->second) {
    const auto counted = counted_.find(key);
    if (counted == counted_.end()) continue;
    // Kept aside for a node that was only slow; as many as the job has nodes, no more (a
    // stranger's records would fill it).
    if (left && (dormant_.count(pod) || dormant_.size() < static_cast<size_t>(terms_.nnodes))) {
      dormant_[pod][key] = counted->second;
    }
    if (left) left_.push_back(pod);
    counted_.erase(counted);
    stale_.push_back(key);
  }
}

void JobLedger::Resync(const std::map<std::string, std::string>& job_keys) {
  const std::set<std::string> before = tracked_;
  for (const std::string& key : before) {
    if (!job_keys.count(key)) Update(key, nullptr);
  }
  for (const auto& [key, value] : job_keys) Update(key, &value);
}

std::vector<JobLedger::Refusal> JobLedger::TakeRefusals() { return std::exchange(refusals_, {}); }

std::vector<std::pair<std::string, std::string>> JobLedger::TakeRevived() {
  return std::exchange(revived_, {});
}

std::vector<std::pair<std::string, std::string>> JobLedger::TakeLate() {
  return std::exchange(late_, {});
}

std::vector<std::string> JobLedger::TakeStaleInfo(std::vector<std::string>* left) {
  std::vector<std::string> gone = std::exchange(left_, {});
  if (left) *left = std::move(gone);
  return std::exchange(stale_, {});
}

void JobLedger::Form(const std::vector<std::string>& members) {
  formed_ = true;
  members_ = std::set<std::string>(members.begin(), members.end());
  for (const std::string& pod : members_) {
    if (!seen_alive_.count(pod) || done_.count(pod)) continue;
    waiting_.insert(pod);
    if (!alive_.count(pod)) lost_.insert(pod);
  }
}

std::vector<std::string> JobLedger::NotRunning() const {
  std::vector<std::string> idle;
  if (!formed_) return idle;
  for (const std::string& pod : members_) {
    if (pod != host_pod_ && seen_alive_.count(pod) && !running_.count(pod) && !done_.count(pod)) {
      idle.push_back(pod);
    }
  }
  return idle;
}

size_t JobLedger::footprint() const {
  size_t entries = tracked_.size() + counted_.size() + refused_.size() + alive_.size() +
                   seen_alive_.size() + done_.size() + late_pods_.size() + keys_of_pod_.size() +
                   dormant_.size() + running_.size();
  for (const auto& [pod, keys] : info_by_pod_) entries += 1 + keys.size();
  return entries;
}

MasterStep JobLedger::Step() const {
  MasterStep step;
  if (failure_) {
    step.kind = MasterStep::Kind::kJobFailed;
    step.failure = *failure_;
  } else if (!lost_.empty()) {
    step.kind = MasterStep::Kind::kNodesLost;
    step.lost.assign(lost_.begin(), lost_.end());
  } else if (formed_ && waiting_.empty() && !members_.empty()) {
    step.kind = MasterStep::Kind::kAllDone;
  }
  return step;
}

}  // namespace pdlaunch
