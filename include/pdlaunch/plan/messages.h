#pragma once

#include <string>
#include <vector>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/plan/trainer_env.h"

namespace pdlaunch {

/// The "Distributed Envs" table of docs/cli.md, beginning and ending with '\n'. K = max(40,
/// longest key), V = 45; keys right-aligned in K, values centred in V (extra space on the right);
/// a value of 45 characters or more shows as "... " + its last 41 characters.
std::string FormatDistributedEnvs(const EnvList& rows,
                                  const std::string& header = "Distributed Envs",
                                  const std::string& value_header = "Value");

/// Content of endpoints.log (docs/cli.md): "PADDLE_TRAINER_ENDPOINTS: \n" then the endpoints one
/// per line, no trailing newline.
std::string FormatEndpointsLog(const std::vector<Endpoint>& endpoints);

/// "ABORT!!! Out of all {world_size} trainers, the trainer process with rank=[1, 3] was aborted.
/// Please check its log." (ranks as a Python list repr, docs/exit-codes.md). Parameter-server jobs
/// name their roles the same way: "Out of all 2 servers, the server process with rank=[0] ...".
std::string FormatAbortLine(int world_size, const std::vector<int>& ranks,
                            const std::string& role = "trainer");

}  // namespace pdlaunch
