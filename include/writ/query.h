// writ::QueryDelivery: what a receiver holds for one delivery id now, asked over the
// control connection (the same exchange as `writ query`).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "writ/export.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ {

struct QueryOptions {
  std::string to;  // the receiver's control address, "HOST:PORT"
  // Directory of the asker's Ed25519 identity (created on first use): signs the query
  // for the receiver that said hello. Empty: unsigned (a receiver with an allow list
  // refuses it).
  std::string identity_dir;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds answer_timeout{30000};
};

// The receiver's answer, as it stated it: a claim, not evidence. Its receipts are the
// evidence (ReceiptFromJson, then VerifyReceipt). When `retained` is false it does not
// hold the delivery (or could not verify what it holds) and the other fields are empty.
struct HeldDelivery {
  std::string id;
  bool retained = false;
  std::string retention;  // a RetentionName from a writ receiver
  uint64_t bytes = 0;
  std::string rule;                   // a RuleName from a writ receiver
  std::string digest;                 // lowercase hex
  std::vector<std::string> receipts;  // each one receipt's JSON, as the receiver stored it
  std::string answer_json;            // the whole answer as sent
};

// kInvalidArgument: a bad address; kTransport: the receiver cannot be reached or does
// not answer; kRefused: it refused the query (e.g. unsigned or from a key it does not
// allow); kMalformed: an answer that is not one.
WRIT_EXPORT Result<HeldDelivery> QueryDelivery(const std::string& delivery_id,
                                               const QueryOptions& options);

}  // namespace writ
