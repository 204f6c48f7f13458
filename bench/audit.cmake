# audit_bench: parse + audit of a bundle of 100,000 work completions (docs/benchmarks.md).
add_executable(audit_bench ${CMAKE_CURRENT_SOURCE_DIR}/audit_bench.cc)
target_include_directories(audit_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests/audit)
target_link_libraries(audit_bench PRIVATE writ_audit benchmark::benchmark)
