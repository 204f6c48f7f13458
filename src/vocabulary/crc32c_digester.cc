#include <isa-l/crc.h>

#include <algorithm>
#include <climits>

#include "vocabulary/digesters.h"

namespace writ::vocabulary {
namespace {

// ISA-L's crc32_iscsi takes the running CRC without the final inversion:
// start from 0xFFFFFFFF, feed each result back in, invert once at the end.
// That gives standard CRC-32C ("123456789" -> 0xE3069283).
constexpr uint32_t kInitial = 0xffffffffu;
// crc32_iscsi takes an int length.
constexpr size_t kMaxPiece = size_t{1} << 30;

class Crc32cDigester final : public Digester {
 public:
  Rule rule() const override { return Rule::kCrc32c; }

  void Update(std::span<const uint8_t> bytes) override {
    while (!bytes.empty()) {
      const size_t n = std::min(bytes.size(), kMaxPiece);
      // ISA-L only reads the buffer; its prototype is not const-qualified.
      crc_ = crc32_iscsi(const_cast<unsigned char*>(bytes.data()), static_cast<int>(n), crc_);
      bytes = bytes.subspan(n);
    }
  }

  std::vector<uint8_t> Finish() override {
    const uint32_t value = ~crc_;
    return {static_cast<uint8_t>(value >> 24), static_cast<uint8_t>(value >> 16),
            static_cast<uint8_t>(value >> 8), static_cast<uint8_t>(value)};
  }

  void Reset() override { crc_ = kInitial; }

 private:
  uint32_t crc_ = kInitial;
};

}  // namespace

Result<std::unique_ptr<Digester>> MakeCrc32cDigester() {
  return std::unique_ptr<Digester>(new Crc32cDigester());
}

}  // namespace writ::vocabulary
