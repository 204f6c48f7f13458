// Human-readable rendering of a send's outcome: the ladder, rung by rung.
#pragma once

#include <string>

#include "writ/sender.h"

namespace writ::cli {

std::string OutcomeToText(const DeliveryOutcome& outcome);
// 25165824 -> "25,165,824"
std::string WithThousands(uint64_t value);

}  // namespace writ::cli
