#include "fabric/registration_count.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace writ::fabric {
namespace {

struct RegistrationCounter {
  std::atomic<uint64_t> made{0};
  ~RegistrationCounter() {
    const char* path = std::getenv("WRIT_COUNT_REGISTRATIONS");
    if (path == nullptr || *path == '\0') return;
    if (FILE* out = std::fopen(path, "a")) {
      std::fprintf(out, "%d fi_mr_reg %llu\n", static_cast<int>(getpid()),
                   static_cast<unsigned long long>(made.load()));
      std::fclose(out);
    }
  }
};

RegistrationCounter& TheRegistrationCounter() {
  static RegistrationCounter counter;
  return counter;
}

}  // namespace

void CountRegistration() { TheRegistrationCounter().made.fetch_add(1, std::memory_order_relaxed); }
uint64_t RegistrationsMade() {
  return TheRegistrationCounter().made.load(std::memory_order_relaxed);
}

}  // namespace writ::fabric
