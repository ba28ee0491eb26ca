# Included by tests/CMakeLists.txt: registers the installed-package consumer test (see run_consumer_test.cmake).
add_test(NAME package_consumer
         COMMAND ${CMAKE_COMMAND} -DZYFA_BUILD_DIR=${CMAKE_BINARY_DIR}
                 -DCONSUMER_SRC=${CMAKE_CURRENT_LIST_DIR} -DWORK_DIR=${CMAKE_BINARY_DIR}/consumer-test
                 -P ${CMAKE_CURRENT_LIST_DIR}/run_consumer_test.cmake)
