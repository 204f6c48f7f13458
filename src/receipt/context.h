// The context every receipt carries, read from the provider actually in use.
#pragma once

#include "fabric/provider.h"
#include "writ/receipt.h"

namespace writ::receipt {

// transport: tcp | shm | roce_rc | ib_rc | iwarp | efa | other, from the provider and device.
std::string TransportFor(const fabric::ProviderInfo& provider);

ReceiptContext ContextFor(const fabric::ProviderInfo& provider, CompletionLevel relied_on,
                          bool write_with_data);

// "writ 0.1.0; libfabric 1.17; tcp;ofi_rxm 117.0"
std::string SoftwareRelease(const fabric::ProviderInfo& provider);

}  // namespace writ::receipt
