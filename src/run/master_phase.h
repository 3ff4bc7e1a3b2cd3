#pragma once
// The phases of a node of a master's job and what moves it from one to the next, as a table
// (flux-core's state machines are tables too): the node (MasterNode, master_node.h) changes
// phase only through NextPhase. Pure; internal to run/.

#include <optional>

namespace pdlaunch::internal::master {

/// Where a node of a master's job is (docs/master.md, "A node's phases").
enum class Phase {
  kRendezvous,  ///< Publishing this node and waiting, with a deadline, for the world.
  kRunning,     ///< The world formed: this node's processes run, heartbeats go out.
  kCompleting,  ///< This node reported done (or a PS node's workers did); it waits for the rest.
  kDone,        ///< Left: what was in flight was delivered.
};

/// What moves a node from one phase to another.
enum class PhaseEvent {
  kWorldFormed,    ///< Every node is in the world, and this node has its rank.
  kWorkersDone,    ///< A PS node's workers completed; its servers stay until every node's do.
  kProcessesDone,  ///< This node's processes all ended well (an exchange: it had none).
  kLeft,           ///< The node leaves, whatever its phase (Finish).
};

/// One row of the table: in phase `from`, `event` leads to `to`.
struct PhaseTransition {
  Phase from;
  PhaseEvent event;
  Phase to;
};

/// Every transition there is; an event in a phase not listed here is a bug of the node.
inline constexpr PhaseTransition kPhaseTable[] = {
    {Phase::kRendezvous, PhaseEvent::kWorldFormed, Phase::kRunning},
    {Phase::kRunning, PhaseEvent::kWorkersDone, Phase::kCompleting},
    {Phase::kRunning, PhaseEvent::kProcessesDone, Phase::kCompleting},
    // A PS node whose workers were done, once its servers have ended too.
    {Phase::kCompleting, PhaseEvent::kProcessesDone, Phase::kCompleting},
    {Phase::kRendezvous, PhaseEvent::kLeft, Phase::kDone},
    {Phase::kRunning, PhaseEvent::kLeft, Phase::kDone},
    {Phase::kCompleting, PhaseEvent::kLeft, Phase::kDone},
};

/// The phase `event` leads to from `from`; nullopt when the table has no such row.
constexpr std::optional<Phase> NextPhase(Phase from, PhaseEvent event) {
  for (const PhaseTransition& row : kPhaseTable) {
    if (row.from == from && row.event == event) return row.to;
  }
  return std::nullopt;
}

/// "rendezvous", "running", "completing", "done": for DEBUG lines and messages.
const char* PhaseName(Phase phase);
/// "world formed", "workers done", "processes done", "left".
const char* PhaseEventName(PhaseEvent event);

}  // namespace pdlaunch::internal::master
