# inprocess_cost_bench: writ's own CPU, allocations and signatures per small delivery, both
# sides in one process over the in-memory fabric (bench/inprocess_cost runs it).
add_executable(inprocess_cost_bench ${CMAKE_CURRENT_SOURCE_DIR}/inprocess_cost_bench.cc)
target_link_libraries(inprocess_cost_bench PRIVATE writ_sender writ_receiver
                      nlohmann_json::nlohmann_json)
