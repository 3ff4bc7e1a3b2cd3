// The one file a commit recompiles: build_commit.h is written by cmake/BuildCommit.cmake at every
// build, and changes only when the commit does.
#include "pdlaunch/base/build_commit.h"

#include "pdlaunch/base/version.h"

namespace pdlaunch {

const char* BuildCommit() { return kBuildCommitId; }

}  // namespace pdlaunch
