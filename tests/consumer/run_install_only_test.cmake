# ctest driver (test install_without_deps): `cmake -S . -B build && cmake --install build` must work with nothing
# but CMake and a compiler. zyfa is configured with its default options while doctest and zlib are made
# unfindable (CMAKE_DISABLE_FIND_PACKAGE_*: a QUIET find then fails, a REQUIRED one is a configure error), must
# say that it skips the tests and examples/prefill, and must install its package files without a build.
# Inputs (-D): SOURCE_DIR (zyfa's source tree), WORK_DIR (scratch), CXX (the compiler), GENERATOR.
cmake_minimum_required(VERSION 3.21)
foreach(v SOURCE_DIR WORK_DIR CXX GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_install_only_test.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
                        -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON
                        -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure without doctest and zlib failed (${rc}):\n${out}\n${err}")
endif()
foreach(skip "zyfa: tests skipped: doctest not found" "zyfa: examples/prefill (zyfa_prefill) skipped: zlib not found")
  string(FIND "${out}" "${skip}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "configure output lacks \"${skip}\":\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} --install "${WORK_DIR}/build" --prefix "${WORK_DIR}/prefix"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed (${rc}):\n${out}\n${err}")
endif()
foreach(f include/zyfa/zyfa.hpp lib/cmake/zyfa/zyfaConfig.cmake lib/cmake/zyfa/zyfaTargets.cmake)
  if(NOT EXISTS "${WORK_DIR}/prefix/${f}")
    message(FATAL_ERROR "installed tree lacks ${f}")
  endif()
endforeach()
message(STATUS "configured without doctest and zlib (tests and examples/prefill skipped) and installed")
