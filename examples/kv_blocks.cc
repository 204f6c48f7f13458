// kv_blocks: KV-cache blocks written straight into the pages of a receiver's cache, through
// the public API only. The receiving side (an inference engine's decode worker, here) exposes
// its paged KV cache; the sending side (the prefill worker) writes each block, many in
// flight, into the pages its block table chose. No page is usable until writ has validated
// its bytes where they lie: the on_delivery callback marks the pages then.
//
//   build/release/examples/kv_blocks [BLOCKS]   (default 48 blocks of 4 pages)
#include <writ/receiver.h>
#include <writ/sender.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kPageBytes = 16 << 10;
constexpr uint64_t kPageCount = 256;
constexpr size_t kPagesPerBlock = 4;

// The decode side's view of its cache: which pages hold validated bytes.
struct KvCache {
  std::vector<uint8_t> memory = std::vector<uint8_t>(kPageBytes * kPageCount);
  std::mutex mu;
  std::condition_variable changed;
  std::vector<bool> usable = std::vector<bool>(kPageCount, false);
  size_t told = 0;
  size_t failed = 0;

  void OnDelivery(const writ::TargetDelivery& d) {
    std::lock_guard<std::mutex> lock(mu);
    ++told;
    if (d.ok) {
      for (uint64_t page : d.pages) usable[page] = true;
    } else {
      ++failed;
      std::fprintf(stderr, "block %s: pages not usable: %s\n", d.delivery_id.c_str(),
                   d.why.c_str());
    }
    changed.notify_all();
  }
  bool AwaitTold(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(30), [&] { return told >= n; });
  }
};

// Block b's bytes: what a prefill step would have computed.
std::vector<uint8_t> BlockBytes(size_t b) {
  std::vector<uint8_t> bytes(kPagesPerBlock * kPageBytes);
  std::mt19937_64 gen(b + 1);
  for (auto& byte : bytes) byte = static_cast<uint8_t>(gen());
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t blocks = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 48;
  if (blocks == 0 || blocks * kPagesPerBlock > kPageCount) {
    std::fprintf(stderr, "usage: kv_blocks [BLOCKS], 1 to %zu\n", kPageCount / kPagesPerBlock);
    return 2;
  }
  KvCache cache;  // outlives the receiver: a delivery ended by its stop still tells it
  writ::ReceiverOptions receiver_options;
  receiver_options.provider = "tcp";
  receiver_options.window_pool_bytes = 16ull << 20;
  receiver_options.window_bytes = 1ull << 20;
  auto receiver = writ::Receiver::Start(receiver_options);
  if (!receiver.ok()) {
    std::fprintf(stderr, "receiver: %s\n", receiver.status().ToString().c_str());
    return 1;
  }
  writ::ExposeOptions expose;
  expose.pages = writ::PageGeometry{kPageBytes, kPageCount};
  expose.on_delivery = [&cache](const writ::TargetDelivery& d) { cache.OnDelivery(d); };
  if (writ::Status s = (*receiver)->Expose("kv", cache.memory, expose); !s.ok()) {
    std::fprintf(stderr, "expose: %s\n", s.ToString().c_str());
    return 1;
  }

  // The block table: each block gets pages scattered over the cache, as an allocator
  // hands them out.
  std::vector<uint64_t> free_pages(kPageCount);
  std::iota(free_pages.begin(), free_pages.end(), 0);
  std::shuffle(free_pages.begin(), free_pages.end(), std::mt19937_64(7));
  std::vector<std::vector<uint64_t>> table(blocks);
  std::vector<std::vector<uint8_t>> contents(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    table[b].assign(free_pages.begin() + b * kPagesPerBlock,
                    free_pages.begin() + (b + 1) * kPagesPerBlock);
    contents[b] = BlockBytes(b);
  }

  writ::SessionOptions session;
  session.to = (*receiver)->listen_address();
  session.max_in_flight = 16;
  auto sender = writ::Sender::Connect(session);
  if (!sender.ok()) {
    std::fprintf(stderr, "sender: %s\n", sender.status().ToString().c_str());
    return 1;
  }
  std::vector<writ::DeliveryHandle> handles;
  for (size_t b = 0; b < blocks; ++b) {
    writ::DeliveryOptions options;
    options.id = "block-" + std::to_string(b);
    options.target = "kv";
    options.target_pages = table[b];
    handles.push_back((*sender)->SubmitBytes(contents[b], options));
  }
  size_t sent = 0;
  for (size_t b = 0; b < blocks; ++b) {
    const writ::DeliveryOutcome& out = handles[b].Wait();
    if (!out.status.ok()) {
      std::fprintf(stderr, "block %zu: %s\n", b, out.status.ToString().c_str());
      continue;
    }
    ++sent;
    if (b == 0) {
      for (const auto& r : out.receipts) {
        if (r.rung == writ::ReceiptRung::kValidated) std::printf("%s\n", r.statement.c_str());
      }
    }
  }

  // The callback comes once each delivery's run has ended; then the pages are checked.
  const bool all_told = cache.AwaitTold(blocks);
  size_t pages_ok = 0;
  size_t pages_wrong = 0;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    for (size_t b = 0; b < blocks; ++b) {
      for (size_t i = 0; i < kPagesPerBlock; ++i) {
        const uint64_t page = table[b][i];
        const bool same = std::equal(contents[b].begin() + i * kPageBytes,
                                     contents[b].begin() + (i + 1) * kPageBytes,
                                     cache.memory.begin() + page * kPageBytes);
        (cache.usable[page] && same ? pages_ok : pages_wrong)++;
      }
    }
  }
  const size_t usable = std::count(cache.usable.begin(), cache.usable.end(), true);
  std::printf("%zu of %zu blocks sent; %zu pages usable, %zu hold their block's bytes\n", sent,
              blocks, usable, pages_ok);
  const bool revoked = (*receiver)->Revoke("kv").ok();
  const bool stopped = (*receiver)->Stop().ok();
  const bool ok = all_told && sent == blocks && cache.failed == 0 && pages_wrong == 0 &&
                  usable == blocks * kPagesPerBlock && revoked && stopped;
  if (!ok) std::fprintf(stderr, "kv_blocks: FAILED\n");
  return ok ? 0 : 1;
}
