writ_add_fuzzer(protocol_fuzzer ${CMAKE_CURRENT_SOURCE_DIR}/protocol_fuzzer.cc writ_protocol)
