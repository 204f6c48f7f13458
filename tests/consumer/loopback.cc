// A program outside writ's tree, built against an installed prefix (tests/consumer/run.sh):
// one delivery from an embedded Sender to an embedded Receiver over tcp on loopback. It
// checks that the delivery reached `validated` and that every receipt verifies.
// Usage: loopback SCRATCH_DIR (where the two Ed25519 identities are created).
#include <writ/receipt.h>
#include <writ/receiver.h>
#include <writ/sender.h>
#include <writ/version.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int Fail(const char* what, const writ::Status& status) {
  std::fprintf(stderr, "loopback: %s: %s\n", what, status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: loopback SCRATCH_DIR\n");
    return 2;
  }
  const std::string scratch = argv[1];
  std::printf("writ %s\n", std::string(writ::VersionString()).c_str());

  writ::ReceiverOptions receiver_options;
  receiver_options.provider = "tcp";
  receiver_options.identity_dir = scratch + "/receiver";
  auto receiver = writ::Receiver::Start(receiver_options);
  if (!receiver.ok()) return Fail("receiver", receiver.status());

  writ::SessionOptions session;
  session.to = (*receiver)->listen_address();
  session.identity_dir = scratch + "/sender";
  auto sender = writ::Sender::Connect(session);
  if (!sender.ok()) return Fail("connect", sender.status());

  std::vector<uint8_t> bytes(1 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  writ::DeliveryOptions delivery;
  delivery.id = "consumer-1";
  delivery.chunk_size = 256 << 10;
  delivery.until = writ::Rung::kValidated;
  const writ::DeliveryOutcome outcome = (*sender)->SendBytes(bytes, delivery);
  if (!outcome.status.ok()) return Fail("send", outcome.status);

  for (const writ::Receipt& receipt : outcome.receipts) {
    if (writ::Status verified = writ::VerifyReceipt(receipt); !verified.ok()) {
      return Fail("verify", verified);
    }
  }
  const bool validated =
      outcome.reached_rung.has_value() && *outcome.reached_rung >= writ::ReceiptRung::kValidated;
  if (writ::Status closed = (*sender)->Close(); !closed.ok()) return Fail("close", closed);
  if (writ::Status stopped = (*receiver)->Stop(); !stopped.ok()) return Fail("stop", stopped);
  if (!validated) {
    std::fprintf(stderr, "loopback: the delivery did not reach validated\n");
    return 1;
  }
  // The PSM stand-ins belong to the `writ` program only: a process embedding the library
  // loads libfabric as built (src/fabric/psm_stand_ins.h).
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  for (char line[4096]; maps != nullptr && std::fgets(line, sizeof line, maps) != nullptr;) {
    if (std::strstr(line, "writ-psm-stand-in") != nullptr) {
      std::fprintf(stderr, "loopback: a PSM stand-in is loaded in this process: %s", line);
      return 1;
    }
  }
  if (maps != nullptr) std::fclose(maps);
  std::printf("%s reached %s with %zu verified receipts\n", outcome.delivery.id.c_str(),
              std::string(writ::ReceiptRungName(*outcome.reached_rung)).c_str(),
              outcome.receipts.size());
  return 0;
}
