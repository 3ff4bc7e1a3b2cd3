#pragma once
// What the nodes of a job told each other, for callers that exchange values through the job's
// master or etcd (the auto tuner's agreement on its plan and on each trial's outcome).

#include <string>
#include <vector>

namespace pdlaunch {

/// What every node of a master-rendezvous job published: its exit code (0, or a failed
/// rendezvous's, 128 + n for a signal) and, on 0, every node's value in the world's order.
struct ExchangeResult {
  int code = 0;
  std::vector<std::string> values;
};

}  // namespace pdlaunch
