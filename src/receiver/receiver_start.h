// Starting a receiver with test seams: over a fabric other than libfabric's own node, with
// store faults, with a shorter progress watch. Receiver::Start is
// StartReceiver(options, fabric::OpenFabricNode); in-process tests and the CLI's hidden
// test flags pass an opener that wraps the node in a FaultInjectingFabric. Test-only
// fault injection is kept out of ReceiverOptions.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "fabric/fabric_port.h"
#include "writ/receiver.h"
#include "writ/status.h"

namespace writ::receiver {

// How long one turn of the progress thread may last before the receiver reports its fabric
// stuck (Receiver::health). A turn waits at most 100 ms for records; the rest is margin for
// a loaded machine, as a report ends the receiver's usefulness (`writ serve` exits).
inline constexpr std::chrono::milliseconds kProgressStuckAfter{30000};

// `store_faults`: the durable store (--data) fails the file-system calls it names (the
// FaultInjectionEnv spec of src/store/fault_env.h; recovery is never faulted); empty in
// production.
// `progress_stuck_after`: tests shorten it (never below TurnWatch::kMinLimit).
Result<std::unique_ptr<Receiver>> StartReceiver(
    ReceiverOptions options, fabric::FabricOpener open_fabric, std::string store_faults = "",
    std::chrono::milliseconds progress_stuck_after = kProgressStuckAfter);

}  // namespace writ::receiver
