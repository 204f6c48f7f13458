// A complete receipt for tests that sign, group or verify receipts: a `validated` or
// `received` receipt (with that rung's own field) about a 4 KiB delivery named `id`.
#pragma once

#include <string>

#include "writ/receipt.h"

namespace writ {

inline Receipt SampleReceipt(ReceiptRung rung, const std::string& id) {
  Receipt r;
  r.rung = rung;
  r.delivery = {id, 4096, "xxh3-128", "00112233445566778899aabbccddeeff", 1, 4096};
  r.issuer = "writ-serve@127.0.0.1:7233";
  r.issued_at = "2026-11-29T07:00:00.000Z";
  r.context = {"rdma_write_with_imm", "tcp", "tcp", "lo", "dram", "writ 0.1.0", "delivery", {}};
  if (rung == ReceiptRung::kReceived) {
    r.observer = "receiver";
    r.statement = "received";
    r.does_not_establish = "validation";
    r.observed_chunks = 1;
  } else {
    r.observer = "receiver application";
    r.statement = "validated";
    r.does_not_establish = "retention";
    r.rule_passed = "xxh3-128 of the complete delivery";
  }
  return r;
}

}  // namespace writ
