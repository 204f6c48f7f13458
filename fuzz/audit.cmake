writ_add_fuzzer(audit_fuzzer ${CMAKE_CURRENT_SOURCE_DIR}/audit_fuzzer.cc writ_audit)
