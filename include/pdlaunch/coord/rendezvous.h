#pragma once

// The master rendezvous of today's launcher (docs/master.md, "Rendezvous (Paddle's protocol)")
// and pdlaunch's failure detection on top of it (docs/master.md), as pure functions: keys, the
// peer JSON, rank order, the Cluster the peers describe, and what a node does next given the
// job's keys.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/topology.h"

namespace pdlaunch {

/// The key the hosting node uses instead of its pod name when its rank is auto: sorts first, so
/// the host is rank 0.
inline constexpr std::string_view kHostKeyName = "aaaaaa";

/// The keys of job `job_id` at the master. Paddle's: /<job>/info/<pod>/<rank>. pdlaunch's own,
/// outside Paddle's prefix so that Paddle's count of peers is not disturbed (docs/master.md,
/// "Keys"):
/// * written by the participants, read by the host alone: /<job>/pdlaunch/alive/<pod>
///   (heartbeat, expires), /<job>/pdlaunch/done/<pod> (exit code),
///   /<job>/pdlaunch/node_terms/<pod>, /<job>/pdlaunch/heard/<pod> (read why the world
///   cannot form);
/// * the news, small, which every participant long-polls: /<job>/pdlaunch/news/terms (the job's),
///   news/refused/<pod>, news/formed (the world is formed, or cannot be), news/failure (the
///   job's root cause, first writer wins), news/complete (every node done);
/// * /<job>/pdlaunch/world: the world the host formed, which every participant reads once.
/// A join, a heartbeat or a done report touches no key a participant waits on.
struct MasterKeys {
  explicit MasterKeys(std::string job_id) : job(std::move(job_id)) {}
  std::string job;

  std::string job_prefix() const { return "/" + job + "/"; }
  /// Ends in '/': a key /<job>/infoX... is no peer.
  std::string info_prefix() const { return "/" + job + "/info/"; }
  std::string info(const std::string& name, int rank) const {
    return info_prefix() + name + "/" + std::to_string(rank);
  }
  std::string coord_prefix() const { return "/" + job + "/pdlaunch/"; }
  std::string alive(const std::string& pod) const { return coord_prefix() + "alive/" + pod; }
  std::string done(const std::string& pod) const { return coord_prefix() + "done/" + pod; }
  /// A participant's terms, written before its info key.
  std::string node_terms(const std::string& pod) const {
    return coord_prefix() + "node_terms/" + pod;
  }
  std::string news_prefix() const { return coord_prefix() + "news/"; }
  /// The job's terms, written by the host before anyone can register.
  std::string terms() const { return news_prefix() + "terms"; }
  /// Why the host refused a node (its terms disagree with the job's).
  std::string refused(const std::string& pod) const { return news_prefix() + "refused/" + pod; }
  std::string formed() const { return news_prefix() + "formed"; }
  std::string failure() const { return news_prefix() + "failure"; }
  std::string complete() const { return news_prefix() + "complete"; }
  /// The host of an --ips job: the entries it still waits for, for every node's waiting line.
  std::string waiting() const { return news_prefix() + "waiting"; }
  std::string world() const { return coord_prefix() + "world"; }
  /// Written by a participant that read in news/formed why the world cannot form: the host
  /// serves until every registered node has (or a few seconds), so that none of them finds the
  /// master gone and reports that instead of the reason.
  std::string heard(const std::string& pod) const { return coord_prefix() + "heard/" + pod; }
};

/// The pod of an info key /<job>/info/<pod>/<rank> (the segment after the prefix); empty when
/// `key` is not under `keys.info_prefix()`.
std::string InfoKeyPod(const MasterKeys& keys, const std::string& key);

/// The members' info keys and records, in node order, as the host formed the world.
using WorldEntries = std::vector<std::pair<std::string, std::string>>;

/// The world record: "<n>\n", then per member "<len>:<key>,<len>:<record>," (netstrings), read
/// in one pass without escapes: every participant reads all of it. A collective peer's record in
/// Paddle's exact layout travels as its fields ("~name rank replicas dtype candidate
/// endpoints", a third of the bytes); DecodeWorld gives it back as it was.
std::string EncodeWorld(const WorldEntries& entries);
/// Throws LaunchError on a malformed record: not that layout, more than `max_nodes` members, a
/// length past the end, a key twice, bytes after the last member.
WorldEntries DecodeWorld(std::string_view text, size_t max_nodes);

/// news/formed: the world is formed, of `nodes` members, or it cannot be, and why (the host's
/// rendezvous error, e.g. two nodes with one --rank: every node exits with it).
struct WorldFormed {
  int nodes = 0;
  std::string error;  ///< Escaped when decoded.

  bool operator==(const WorldFormed&) const = default;
};
std::string EncodeFormed(const WorldFormed& formed);
/// nullopt when `value` is no such record.
std::optional<WorldFormed> DecodeFormed(const std::string& value);

/// What one node publishes (collective and rpc): Paddle's peer JSON.
struct PeerInfo {
  std::string name;  ///< Pod name, six lowercase letters.
  int rank = -1;     ///< Node rank asked for; -1: auto.
  int replicas = 1;  ///< Local processes.
  std::string dtype = "cpu";
  std::string candidate;  ///< ip:port; peer 0's is PADDLE_MASTER / MASTER_ADDR:MASTER_PORT.
  std::string endpoints;  ///< ip:port,... one per local process.

  bool operator==(const PeerInfo&) const = default;
};

/// json.dumps of the peer dict, keys in Paddle's order: {"name": "abcdef", "rank": -1, ...}.
std::string EncodePeerInfo(const PeerInfo& peer);
/// Parses a peer value; throws LaunchError naming `key` when it is not Paddle's peer JSON (a
/// missing field, endpoints not matching replicas, a malformed endpoint).
PeerInfo DecodePeerInfo(const std::string& key, const std::string& value);

/// Keys in node-rank order and this node's place among them.
struct KeyOrder {
  std::vector<std::string> keys;
  int own_index = 0;
};

/// Orders the keys under the info prefix as Paddle does (docs/master.md, "Rendezvous (Paddle's
/// protocol)"), whatever their values:
/// * `candidates` given (--sort_ip): by the numeric IPv4 of each key's candidate (ties: key order);
/// * else, if the keys carry explicit ranks (last segment >= 0): at those ranks, which must be
///   exactly 0..n-1 (else LaunchError naming the duplicate, missing or mixed ranks; `names` maps a
///   key to what the message calls its node);
/// * else by key as a string (the host's `aaaaaa` first, then random pod names).
/// `own_key` must be among `keys`.
KeyOrder OrderKeys(const std::vector<std::string>& keys, const std::string& own_key,
                   const std::map<std::string, std::string>& names,
                   const std::map<std::string, std::string>* candidates);

/// The peers in node-rank order and this node's place among them.
struct PeerOrder {
  std::vector<PeerInfo> peers;
  std::vector<std::string> keys;  ///< The key each peer was published under, same order.
  int own_index = 0;
};

/// Decodes the collective peers under the info prefix (key → value) and orders them (OrderKeys,
/// by candidate with `sort_ip`).
PeerOrder OrderPeers(const std::map<std::string, std::string>& entries, const std::string& own_key,
                     bool sort_ip);

/// The peers of a world the host formed, in its order (a participant of a pdlaunch master):
/// decoded (LaunchError on a bad one) and this node's found (LaunchError naming the job when it
/// is not a member: the world formed without it).
PeerOrder PeersInOrder(const WorldEntries& world, const std::string& own_key);

/// Where `own_key` stands in `world`; LaunchError when it is not there.
int OwnIndexInWorld(const WorldEntries& world, const std::string& own_key);

/// The Cluster the ordered peers describe: pod k = peer k, its trainers on its endpoints, global
/// ranks by node order then local index, master = peer 0's candidate. Only this node's trainers
/// get `devices` (the local plan); the backend and mode are the local plan's.
Cluster BuildMasterCluster(const PeerOrder& order, const DevicePlan& devices);

/// A node's root cause, as the node that saw it publishes it.
struct JobFailure {
  std::string node;   ///< Address of the node that failed.
  std::string pod;    ///< Its pod name.
  std::string cause;  ///< "rank 3 on node 10.0.0.2 exited with code 7".
  int exit_code = 1;  ///< What every launcher of the job exits with.
  /// The signal that stopped the launcher that wrote it (SIGINT, SIGTERM, ...): no rank failed,
  /// a node was stopped. 0: a failure. A sequence of jobs (the auto tuner's) stops there.
  int signal = 0;

  bool operator==(const JobFailure&) const = default;
};

std::string EncodeFailure(const JobFailure& failure);
/// A malformed record still stops the job: its text becomes the cause, exit code 1.
JobFailure DecodeFailure(const std::string& value);

/// What every node of one job must agree on: a node whose --nnodes or run mode differs from the
/// host's would form a world of its own (docs/master.md, "Mismatched nodes").
struct JobTerms {
  int nnodes = 0;
  std::string mode;  ///< "collective", "ps", "rpc", "legacy-collective" (a legacy --ips job).
  std::string node;  ///< The writer's address, to name it (escaped when decoded); may be empty.

  bool operator==(const JobTerms&) const = default;
};

/// {"nnodes": 3, "mode": "collective", "node": "10.0.0.2"}.
std::string EncodeJobTerms(const JobTerms& terms);
/// nullopt when `value` is not such a record (nnodes an integer in 1..1,000,000, mode one of
/// the three).
std::optional<JobTerms> DecodeJobTerms(const std::string& value);
/// How `node`'s terms differ from the job's (the host's), as one phrase naming both values:
/// "--nnodes 2 where the job's is 3", "run mode ps where the job's is collective"; nullopt when
/// they agree.
std::optional<std::string> TermsMismatch(const JobTerms& job, const JobTerms& node);

/// The multi-job rule (docs/master.md, "Several jobs on one master"): one pdlaunch master serves
/// one job, since its host leaves when its own job is done. From the master's /healthy answer
/// (`server` its Server header, `served_job` the job it names, possibly empty), the error of a
/// node of `own_job`, or nullopt when the node may register: same job, a master that names no
/// job, or a master that is not pdlaunch's (Paddle's serves any number of jobs). `served_job`
/// comes escaped (HttpReply::job); `own_job` is escaped here.
std::optional<std::string> ForeignJobError(const std::string& master, const std::string& server,
                                           const std::string& served_job,
                                           const std::string& own_job);

/// The news of the job as a participant reads them (under `keys.news_prefix()`).
struct JobNews {
  std::optional<JobTerms> terms;       ///< The host's; malformed is absent.
  std::optional<std::string> refused;  ///< Why the host refused this node (escaped).
  std::optional<WorldFormed> formed;
  std::optional<JobFailure> failure;
  bool complete = false;
};

/// Reads the news for the participant `pod` from an answer of the master (other keys ignored).
JobNews ParseNews(const MasterKeys& keys, const std::string& pod,
                  const std::map<std::string, std::string>& kvs);

/// What a participant does next, from the news (docs/master.md, "Failure detection").
struct NodeStep {
  enum class Kind {
    kWait,        ///< Nothing yet.
    kRefused,     ///< The host refused this node, or its terms are not the job's: `reason`.
    kCannotForm,  ///< The host cannot form the world: `reason`.
    kReadWorld,   ///< The world is formed: read it.
    kJobFailed,   ///< `failure`.
    kComplete,    ///< Every node is done (a PS node's servers may stop).
  };
  Kind kind = Kind::kWait;
  std::string reason;
  JobFailure failure;
};

/// The pure decision of a participant whose terms are `mine`, before (`formed` false) or after
/// it read the world. A failure comes first, at any time.
NodeStep DecideNodeStep(const JobNews& news, const JobTerms& mine, bool formed);

}  // namespace pdlaunch
