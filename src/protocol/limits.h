// Bounds a decoder enforces on everything read from the wire.
#pragma once

#include <cstdint>

namespace writ::protocol {

struct Limits {
  uint32_t max_frame_bytes = 1 << 20;  // whole frame: header + payload
  uint32_t max_id_bytes = 256;         // delivery and receiver ids
  uint32_t max_address_bytes = 1024;   // fabric addresses (fi_getname output)
  uint32_t max_name_bytes = 256;       // libfabric provider names ("tcp;ofi_rxm")
  uint32_t max_detail_bytes = 4096;    // human text in refuse / abort
  uint32_t max_regions = 65536;        // an announce's region table (8 bytes each: 512 KiB)
  uint32_t max_target_pages = 4096;    // an announce's page list (8 bytes each: 32 KiB)
  // Whether a `receipt`/`receipts` message's JSON is parsed in full as it is decoded. A
  // reader that parses every receipt it reads at once (the sender: ReceiptFromJson, stricter
  // than this check) sets false, so that each receipt is parsed once; its shape (a JSON
  // object) is still checked, and the JSON of other messages always parsed.
  bool parse_receipt_json = true;
};

}  // namespace writ::protocol
