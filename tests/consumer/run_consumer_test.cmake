# ctest driver (test package_consumer): installs the configured zyfa build tree into a fresh temporary prefix,
# then configures, builds and runs tests/consumer against that prefix only, and checks that asking for a
# version the package does not provide fails.
# Inputs (-D): ZYFA_BUILD_DIR (zyfa's configured build tree), CONSUMER_SRC (this directory), WORK_DIR (scratch).
foreach(v ZYFA_BUILD_DIR CONSUMER_SRC WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_consumer_test.cmake: -D${v}=... is required")
  endif()
endforeach()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok\n${out}")
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run_step("install zyfa" ${CMAKE_COMMAND} --install "${ZYFA_BUILD_DIR}" --prefix "${prefix}")
foreach(f include/zyfa/zyfa.hpp lib/cmake/zyfa/zyfaConfig.cmake lib/cmake/zyfa/zyfaConfigVersion.cmake
          lib/cmake/zyfa/zyfaTargets.cmake)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "installed tree lacks ${f}")
  endif()
endforeach()

# Only the temporary prefix is searched: no package registry, no system paths for zyfa.
set(common -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF -DZYFA_EXPECTED_PREFIX=${prefix})
run_step("configure consumer" ${CMAKE_COMMAND} -S "${CONSUMER_SRC}" -B "${WORK_DIR}/build" ${common})
run_step("build consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
find_program(consumer_exe zyfa_consumer PATHS "${WORK_DIR}/build" NO_DEFAULT_PATH REQUIRED)
run_step("run consumer" "${consumer_exe}")

# The version file must refuse an incompatible request.
execute_process(COMMAND ${CMAKE_COMMAND} -S "${CONSUMER_SRC}" -B "${WORK_DIR}/build-badversion" ${common}
                        -DZYFA_REQUIRED_VERSION=99.0
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(rc EQUAL 0)
  message(FATAL_ERROR "find_package(zyfa 99.0) succeeded; zyfaConfigVersion.cmake should have refused it")
endif()
message(STATUS "find_package(zyfa 99.0) correctly refused")
