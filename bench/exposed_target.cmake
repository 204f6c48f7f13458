# exposed_target_bench: KV blocks into an embedded receiver's exposed paged buffer (issue
# #32), beside raw fi_write (bench/exposed_target runs both).
add_executable(exposed_target_bench ${CMAKE_CURRENT_SOURCE_DIR}/exposed_target_bench.cc)
target_link_libraries(exposed_target_bench PRIVATE writ_sender writ_receiver
                      nlohmann_json::nlohmann_json)
