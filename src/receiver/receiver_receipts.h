// The receipts a receiver issues, one per rung it observed itself.
#pragma once

#include "protocol/messages.h"
#include "receiver/receiver_core.h"
#include "store/store.h"
#include "writ/receipt.h"

namespace writ::receiver {

DeliveryRef RefOf(const protocol::Announce& announce);

Receipt ReceivedReceipt(const ReceiverCore& core, const DeliveryRef& ref, uint64_t chunks);
Receipt ValidatedReceipt(const ReceiverCore& core, const DeliveryRef& ref);
Receipt ProcessedReceipt(const ReceiverCore& core, const DeliveryRef& ref,
                         const ProcessingStep& step);
Receipt RetainedReceipt(const ReceiverCore& core, const DeliveryRef& ref,
                        const store::RetentionEvidence& evidence);

}  // namespace writ::receiver
