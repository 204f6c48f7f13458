#include "audit/compact_records.h"

#include <utility>

namespace writ::audit::internal {

void CompactRecords::Add(WorkCompletion record) {
  if (!record.success()) {
    errors_.push_back(std::move(record));
    return;
  }
  success_ids_ += record.wr_id;
  success_ends_.push_back(success_ids_.size());
}

std::string_view CompactRecords::success_id(std::size_t i) const {
  const uint64_t begin = i == 0 ? 0 : success_ends_[i - 1];
  return std::string_view(success_ids_).substr(begin, success_ends_[i] - begin);
}

}  // namespace writ::audit::internal
