// The retained receipt's words for a durable commit, rendered from its sync records.
#pragma once

#include <string>

#include "store/store.h"
#include "store/sync_steps.h"

namespace writ::store {

// Where the store is, for the promise (`writ store cat ... --data DIR`) and the evidence.
struct StorePlace {
  std::string dir;
  std::string filesystem;  // FsInfo::type
};

// The acknowledged point, promise and evidence of `steps`; `steps` is kept with them.
RetentionEvidence DescribeCommit(const SyncSteps& steps, const DeliveryMeta& meta,
                                 const StorePlace& place);

}  // namespace writ::store
