// Little-endian primitives of the frame payloads. The reader checks every
// length against what is actually left before touching memory and names the
// field in its errors ("announce.digest: truncated ...").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "writ/status.h"

namespace writ::protocol {

class WireWriter {
 public:
  explicit WireWriter(std::vector<uint8_t>& out) : out_(out) {}

  void U8(uint8_t v) { out_.push_back(v); }
  void U16(uint16_t v);
  void U32(uint32_t v);
  void U64(uint64_t v);
  // u32 length, then the bytes.
  void Bytes(std::span<const uint8_t> v);
  void String(std::string_view v);

 private:
  std::vector<uint8_t>& out_;
};

class WireReader {
 public:
  // `message` names the message type in errors ("announce").
  WireReader(std::span<const uint8_t> payload, std::string_view message)
      : data_(payload), message_(message) {}

  Result<uint8_t> U8(std::string_view field);
  Result<uint16_t> U16(std::string_view field);
  Result<uint32_t> U32(std::string_view field);
  Result<uint64_t> U64(std::string_view field);
  Result<std::vector<uint8_t>> Bytes(std::string_view field);
  Result<std::string> String(std::string_view field);

  size_t remaining() const { return data_.size() - pos_; }
  // Whether the next four bytes are the u32 `value` (nothing is consumed).
  bool NextU32Is(uint32_t value) const;
  // Fails when bytes are left after the last field.
  Status ExpectEnd() const;

 private:
  Result<std::span<const uint8_t>> Take(std::string_view field, size_t n);
  Result<std::span<const uint8_t>> TakePrefixed(std::string_view field);
  std::string Where(std::string_view field) const;

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  std::string_view message_;
};

// Little-endian loads and stores shared by the frame header and the payloads.
uint16_t LoadLe16(const uint8_t* p);
uint32_t LoadLe32(const uint8_t* p);
uint64_t LoadLe64(const uint8_t* p);
void StoreLe16(uint8_t* p, uint16_t v);
void StoreLe32(uint8_t* p, uint32_t v);

}  // namespace writ::protocol
