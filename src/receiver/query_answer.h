// `writ query`: a signed `query` message, answered from the store (docs/protocol.md,
// "Queries"). The connection only dispatches to AnswerQuery.
#pragma once

#include "protocol/messages.h"

namespace writ::receiver {

struct ReceiverCore;

// The answer to `query`: a QueryAnswer (the delivery's state, and its receipts when it is
// retained), or a Refuse when the query's signature is not admitted.
protocol::Message AnswerQuery(ReceiverCore& core, const protocol::Query& query);

}  // namespace writ::receiver
