// Counts this process's memory registrations (fi_mr_reg), for benchmarks that report
// what a delivery costs the system (bench/delivery_costs). With WRIT_COUNT_REGISTRATIONS
// set to a file name, the count is appended to that file as the process exits:
// "PID fi_mr_reg N".
#pragma once

#include <cstdint>

namespace writ::fabric {

void CountRegistration();
uint64_t RegistrationsMade();

}  // namespace writ::fabric
