// Leaving an object allocated on purpose: a thread stuck inside a provider call may still
// come back into it (a stuck sender session, a stuck receiver progress loop), so freeing it
// would turn a hang into a use after free. Under LeakSanitizer the object (and what it
// reaches) is marked as intentionally kept, so the leak it is does not fail the run.
#pragma once

#include <memory>

#if defined(__SANITIZE_ADDRESS__)
#define WRIT_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WRIT_LSAN 1
#endif
#endif
#ifdef WRIT_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace writ {

template <typename T>
void LeaveAllocated(std::unique_ptr<T>& owner) {
  T* kept = owner.release();
#ifdef WRIT_LSAN
  if (kept != nullptr) __lsan_ignore_object(kept);
#else
  (void)kept;
#endif
}

}  // namespace writ
