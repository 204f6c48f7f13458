// The few exported libfabric functions writ calls directly, loaded on first use
// with dlopen("libfabric.so.1") instead of linked: commands that never touch a
// fabric (audit, verify, key, store, --help, --version) do not pay the library's
// start-up (its dependencies' constructors); and the PSM libraries it names are
// met by stand-ins, never loaded (psm_stand_ins.h). The static inline wrappers of
// <rdma/*.h> (fi_domain, fi_close, ...) go through the fid ops tables and need
// nothing from here.
#pragma once

#include <rdma/fabric.h>

#include "writ/status.h"

namespace writ::fabric {

struct LibfabricApi {
  decltype(&::fi_getinfo) getinfo = nullptr;
  decltype(&::fi_freeinfo) freeinfo = nullptr;
  decltype(&::fi_dupinfo) dupinfo = nullptr;
  decltype(&::fi_fabric) fabric = nullptr;
  decltype(&::fi_strerror) strerror = nullptr;
  decltype(&::fi_version) version = nullptr;
};

// Loads the library once (thread-safe) and resolves every function; the error
// names the library or the missing symbol and dlerror()'s reason.
Result<const LibfabricApi*> Libfabric();

// fi_strerror(err), or the C library's text for it when libfabric cannot be loaded.
const char* LibfabricStrerror(int err);

}  // namespace writ::fabric
