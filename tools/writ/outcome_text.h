// Human-readable rendering of a send's outcome: the ladder, rung by rung.
#pragma once

#include <string>

#include "writ/sender.h"

namespace writ::cli {

// One line per work completion record with `verbose`; otherwise their count and the
// error records only.
std::string OutcomeToText(const DeliveryOutcome& outcome, bool verbose);
// 25165824 -> "25,165,824"
std::string WithThousands(uint64_t value);

}  // namespace writ::cli
