// Keeps the PSM libraries out of a process that loads libfabric. Debian's libfabric names
// libpsm_infinipath.so.1 (-> libinfinipath.so.4) and libpsm2.so.2 as dependencies; their
// constructors pin the thread to one CPU and sleep ~0.1 s each calibrating a clock, at load
// time, whatever provider is asked for. Stand-ins with the same SONAMEs (psm_stubs/, built
// with writ and embedded in it) are loaded from memory first: the dynamic linker then
// counts those dependencies as met and never maps the real libraries. Every stand-in call
// fails, so the psm and psm2 providers find no device; tcp, shm and verbs never call them.
#pragma once

#include "writ/status.h"

namespace writ::fabric {

// Loads both stand-ins (call before dlopen'ing libfabric); does nothing when the
// environment sets WRIT_FABRIC_PSM=1 (a host that really has a PSM fabric). On an error
// the real libraries load as before: slower, not wrong.
Status LoadPsmStandIns();

}  // namespace writ::fabric
