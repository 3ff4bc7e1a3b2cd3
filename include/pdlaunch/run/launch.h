#pragma once

namespace pdlaunch {

/// The whole program: parse, decide, run the job chosen (RunChosen: the job, or the auto tuner's
/// search of jobs), catch once, map to an exit code.
int Main(int argc, char** argv);

}  // namespace pdlaunch
