// Counts every heap allocation of the process, on any thread: a bench program includes this
// in exactly one of its files (it replaces operator new) and reads CountedAllocations().
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace writ_bench {
inline std::atomic<uint64_t> g_counted_allocations{0};
inline uint64_t CountedAllocations() {
  return g_counted_allocations.load(std::memory_order_relaxed);
}
}  // namespace writ_bench

// The replacements pair malloc with free.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(size_t n) {
  writ_bench::g_counted_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
