// The master node's phase table (src/run/master_phase.h): every phase and event, and the
// transitions a node of a master's job makes on each of its ways to the end.
#include "run/master_phase.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace pdlaunch::internal::master {
namespace {

constexpr Phase kPhases[] = {Phase::kRendezvous, Phase::kRunning, Phase::kCompleting, Phase::kDone};
constexpr PhaseEvent kEvents[] = {PhaseEvent::kWorldFormed, PhaseEvent::kWorkersDone,
                                  PhaseEvent::kProcessesDone, PhaseEvent::kLeft};

// The table is read at compile time too.
static_assert(NextPhase(Phase::kRendezvous, PhaseEvent::kWorldFormed) == Phase::kRunning);
static_assert(!NextPhase(Phase::kDone, PhaseEvent::kWorldFormed));

// Follows `events` from the rendezvous; the phases passed through, or "" where the table has
// no row.
std::vector<std::string> Walk(const std::vector<PhaseEvent>& events) {
  std::vector<std::string> phases;
  Phase phase = Phase::kRendezvous;
  for (const PhaseEvent event : events) {
    const std::optional<Phase> next = NextPhase(phase, event);
    if (!next) {
      phases.emplace_back();
      return phases;
    }
    phase = *next;
    phases.emplace_back(PhaseName(phase));
  }
  return phases;
}

TEST(MasterPhaseTest, EveryWayOfANodeEndsDone) {
  using E = PhaseEvent;
  // A collective job that completes.
  EXPECT_EQ(Walk({E::kWorldFormed, E::kProcessesDone, E::kLeft}),
            (std::vector<std::string>{"running", "completing", "done"}));
  // A PS node: its workers first, then its servers.
  EXPECT_EQ(Walk({E::kWorldFormed, E::kWorkersDone, E::kProcessesDone, E::kLeft}),
            (std::vector<std::string>{"running", "completing", "completing", "done"}));
  // A rank failed, or a signal came, while running.
  EXPECT_EQ(Walk({E::kWorldFormed, E::kLeft}), (std::vector<std::string>{"running", "done"}));
  // The world never formed (a timeout, a refused node, a signal).
  EXPECT_EQ(Walk({E::kLeft}), (std::vector<std::string>{"done"}));
}

TEST(MasterPhaseTest, WhatTheTableHasNoRowForIsRefused) {
  using E = PhaseEvent;
  EXPECT_EQ(Walk({E::kProcessesDone}), (std::vector<std::string>{""}));  // Before the world.
  EXPECT_EQ(Walk({E::kWorldFormed, E::kWorldFormed}), (std::vector<std::string>{"running", ""}));
  EXPECT_EQ(Walk({E::kLeft, E::kLeft}), (std::vector<std::string>{"done", ""}));  // Once.
  for (const PhaseEvent event : kEvents) EXPECT_FALSE(NextPhase(Phase::kDone, event));
}

TEST(MasterPhaseTest, RowsAreUniqueAndNamed) {
  std::set<std::pair<int, int>> seen;
  for (const PhaseTransition& row : kPhaseTable) {
    EXPECT_TRUE(seen.emplace(static_cast<int>(row.from), static_cast<int>(row.event)).second)
        << PhaseName(row.from) << " / " << PhaseEventName(row.event) << " is listed twice";
  }
  for (const Phase phase : kPhases) EXPECT_STRNE(PhaseName(phase), "?");
  for (const PhaseEvent event : kEvents) EXPECT_STRNE(PhaseEventName(event), "?");
  // Every phase but the last is left by kLeft.
  for (const Phase phase : kPhases) {
    if (phase != Phase::kDone) {
      EXPECT_EQ(NextPhase(phase, PhaseEvent::kLeft), Phase::kDone);
    }
  }
}

}  // namespace
}  // namespace pdlaunch::internal::master
