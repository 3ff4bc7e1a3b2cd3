# The build's checks of src/ (cmake/CheckLayers.cmake) pass on the tree, and the purity check
# fails on what it is for: a file marked PURE that logs, reads the environment, opens a file or
# a socket, starts a process, or includes an effect's header.
#   cmake -DPDLAUNCH_SOURCE=<repo> -DPDLAUNCH_PURE_LIST=<build>/pure_sources.txt
#         -DWORK=<scratch dir> -P tests/unit/check_layers_test.cmake
set(check ${PDLAUNCH_SOURCE}/cmake/CheckLayers.cmake)

# The tree as it is: both checks pass.
execute_process(COMMAND ${CMAKE_COMMAND} -DPDLAUNCH_PURE_LIST=${PDLAUNCH_PURE_LIST} -P ${check}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the tree fails its own checks:\n${out}")
endif()

# A pure file with one effect of each kind: each is named, with its line; comments are not code.
file(REMOVE_RECURSE ${WORK})
file(WRITE ${WORK}/src/plan/impure.cc [=[
#include "pdlaunch/base/logging.h"
// getenv( and ::open( in a comment are words, not calls.
int A() { return ::open("/etc/hosts", 0); }
const char* B() { return std::getenv("HOME"); }
void C() { PDLOG_INFO("hello"); }
int D() { return ::socket(2, 1, 0); }
int E() { return fork(); }
]=])
file(WRITE ${WORK}/pure.txt "${WORK}/src/plan/impure.cc")
execute_process(COMMAND ${CMAKE_COMMAND} -DPDLAUNCH_PURE_LIST=${WORK}/pure.txt -P ${check}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "an impure PURE file passed the check")
endif()
foreach(expected
    "src/plan/impure.cc: includes an effect's header"
    "src/plan/impure.cc: opens, reads or writes a file: int A()"
    "src/plan/impure.cc: reads or sets the environment: const char\\* B()"
    "src/plan/impure.cc: logs: void C()"
    "src/plan/impure.cc: uses the network: int D()"
    "src/plan/impure.cc: starts or signals a process: int E()")
  if(NOT out MATCHES "${expected}")
    message(FATAL_ERROR "the check did not say '${expected}':\n${out}")
  endif()
endforeach()
if(out MATCHES "in a comment")
  message(FATAL_ERROR "the check took a comment for code:\n${out}")
endif()
message(STATUS "check_layers: the tree passes; an impure PURE file fails, each effect named")
