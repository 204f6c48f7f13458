#include "receiver/target_pages.h"

#include <algorithm>

namespace writ::receiver {
namespace {

std::string TargetBytesText(uint64_t start, uint64_t end) {
  return "[" + std::to_string(start) + ", " + std::to_string(end) + ")";
}

Status PageListFits(const std::string& target, const PageGeometry& g,
                    const TargetRequest& request) {
  const uint64_t n = request.pages.size();
  if (g.page_size > UINT64_MAX / n || request.bytes != n * g.page_size) {
    return Status::InvalidArgument("a delivery of " + std::to_string(request.bytes) +
                                   " bytes is not its " + std::to_string(n) + " pages of target " +
                                   target + " (" + std::to_string(n) + " x " +
                                   std::to_string(g.page_size) + " bytes)");
  }
  if (request.chunk_size == 0 || g.page_size % request.chunk_size != 0) {
    return Status::InvalidArgument(
        "chunk size " + std::to_string(request.chunk_size) + " does not divide target " + target +
        "'s " + std::to_string(g.page_size) + "-byte pages: each chunk must land within one page");
  }
  for (size_t i = 0; i < n; ++i) {
    if (request.pages[i] >= g.page_count) {
      return Status::InvalidArgument("page " + std::to_string(request.pages[i]) + " (at " +
                                     std::to_string(i) + " in the list) is outside target " +
                                     target + "'s " + std::to_string(g.page_count) + " pages");
    }
  }
  std::vector<std::pair<uint64_t, size_t>> sorted;
  sorted.reserve(n);
  for (size_t i = 0; i < n; ++i) sorted.emplace_back(request.pages[i], i);
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < n; ++i) {
    if (sorted[i].first != sorted[i - 1].first) continue;
    return Status::InvalidArgument("page " + std::to_string(sorted[i].first) + " of target " +
                                   target + " is listed twice (at " +
                                   std::to_string(sorted[i - 1].second) + " and " +
                                   std::to_string(sorted[i].second) + " in the list)");
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<TargetExtent>> ExtentsOf(const std::string& target, uint64_t buffer_bytes,
                                            const std::optional<PageGeometry>& geometry,
                                            const TargetRequest& request) {
  std::vector<TargetExtent> extents;
  if (request.pages.empty()) {
    if (request.offset > buffer_bytes || request.bytes > buffer_bytes - request.offset) {
      return Status::InvalidArgument(
          "bytes " + TargetBytesText(request.offset, request.offset + request.bytes) +
          " lie outside target " + target + " (" + std::to_string(buffer_bytes) + " bytes)");
    }
    if (request.bytes > 0) {
      extents.push_back({request.offset, request.offset + request.bytes, std::nullopt});
    }
    return extents;
  }
  if (!geometry) {
    return Status::InvalidArgument("target " + target +
                                   " has no page geometry: deliver into it at a byte offset, "
                                   "not to a list of pages");
  }
  WRIT_RETURN_IF_ERROR(PageListFits(target, *geometry, request));
  extents.reserve(request.pages.size());
  for (uint64_t page : request.pages) {
    const uint64_t start = page * geometry->page_size;
    extents.push_back({start, start + geometry->page_size, page});
  }
  return extents;
}

std::string PageRuns(std::span<const uint64_t> pages, size_t max_chars) {
  std::string out;
  size_t runs = 0;
  bool cut = false;
  for (size_t i = 0; i < pages.size(); ++runs) {
    size_t j = i;
    while (j + 1 < pages.size() && pages[j + 1] == pages[j] + 1) ++j;
    std::string run = std::to_string(pages[i]);
    if (j > i) run += "-" + std::to_string(pages[j]);
    if (!cut && out.size() + run.size() + 2 <= max_chars) {
      out += (out.empty() ? "" : ", ") + run;
    } else {
      cut = true;
    }
    i = j + 1;
  }
  if (cut) {
    out += ", ... (" + std::to_string(pages.size()) + " pages in " + std::to_string(runs) +
           " runs, as the announce lists them)";
  }
  return out;
}

}  // namespace writ::receiver
