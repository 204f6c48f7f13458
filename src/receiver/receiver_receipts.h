// The receipts a receiver issues, one per rung it observed itself.
//
// Each is written into a receipt this thread keeps for that rung and reuses: its strings
// keep their room from one delivery to the next, so that a connection's thread builds a
// rung's receipt without allocating once warm. What they return is valid until the next
// receipt of the same rung on the same thread, which is long enough to write its text
// (receipt::Unsigned) or adjust it first (InboundRun::InTarget).
#pragma once

#include "protocol/messages.h"
#include "receiver/receiver_core.h"
#include "store/store.h"
#include "writ/receipt.h"

namespace writ::receiver {

DeliveryRef RefOf(const protocol::Announce& announce);

Receipt& ReceivedReceipt(const ReceiverCore& core, const protocol::Announce& announce,
                         uint64_t chunks);
Receipt& ValidatedReceipt(const ReceiverCore& core, const protocol::Announce& announce);
Receipt& ProcessedReceipt(const ReceiverCore& core, const protocol::Announce& announce,
                          const ProcessingStep& step);
Receipt& RetainedReceipt(const ReceiverCore& core, const protocol::Announce& announce,
                         const store::RetentionEvidence& evidence);

}  // namespace writ::receiver
