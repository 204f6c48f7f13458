// A receiving program of its own for the two-process exposed-target tests: it starts a
// writ::Receiver, exposes a zeroed paged buffer "kv" (PAGES pages of PAGE_SIZE bytes),
// prints "listening on ADDRESS", then one line per delivery into it as it is told
// ("delivered ID ok" or "delivered ID refused WHY"). When its standard input closes it
// revokes the buffer, writes it whole to OUT and exits 0.
//
//   exposing_receiver OUT PROVIDER PAGES PAGE_SIZE
#include <writ/receiver.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: exposing_receiver OUT PROVIDER PAGES PAGE_SIZE\n");
    return 2;
  }
  const uint64_t pages = std::strtoull(argv[3], nullptr, 10);
  const uint64_t page_size = std::strtoull(argv[4], nullptr, 10);
  std::vector<uint8_t> buffer(pages * page_size);  // outlives the receiver
  std::mutex print_mu;
  writ::ReceiverOptions options;
  options.provider = argv[2];
  options.window_pool_bytes = 16ull << 20;
  options.window_bytes = 1ull << 20;
  auto receiver = writ::Receiver::Start(options);
  if (!receiver.ok()) {
    std::fprintf(stderr, "receiver: %s\n", receiver.status().ToString().c_str());
    return 1;
  }
  writ::ExposeOptions expose;
  expose.pages = writ::PageGeometry{page_size, pages};
  expose.on_delivery = [&print_mu](const writ::TargetDelivery& d) {
    std::lock_guard<std::mutex> lock(print_mu);
    std::printf("delivered %s %s%s\n", d.delivery_id.c_str(), d.ok ? "ok" : "refused ",
                d.why.c_str());
    std::fflush(stdout);
  };
  if (writ::Status s = (*receiver)->Expose("kv", buffer, expose); !s.ok()) {
    std::fprintf(stderr, "expose: %s\n", s.ToString().c_str());
    return 1;
  }
  {
    std::lock_guard<std::mutex> lock(print_mu);
    std::printf("listening on %s\n", (*receiver)->listen_address().c_str());
    std::fflush(stdout);
  }
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  if (writ::Status s = (*receiver)->Revoke("kv"); !s.ok()) {
    std::fprintf(stderr, "revoke: %s\n", s.ToString().c_str());
    return 1;
  }
  receiver->reset();
  std::FILE* out = std::fopen(argv[1], "wb");
  if (out == nullptr || std::fwrite(buffer.data(), 1, buffer.size(), out) != buffer.size() ||
      std::fclose(out) != 0) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
