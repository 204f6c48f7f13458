// `writ rm ID --to HOST:PORT`: a signed `remove` message, answered by the receiver that
// holds ID (docs/protocol.md, "Removal"). The connection only dispatches to AnswerRemove.
#pragma once

#include "protocol/messages.h"

namespace writ::receiver {

struct ReceiverCore;

// The answer to `remove`: a RemoveAnswer when the delivery was removed (its --out files
// too), else a Refuse naming why (auth, unknown delivery, limit: promised for longer,
// retention: the index could not be changed). Logs the removal as `store rm` does.
protocol::Message AnswerRemove(ReceiverCore& core, const protocol::Remove& remove);

}  // namespace writ::receiver
