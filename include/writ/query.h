// writ::QueryDelivery: what a receiver holds for one delivery id now, asked over the
// control connection (the same exchange as `writ query`).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "writ/receipt.h"
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

// The receiver's answer. When `retained` is false it does not hold the delivery (or
// could not verify what it holds) and the other fields are empty.
struct HeldDelivery {
  std::string id;
  bool retained = false;
  std::optional<RetentionClass> retention;
  uint64_t bytes = 0;
  std::optional<Rule> rule;
  std::string digest;             // lowercase hex
  std::vector<Receipt> receipts;  // as the receiver stored them
  std::string answer_json;        // the answer as sent
};

// kInvalidArgument: a bad address; kTransport: the receiver cannot be reached or does
// not answer; kRefused: it refused the query (e.g. unsigned or from a key it does not
// allow); kMalformed: an answer that is not one.
Result<HeldDelivery> QueryDelivery(const std::string& delivery_id, const QueryOptions& options);

}  // namespace writ
