# The layers of src/ and the one direction of their includes (docs/design.md, "Where things are").
# Each folder of src/ (with its headers in include/pdlaunch/<folder>/) may include only the folders
# listed for it: options (what a user can ask, as plain data) is at the bottom, above base;
# process and coord are siblings, neither sees the other; tuner sits above both (its driver runs
# jobs through the JobRunner run/ gives it); cli, the command-line parser, reads into options and
# sees nothing else; run sits above them all.
#
# Run by every build (the check_layers target, which the first library depends on) and by hand:
#   cmake -P cmake/CheckLayers.cmake
# It fails, naming the file, the line and what that folder may include, when
#   * a file includes a header of a folder it may not see (an include that points up or sideways);
#   * an include names a header outside the layer folders ("pdlaunch/x.h") or climbs with "..";
#   * src/ or include/pdlaunch/ holds a source file outside the layer folders;
#   * (given -DPDLAUNCH_PURE_LIST=<file>, as the build gives it) a file marked PURE does I/O
#     (pdlaunch_check_pure, below).

cmake_minimum_required(VERSION 3.25)  # policies, in script mode too

set(PDLAUNCH_LAYERS base options plan process coord tuner cli run)
set(PDLAUNCH_LAYER_base_MAY base)
set(PDLAUNCH_LAYER_options_MAY base options)
set(PDLAUNCH_LAYER_plan_MAY base options plan)
set(PDLAUNCH_LAYER_process_MAY base options plan process)
set(PDLAUNCH_LAYER_coord_MAY base options plan coord)
set(PDLAUNCH_LAYER_tuner_MAY base options plan process coord tuner)
set(PDLAUNCH_LAYER_cli_MAY base options cli)
set(PDLAUNCH_LAYER_run_MAY base options plan process coord tuner cli run)

function(pdlaunch_check_layers root)
  set(problems "")
  file(GLOB strays "${root}/src/*.cc" "${root}/src/*.h" "${root}/include/pdlaunch/*.h"
       "${root}/include/pdlaunch/*.in")
  foreach(file IN LISTS strays)
    file(RELATIVE_PATH rel "${root}" "${file}")
    string(APPEND problems "  ${rel}: outside the layer folders (${PDLAUNCH_LAYERS})\n")
  endforeach()
  foreach(layer IN LISTS PDLAUNCH_LAYERS)
    file(GLOB_RECURSE files "${root}/src/${layer}/*.cc" "${root}/src/${layer}/*.h"
         "${root}/include/pdlaunch/${layer}/*.h" "${root}/include/pdlaunch/${layer}/*.h.in")
    string(REPLACE ";" " " may "${PDLAUNCH_LAYER_${layer}_MAY}")
    foreach(file IN LISTS files)
      file(RELATIVE_PATH rel "${root}" "${file}")
      file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
      foreach(line IN LISTS includes)
        string(STRIP "${line}" line)
        if(line MATCHES "\"\\.\\./|\"pdlaunch/[^/\"]*\"")
          string(APPEND problems "  ${rel}: ${line}: name the header by its layer folder\n")
        elseif(line MATCHES "\"(pdlaunch/)?([a-z_]+)/")
          set(target "${CMAKE_MATCH_2}")
          if(target IN_LIST PDLAUNCH_LAYERS AND NOT target IN_LIST PDLAUNCH_LAYER_${layer}_MAY)
            string(APPEND problems "  ${rel}: ${line}: ${layer}/ may include only ${may}\n")
          endif()
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(problems)
    message(FATAL_ERROR "Include layering broken (cmake/CheckLayers.cmake, docs/design.md):\n"
                        "${problems}")
  endif()
endfunction()

# The files src/CMakeLists.txt marks PURE (the core the fuzzers build alone) do no I/O and keep
# no company with effects: a line (not a comment) that opens, reads or writes a file, stats one,
# uses a socket or the resolver, reads or sets the environment, logs, or starts or signals a
# process fails the build, as does an include of the headers that do those things. Effects go
# in files marked EFFECTS, behind what the pure code is given (NodeEnv, DeviceProbe, EnvMap).
set(PDLAUNCH_PURE_FORBIDDEN
  "opens, reads or writes a file|::open\\(|[^_a-zA-Z]fopen\\(|std::[io]?fstream|opendir\\(|ReadSmallFile|ReadPidList|WriteAll\\(|::read\\(|::write\\(|::stat\\(|::access\\("
  "uses the network|::socket\\(|::bind\\(|::connect\\(|getaddrinfo\\(|getifaddrs\\("
  "reads or sets the environment|getenv\\(|GetEnv\\(|setenv\\(|[^_a-zA-Z.]environ[^_a-zA-Z]"
  "logs|PDLOG_[A-Z]+|spdlog::"
  "starts or signals a process|[^_a-zA-Z]fork\\(|exec[lv]p?e?\\(|::kill\\("
  "includes an effect's header|#[ \t]*include[ \t]*\"(pdlaunch/base/logging\\.h|base/small_file\\.h|pdlaunch/plan/address_lookup\\.h)\"")

function(pdlaunch_check_pure list_file)
  file(READ "${list_file}" pure_files)
  set(problems "")
  foreach(file IN LISTS pure_files)
    file(STRINGS "${file}" lines)
    get_filename_component(name "${file}" NAME)
    get_filename_component(dir "${file}" DIRECTORY)
    get_filename_component(layer "${dir}" NAME)
    foreach(line IN LISTS lines)
      string(STRIP "${line}" stripped)
      if(stripped MATCHES "^//")
        continue()
      endif()
      foreach(rule IN LISTS PDLAUNCH_PURE_FORBIDDEN)
        string(FIND "${rule}" "|" bar)
        string(SUBSTRING "${rule}" 0 ${bar} what)
        math(EXPR from "${bar} + 1")
        string(SUBSTRING "${rule}" ${from} -1 pattern)
        if(stripped MATCHES "${pattern}")
          string(APPEND problems "  src/${layer}/${name}: ${what}: ${stripped}\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(problems)
    message(FATAL_ERROR "A file marked PURE in src/CMakeLists.txt does I/O (cmake/CheckLayers.cmake; "
                        "move the effect to a file marked EFFECTS):\n${problems}")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  get_filename_component(pdlaunch_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
  pdlaunch_check_layers("${pdlaunch_root}")
  if(PDLAUNCH_PURE_LIST)
    pdlaunch_check_pure("${PDLAUNCH_PURE_LIST}")
  endif()
endif()
