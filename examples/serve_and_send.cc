// serve_and_send: a receiver and a sender in one program, through the public API
// only. A library user registers a processing step; the `processed` rung then
// comes from that step's own success, never from validation.
#include <unistd.h>
#include <writ/receiver.h>
#include <writ/sender.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

int main() {
  writ::ReceiverOptions receiver_options;
  receiver_options.provider = "tcp";
  receiver_options.processing = writ::ProcessingStep{
      "count-newlines", [](const writ::DeliveryView& delivery) -> writ::Status {
        std::vector<uint8_t> bytes(delivery.bytes);
        if (writ::Status read = delivery.read(0, bytes); !read.ok()) return read;
        size_t lines = 0;
        for (uint8_t b : bytes) lines += b == '\n';
        std::printf("processing step saw %zu lines in %s\n", lines, delivery.id.c_str());
        return writ::Status::Ok();
      }};
  auto receiver = writ::Receiver::Start(receiver_options);
  if (!receiver.ok()) {
    std::fprintf(stderr, "receiver: %s\n", receiver.status().ToString().c_str());
    return 1;
  }

  const std::string path = "/tmp/writ-example-" + std::to_string(getpid());
  {
    std::ofstream out(path);
    for (int i = 0; i < 1000; ++i) out << "line " << i << " of a small delivery\n";
  }
  writ::SendOptions options;
  options.to = (*receiver)->listen_address();
  options.id = "example-1";
  options.chunk_size = 4096;
  options.until = writ::Rung::kProcessed;
  writ::DeliveryOutcome outcome = writ::Send(path, options);
  std::remove(path.c_str());

  for (const auto& receipt : outcome.receipts) {
    std::printf("%-9s %s\n", std::string(writ::ReceiptRungName(receipt.rung)).c_str(),
                receipt.statement.c_str());
  }
  const writ::Status stopped = (*receiver)->Stop();
  if (!outcome.status.ok()) {
    std::fprintf(stderr, "send: %s\n", outcome.status.ToString().c_str());
    return 1;
  }
  return stopped.ok() ? 0 : 1;
}
