// Human-readable rendering of a send's outcome: the ladder, rung by rung.
#pragma once

#include <string>

#include "writ/sender.h"

namespace writ::cli {

// One line per work completion record with `verbose`; otherwise their count and the
// error records only.
std::string OutcomeToText(const DeliveryOutcome& outcome, bool verbose);
// For an unsigned send whose bytes moved although the receiver already held the delivery
// (its retained receipt was issued before this send's validated one, both on the
// receiver's clock): one line saying so and naming --identity; otherwise empty.
std::string UnsignedResendNote(const DeliveryOutcome& outcome, bool signed_send);
// 25165824 -> "25,165,824"
std::string WithThousands(uint64_t value);

}  // namespace writ::cli
