// Builds large, valid writ.evidence/1 bundles in memory for the scale test and
// the benchmark: `deliveries` deliveries of `portions` portions each, one
// success record per portion, with placement, an acknowledgement, a complete
// retention promise per delivery and a few claims.
#pragma once

#include <cstddef>
#include <string>

namespace writ::audit::testing {

inline std::string SyntheticBundle(std::size_t deliveries, std::size_t portions) {
  constexpr std::size_t kPortionBytes = 8388608;
  std::string out;
  out.reserve(deliveries * portions * 200 + deliveries * 600 + 1024);
  out += R"({"schema":"writ.evidence/1","context":{"operation":"rdma_write_with_imm",)"
         R"("transport":"roce_rc","device":"mlx5_0","memory_type":"dram",)"
         R"("software_release":"bench","completion_level":"delivery"},"deliveries":[)";
  for (std::size_t d = 0; d < deliveries; ++d) {
    if (d) out += ',';
    out += R"({"id":"D-)" + std::to_string(d) + R"(","bytes":)" +
           std::to_string(portions * kPortionBytes) + R"(,"portions":[)";
    for (std::size_t p = 0; p < portions; ++p) {
      if (p) out += ',';
      out += R"({"wr_id":")" + std::to_string(d * portions + p) + R"(","offset":)" +
             std::to_string(p * kPortionBytes) + R"(,"bytes":)" + std::to_string(kPortionBytes) +
             "}";
    }
    out += "]}";
  }
  out += R"(],"work_completions":[)";
  for (std::size_t r = 0; r < deliveries * portions; ++r) {
    if (r) out += ',';
    out +=
        R"({"wr_id":")" + std::to_string(r) +
        R"(","status":"success","opcode":"rdma_write","byte_len":null,"qp_num":7,"vendor_err":0})";
  }
  auto per_delivery = [&](const char* key, const std::string& before, const std::string& after) {
    out += std::string(R"(],")") + key + R"(":[)";
    for (std::size_t d = 0; d < deliveries; ++d) {
      if (d) out += ',';
      out += before + std::to_string(d) + after;
    }
  };
  per_delivery("placement", R"({"delivery":"D-)", R"(","basis":"observed"})");
  per_delivery("notifications", R"({"delivery":"D-)", R"(","kind":"write_with_imm","imm":1})");
  per_delivery("acknowledgements", R"({"label":"passed","delivery":"D-)",
               R"(","bytes":)" + std::to_string(portions * kPortionBytes) +
                   R"(,"result":"processed","rule":"xxh3-128"})");
  per_delivery("retention_promises", R"({"delivery":"D-)",
               R"(","acknowledged_point":"fdatasync","survives":"power-loss",)"
               R"("promise_after_failure":"readable after restart","evidence":"power-cut test"})");
  out += R"(],"claims":[)";
  out += R"({"id":"c1","kind":"work_requests_succeeded","count":)" +
         std::to_string(deliveries * portions) + "},";
  out += R"({"id":"c2","kind":"jobs_completed","count":)" + std::to_string(deliveries) + "},";
  out += R"({"id":"c3","kind":"durable","delivery":"D-0","survives":"power-loss"}]})";
  return out;
}

}  // namespace writ::audit::testing
