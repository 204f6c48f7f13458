#include <xxhash.h>
// On x86-64, libxxhash's own dispatch picks the widest vector unit at run time (AVX2,
// AVX-512); the plain entry points are built for SSE2 only. Same digests, about half the
// CPU per byte in cache; from memory it gains little (docs/benchmarks.md, issue #14).
#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>
#endif

#include "common/free_list.h"
#include "vocabulary/digesters.h"

namespace writ::vocabulary {
namespace {

// A small delivery makes and drops a digester on each side (made on one thread, dropped on
// another): the digester and libxxhash's state (576 bytes, XXH3_createState's own aligned
// malloc) are kept for the next one instead of two allocations each time. Reset gives a
// kept state a fresh start.
struct StateKind;
struct DigesterKind;
constexpr size_t kKept = 64;  // about 37 KiB at most
using KeptStates = FreeList<StateKind, kKept>;
using KeptBlocks = FreeList<DigesterKind, kKept>;

struct StateFree {
  void operator()(XXH3_state_t* state) const {
    if (!KeptStates::Keep(state)) XXH3_freeState(state);
  }
};
using StatePtr = std::unique_ptr<XXH3_state_t, StateFree>;

class Xxh3Digester final : public Digester {
 public:
  explicit Xxh3Digester(StatePtr state) : state_(std::move(state)) { Reset(); }

  static void* operator new(size_t size) {
    if (size == sizeof(Xxh3Digester)) {
      if (void* kept = KeptBlocks::Take()) return kept;
    }
    return ::operator new(size);
  }
  static void operator delete(void* block, size_t size) {
    if (size == sizeof(Xxh3Digester) && KeptBlocks::Keep(block)) return;
    ::operator delete(block);
  }

  Rule rule() const override { return Rule::kXxh3_128; }

  void Update(std::span<const uint8_t> bytes) override {
    if (bytes.empty()) return;
    if (XXH3_128bits_update(state_.get(), bytes.data(), bytes.size()) != XXH_OK) failed_ = true;
  }

  std::vector<uint8_t> Finish() override {
    if (failed_) return {};
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state_.get()));
    return std::vector<uint8_t>(canonical.digest, canonical.digest + sizeof canonical.digest);
  }

  void Reset() override { failed_ = XXH3_128bits_reset(state_.get()) != XXH_OK; }

 private:
  StatePtr state_;
  bool failed_ = false;
};

}  // namespace

Result<std::unique_ptr<Digester>> MakeXxh3Digester() {
  StatePtr state(static_cast<XXH3_state_t*>(KeptStates::Take()));
  if (!state) state.reset(XXH3_createState());
  if (!state) return Status::Internal("digest: XXH3_createState failed");
  return std::unique_ptr<Digester>(new Xxh3Digester(std::move(state)));
}

}  // namespace writ::vocabulary
