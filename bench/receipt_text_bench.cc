// receipt_text_bench: writes the signed and the unsigned text of the receipts one small
// delivery gets from a receiver (received, validated, retained volatile; group-signed),
// N times, one way:
//   receipt_text_bench --way writer|dom [--count 10000]
// writer: the fixed-layout writer writ uses (src/receipt/canonical_json.h); dom: the
// nlohmann::json document it replaced (tests/support/receipt_dom_reference.h). The two
// give the same bytes (tests/unit/receipt_writer_test.cc); the way that differs is what
// producing them costs. Run under `valgrind --tool=callgrind` (bench/receipt_text_profile)
// for instruction counts, which do not depend on the machine's load.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "receipt/canonical_json.h"
#include "receipt_dom_reference.h"
#include "writ/receipt.h"

namespace {

writ::Receipt SmallDeliveryReceipt(writ::ReceiptRung rung, uint64_t leaf) {
  writ::Receipt r;
  r.rung = rung;
  r.delivery = {"small-1764628800-inflight-" + std::to_string(leaf),
                4096,
                "xxh3-128",
                "00112233445566778899aabbccddeeff",
                1,
                4096};
  r.issuer = "writ serve 127.0.0.1:7000";
  r.issued_at = "2026-12-01T22:00:00.000Z";
  r.context = {"rdma_write_with_imm",
               "tcp",
               "tcp;ofi_rxm",
               "lo",
               "dram",
               "writ 0.1.0; libfabric 1.17",
               "delivery",
               {"tcp: completion means the bytes left this host's stack"}};
  r.observer = "receiver";
  r.statement = "every chunk of the delivery arrived in the receiver's memory";
  r.does_not_establish = "that the bytes are the sender's (validated)";
  if (rung == writ::ReceiptRung::kReceived) r.observed_chunks = 1;
  if (rung == writ::ReceiptRung::kValidated) r.rule_passed = "xxh3-128 of the complete delivery";
  if (rung == writ::ReceiptRung::kRetained) {
    r.retention =
        writ::RetentionPromise{"volatile", "copied into the volatile reserve", "process-running",
                               "lost if the serve stops", "memcpy of 4096 bytes"};
  }
  writ::ReceiptSignature& s = r.signature.emplace();
  s.algorithm = "ed25519-merkle-sha256";
  s.key_id = std::string(16, 'a');
  s.public_key = std::string(64, 'b');
  s.value = std::string(128, 'c');
  s.root = std::string(64, 'd');
  s.leaf_index = leaf;
  s.leaves = 192;
  for (int i = 0; i < 8; ++i) s.path.push_back({i % 2 ? "left" : "right", std::string(64, 'e')});
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string way = "writer";
  long count = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--way") way = argv[i + 1];
    if (flag == "--count") count = std::atol(argv[i + 1]);
  }
  if (way != "writer" && way != "dom") {
    std::fprintf(stderr, "receipt_text_bench: --way writer|dom\n");
    return 2;
  }
  std::vector<writ::Receipt> receipts;
  for (auto rung : {writ::ReceiptRung::kReceived, writ::ReceiptRung::kValidated,
                    writ::ReceiptRung::kRetained}) {
    receipts.push_back(SmallDeliveryReceipt(rung, receipts.size()));
  }
  size_t bytes = 0;
  std::string text;
  for (long n = 0; n < count; ++n) {
    for (const writ::Receipt& r : receipts) {
      if (way == "writer") {
        // What signing a receipt writes: its unsigned text, then the signed one.
        text.clear();
        writ::receipt::AppendUnsignedReceiptJson(text, r);
        bytes += text.size();
        text.clear();
        writ::receipt::AppendReceiptJson(text, r);
        bytes += text.size();
      } else {
        bytes += writ::dom_reference::DomReceiptText(r, false).size();
        bytes += writ::dom_reference::DomReceiptText(r, true).size();
      }
    }
  }
  std::printf("{\"way\":\"%s\",\"receipts\":%ld,\"bytes\":%zu}\n", way.c_str(),
              count * static_cast<long>(receipts.size()), bytes);
  return 0;
}
