// What the rules read of the completion records, kept as a bundle streams in
// (issue 18): a success record is only its wr_id, an error record is kept whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "writ/audit.h"

namespace writ::audit::internal {

class CompactRecords {
 public:
  void Add(WorkCompletion record);

  uint64_t count() const { return success_ends_.size() + errors_.size(); }
  uint64_t successful() const { return success_ends_.size(); }
  // The wr_id of the i-th success record: a view into this object.
  std::string_view success_id(std::size_t i) const;
  // The error records, in record order.
  const std::vector<WorkCompletion>& errors() const { return errors_; }

 private:
  std::string success_ids_;             // the success records' wr_ids, end to end
  std::vector<uint64_t> success_ends_;  // where each ends in success_ids_
  std::vector<WorkCompletion> errors_;
};

}  // namespace writ::audit::internal
