# receipt_text_bench: the canonical JSON of receipts, written by the fixed-layout writer
# (src/receipt/canonical_json.h) and by the JSON document it replaced
# (tests/support/receipt_dom_reference.h); bench/receipt_text_profile counts instructions.
add_executable(receipt_text_bench ${CMAKE_CURRENT_SOURCE_DIR}/receipt_text_bench.cc)
target_include_directories(receipt_text_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)
target_link_libraries(receipt_text_bench PRIVATE writ_receipt nlohmann_json::nlohmann_json)
