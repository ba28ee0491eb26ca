# Included by tests/CMakeLists.txt: registers the installed-package consumer test (see run_consumer_test.cmake)
# and the install-only configure without doctest and zlib (see run_install_only_test.cmake).
add_test(NAME package_consumer
         COMMAND ${CMAKE_COMMAND} -DZYFA_BUILD_DIR=${CMAKE_BINARY_DIR}
                 -DCONSUMER_SRC=${CMAKE_CURRENT_LIST_DIR} -DWORK_DIR=${CMAKE_BINARY_DIR}/consumer-test
                 -P ${CMAKE_CURRENT_LIST_DIR}/run_consumer_test.cmake)
add_test(NAME install_without_deps
         COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${CMAKE_BINARY_DIR}/install-only-test
                 -DCXX=${CMAKE_CXX_COMPILER} -DGENERATOR=${CMAKE_GENERATOR}
                 -P ${CMAKE_CURRENT_LIST_DIR}/run_install_only_test.cmake)
