// Starting a receiver over a fabric other than libfabric's own node: Receiver::Start is
// StartReceiver(options, fabric::OpenFabricNode); in-process tests pass an opener that
// wraps the node in a FaultInjectingFabric.
#pragma once

#include <memory>
#include <string>

#include "fabric/fabric_port.h"
#include "writ/receiver.h"
#include "writ/status.h"

namespace writ::receiver {

// `store_faults`: see StartWithStoreFaults (receiver/test_seams.h); empty in production.
Result<std::unique_ptr<Receiver>> StartReceiver(ReceiverOptions options,
                                                fabric::FabricOpener open_fabric,
                                                std::string store_faults = "");

}  // namespace writ::receiver
