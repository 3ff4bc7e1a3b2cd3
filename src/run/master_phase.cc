#include "run/master_phase.h"

namespace pdlaunch::internal::master {

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kRendezvous:
      return "rendezvous";
    case Phase::kRunning:
      return "running";
    case Phase::kCompleting:
      return "completing";
    case Phase::kDone:
      return "done";
  }
  return "?";
}

const char* PhaseEventName(PhaseEvent event) {
  switch (event) {
    case PhaseEvent::kWorldFormed:
      return "world formed";
    case PhaseEvent::kWorkersDone:
      return "workers done";
    case PhaseEvent::kProcessesDone:
      return "processes done";
    case PhaseEvent::kLeft:
      return "left";
  }
  return "?";
}

}  // namespace pdlaunch::internal::master
