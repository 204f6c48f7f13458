add_executable(raw_write_bench ${CMAKE_CURRENT_SOURCE_DIR}/raw_write_bench.cc)
target_link_libraries(raw_write_bench PRIVATE writ_fabric nlohmann_json::nlohmann_json)
