add_executable(digest_bench ${CMAKE_CURRENT_SOURCE_DIR}/digest_bench.cc)
target_link_libraries(digest_bench PRIVATE writ_protocol benchmark::benchmark)
