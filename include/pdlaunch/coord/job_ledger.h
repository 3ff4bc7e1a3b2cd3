#pragma once

// The hosting node's book of its job at the master (docs/master.md, "The host's ledger"): which
// nodes count, which are refused or gone, and once the world is formed which are lost or done.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/coord/rendezvous.h"

namespace pdlaunch {

/// A participant's heartbeat once its world formed and its ranks start; "1" before.
inline constexpr std::string_view kRunningHeartbeat = "running";

/// What the host does next in the run.
struct MasterStep {
  enum class Kind { kContinue, kJobFailed, kNodesLost, kAllDone };
  Kind kind = Kind::kContinue;
  JobFailure failure;             ///< kJobFailed: the published root cause.
  std::vector<std::string> lost;  ///< kNodesLost: the pods whose heartbeat expired.
};

/// The hosting node's view of its job's keys, kept current one changed key at a time (O(log n)
/// each: a join costs the host O(log n), not a read of the whole job), and what it decides from
/// them. Pure: the controller feeds it the changed keys and carries the decisions out.
///
/// Before the world forms: a node whose terms disagree with the job's is refused (its info keys
/// do not count and are deleted); a node whose heartbeat went away is forgotten (its info keys
/// deleted: a restarted node takes its place; its records are kept aside, and count again if its
/// heartbeat comes back before the world forms; Paddle's nodes publish no heartbeat and are never
/// forgotten). After: a member seen alive that is neither alive nor done is lost; every member
/// seen alive done completes the job (a member never seen alive, a node of Paddle's launcher,
/// reports nothing and is not waited for).
class JobLedger {
 public:
  JobLedger(MasterKeys keys, JobTerms terms, std::string host_pod);

  /// `key` now holds `*value`, or was deleted (nullptr). Keys outside the job are ignored.
  void Update(const std::string& key, const std::string* value);
  /// The store could not say which keys changed: `job_keys` is every key under the job's prefix
  /// now. O(n).
  void Resync(const std::map<std::string, std::string>& job_keys);

  struct Refusal {
    std::string pod;
    std::string node;  ///< "10.0.0.2 (abcdef)", escaped; the pod alone when unknown.
    std::string why;   ///< TermsMismatch's phrase.
  };
  /// Nodes newly found to disagree with the job's terms, each once.
  std::vector<Refusal> TakeRefusals();
  /// Info entries (key, record) of nodes that registered after the world formed without them,
  /// each pod once: one too many, or late from an earlier run.
  std::vector<std::pair<std::string, std::string>> TakeLate();
  /// Info keys to delete now, each once: a refused node's, and before the world forms a node's
  /// whose heartbeat went away. `left` gets the pods forgotten for the latter.
  std::vector<std::string> TakeStaleInfo(std::vector<std::string>* left = nullptr);
  /// Info entries (key, record) of forgotten nodes whose heartbeat came back before the world
  /// formed (a node paused, or slow on a loaded host, past --heartbeat_timeout), each once: the
  /// host writes them back and they count again. The node never learns it was forgotten.
  std::vector<std::pair<std::string, std::string>> TakeRevived();

  /// The info entries that count: of nodes neither refused nor gone.
  const std::map<std::string, std::string>& counted() const { return counted_; }
  bool formed() const { return formed_; }
  /// The world is formed of the pods `members`: from now on Step() watches them. O(n), once.
  void Form(const std::vector<std::string>& members);
  /// O(1) unless nodes are lost (then O(lost)).
  MasterStep Step() const;
  /// Members of the formed world (the host aside) seen alive whose heartbeat never said
  /// kRunningHeartbeat and that are not done: nodes that joined and never started their ranks.
  /// The host asks once, a bound after the world formed (docs/master.md, "Failure detection").
  /// O(members).
  std::vector<std::string> NotRunning() const;
  /// The entries the ledger holds, for tests: O(keys under the job's prefix in the store), since a
  /// pod none of whose keys is left is pruned (a member of the formed world excepted).
  size_t footprint() const;

 private:
  void UpdatePod(const std::string& key, const std::string* value, std::string& pod);
  void Forget(const std::string& pod, bool left);
  void Prune(const std::string& pod);

  MasterKeys keys_;
  JobTerms terms_;
  std::string host_pod_;
  std::set<std::string> tracked_;              // Every key fed, for Resync.
  std::map<std::string, size_t> keys_of_pod_;  // Tracked keys that name each pod.
  std::map<std::string, std::set<std::string>> info_by_pod_;
  std::map<std::string, std::string> counted_;
  std::set<std::string> refused_;  // Mismatched, or named by a refused record.
  std::set<std::string> alive_;
  std::set<std::string> seen_alive_;
  std::set<std::string> running_;  // Heartbeats that said kRunningHeartbeat.
  std::set<std::string> done_;
  std::optional<JobFailure> failure_;
  std::vector<Refusal> refusals_;
  std::set<std::string> late_pods_;
  std::vector<std::pair<std::string, std::string>> late_;
  std::vector<std::string> stale_;
  std::vector<std::string> left_;
  std::map<std::string, std::map<std::string, std::string>> dormant_;  // Forgotten, by pod.
  std::vector<std::pair<std::string, std::string>> revived_;
  bool formed_ = false;
  std::set<std::string> members_;
  std::set<std::string> waiting_;  // Members seen alive, not done.
  std::set<std::string> lost_;     // Of waiting_: not alive.
};

}  // namespace pdlaunch
