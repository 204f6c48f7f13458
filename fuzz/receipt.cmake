writ_add_fuzzer(receipt_fuzzer ${CMAKE_CURRENT_SOURCE_DIR}/receipt_fuzzer.cc writ_receipt)
