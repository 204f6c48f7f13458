// A few freed blocks of one kind kept for the next allocation of that kind, instead of a
// round trip through the allocator: for objects every small delivery makes on one thread
// and drops on another (a digester and its hash state, on each side). At most `kKeep`
// blocks, shared by every thread under one lock; a block freed while the list is full is
// the caller's to free. The list itself is never destroyed, so a block freed during the
// process's exit still finds it (and the blocks it keeps stay reachable, not leaked).
#pragma once

#include <array>
#include <cstddef>

#include "common/mutex.h"

namespace writ {

template <typename Kind, size_t kKeep>
class FreeList {
 public:
  // A kept block, or nullptr.
  static void* Take() {
    List& list = Shared();
    MutexLock lock(list.mu);
    return list.count == 0 ? nullptr : list.blocks[--list.count];
  }
  // Keeps `block` for a later Take; false when it was not kept (the caller frees it).
  static bool Keep(void* block) {
    List& list = Shared();
    MutexLock lock(list.mu);
    if (list.count == kKeep) return false;
    list.blocks[list.count++] = block;
    return true;
  }

 private:
  struct List {
    Mutex mu;
    std::array<void*, kKeep> blocks GUARDED_BY(mu){};
    size_t count GUARDED_BY(mu) = 0;
  };
  static List& Shared() {
    static List* const list = new List;
    return *list;
  }
};

}  // namespace writ
