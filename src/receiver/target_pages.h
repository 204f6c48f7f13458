// Where a delivery goes in an exposed target (docs/architecture.md, "Exposed targets"): a
// byte range at an offset, or a list of pages of a paged target, delivery byte
// i * page_size landing in page pages[i]. Pure checks and arithmetic over the target's
// geometry; the registry (ExposedTargets) decides overlaps with deliveries in flight.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "writ/receiver.h"
#include "writ/status.h"

namespace writ::receiver {

// What an announce asks of a target.
struct TargetRequest {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  std::vector<uint64_t> pages;  // non-empty: a page list (offset is then 0)
  uint64_t chunk_size = 0;
};

// Bytes [start, end) of a target held by one delivery; `page` names the page it is, for
// a page list.
struct TargetExtent {
  uint64_t start = 0;
  uint64_t end = 0;
  std::optional<uint64_t> page;
};

// The bytes of `target` (its name, size and geometry) a request covers, one extent per page
// for a page list, or why it cannot have them (kInvalidArgument, naming what was wrong): a
// range outside the buffer; for a page list, a target without page geometry, a size that is
// not pages x page size, a page out of range or listed twice, a chunk size that does not
// divide the page size (a chunk is one write, and must land in one page).
Result<std::vector<TargetExtent>> ExtentsOf(const std::string& target, uint64_t buffer_bytes,
                                            const std::optional<PageGeometry>& geometry,
                                            const TargetRequest& request);

// "3-5, 7, 9": a page list as runs of consecutive pages, in delivery order; past
// `max_chars`, the runs left out are counted instead of named (a receipt stays small).
std::string PageRuns(std::span<const uint64_t> pages, size_t max_chars = 512);

}  // namespace writ::receiver
