# ctest driver (test cxx14_rejected): zyfa needs C++17, and an older standard must say so in its FIRST error
# (include/zyfa/platform/platform.hpp's #error), not in a cascade from std::optional and friends.
# Every header under include/zyfa is taken alone with -std=c++14: it must either fail with that message as its
# first error, which holds when it includes platform.hpp before any C++17 code, or compile (it needs nothing from
# C++17). The umbrella zyfa/zyfa.hpp must fail. To keep this cheap, each header is first only preprocessed (the
# #error is a preprocessor error; error limit 1 stops there); only a header that preprocesses without error is
# then compiled.
# Inputs (-D): CXX (GCC or Clang driver), COMPILER_ID (GNU or Clang), INCLUDE_DIR, WORK_DIR.
cmake_minimum_required(VERSION 3.21)  # -P scripts get no policies from the project (IN_LIST needs CMP0057)
foreach(v CXX COMPILER_ID INCLUDE_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_cxx14_rejected.cmake: -D${v}=... is required")
  endif()
endforeach()
if(COMPILER_ID STREQUAL "GNU")
  set(limit -fmax-errors=1)
else()
  set(limit -ferror-limit=1)
endif()
set(want "zyfa needs C++17")

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(GLOB_RECURSE headers RELATIVE "${INCLUDE_DIR}" "${INCLUDE_DIR}/zyfa/*.hpp")
# included only by platform.hpp, after its check (cuda.hpp/hip.hpp also need a GPU compiler)
list(REMOVE_ITEM headers zyfa/platform/cuda.hpp zyfa/platform/hip.hpp zyfa/platform/host.hpp)
list(LENGTH headers n)
if(n LESS 10 OR NOT "zyfa/zyfa.hpp" IN_LIST headers)
  message(FATAL_ERROR "found ${n} headers under ${INCLUDE_DIR}/zyfa, expected the whole library")
endif()

set(rejected 0)
set(accepted "")
set(bad "")
foreach(h IN LISTS headers)
  string(MAKE_C_IDENTIFIER "${h}" id)
  set(tu "${WORK_DIR}/${id}.cpp")
  file(WRITE "${tu}" "#include <${h}>\n")
  execute_process(COMMAND "${CXX}" -std=c++14 -E ${limit} -I "${INCLUDE_DIR}" "${tu}"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  set(out "")
  if(rc EQUAL 0)
    execute_process(COMMAND "${CXX}" -std=c++14 -fsyntax-only ${limit} -I "${INCLUDE_DIR}" "${tu}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(rc EQUAL 0)
      list(APPEND accepted "${h}")
      continue()
    endif()
  endif()
  # the first diagnostic line that is an error (notes and "In file included from" lines are skipped)
  string(REGEX MATCH "[^\n]*error:[^\n]*" first "${err}${out}")
  string(FIND "${first}" "${want}" pos)
  if(pos EQUAL -1)
    string(APPEND bad "\n  ${h}: first error is\n    ${first}")
  else()
    math(EXPR rejected "${rejected} + 1")
  endif()
endforeach()

if(NOT bad STREQUAL "")
  message(FATAL_ERROR "with -std=c++14 these headers do not fail first with \"${want}\" (include "
                      "\"platform/platform.hpp\" before anything that needs C++17):${bad}")
endif()
if("zyfa/zyfa.hpp" IN_LIST accepted)
  message(FATAL_ERROR "zyfa/zyfa.hpp compiled with -std=c++14; platform.hpp's C++17 check did not fire")
endif()
list(JOIN accepted ", " accepted)
message(STATUS "-std=c++14: ${rejected} headers stop with \"${want}\"; these compile as C++14: ${accepted}")
