// Fault injection for tests and the CLI's hidden --test-store-faults: kept out of
// ReceiverOptions.
#pragma once

#include <memory>
#include <string>

#include "writ/receiver.h"

namespace writ::receiver {

// Receiver::Start whose durable store (--data) fails the file-system calls `faults`
// names (the FaultInjectionEnv spec of src/store/fault_env.h); recovery is never faulted.
Result<std::unique_ptr<Receiver>> StartWithStoreFaults(ReceiverOptions options, std::string faults);

}  // namespace writ::receiver
