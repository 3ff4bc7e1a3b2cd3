// The controls of a job run as one of a sequence: its deadline.
#include "pdlaunch/process/job_controls.h"

#include <algorithm>
#include <utility>

#include "pdlaunch/base/logging.h"
#include "pdlaunch/base/seconds.h"

namespace pdlaunch {

JobDeadline::JobDeadline(double seconds, std::string what, std::string note)
    : what_(std::move(what)), note_(std::move(note)), seconds_(seconds) {
  Arm();
}

void JobDeadline::Arm() {
  end_ = std::chrono::steady_clock::now() + SteadyDuration(seconds_);
  hit_ = false;
}

double JobDeadline::tick_seconds() const { return std::min(1.0, std::max(0.05, seconds_ / 10)); }

bool JobDeadline::OnTick() {
  if (std::chrono::steady_clock::now() < end_ || hit_) return false;
  hit_ = true;
  PDLOG_WARN("{} of {} s{}; stopping it", what_, seconds_, note_);
  return true;
}

}  // namespace pdlaunch
