#include "protocol/wire.h"

#include <string>

namespace writ::protocol {

uint16_t LoadLe16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

uint32_t LoadLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

uint64_t LoadLe64(const uint8_t* p) {
  return static_cast<uint64_t>(LoadLe32(p)) | static_cast<uint64_t>(LoadLe32(p + 4)) << 32;
}

void StoreLe16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

void StoreLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void WireWriter::U16(uint16_t v) {
  for (int i = 0; i < 2; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void WireWriter::U32(uint32_t v) {
  uint8_t le[4];
  for (int i = 0; i < 4; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
  out_.insert(out_.end(), le, le + sizeof le);
}

void WireWriter::U64(uint64_t v) {
  uint8_t le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
  out_.insert(out_.end(), le, le + sizeof le);
}

// Callers validate sizes against Limits (all far below 4 GiB) before encoding.
void WireWriter::Bytes(std::span<const uint8_t> v) {
  U32(static_cast<uint32_t>(v.size()));
  out_.insert(out_.end(), v.begin(), v.end());
}

void WireWriter::String(std::string_view v) {
  U32(static_cast<uint32_t>(v.size()));
  // As bytes: one copy of the run (a receipt is kilobytes), not a conversion per char.
  const auto* bytes = reinterpret_cast<const uint8_t*>(v.data());
  out_.insert(out_.end(), bytes, bytes + v.size());
}

std::string WireReader::Where(std::string_view field) const {
  std::string where(message_);
  where += '.';
  where += field;
  return where;
}

Result<std::span<const uint8_t>> WireReader::Take(std::string_view field, size_t n) {
  if (n > remaining()) {
    return Status::Malformed(Where(field) + ": truncated, needs " + std::to_string(n) +
                             " bytes at payload offset " + std::to_string(pos_) + ", " +
                             std::to_string(remaining()) + " left");
  }
  std::span<const uint8_t> out = data_.subspan(pos_, n);
  pos_ += n;
  return out;
}

Result<std::span<const uint8_t>> WireReader::TakePrefixed(std::string_view field) {
  WRIT_ASSIGN_OR_RETURN(uint32_t length, U32(field));
  // The declared length is only believed once the bytes are really there.
  if (length > remaining()) {
    return Status::Malformed(Where(field) + ": declares " + std::to_string(length) + " bytes, " +
                             std::to_string(remaining()) + " left in the payload");
  }
  return Take(field, length);
}

Result<uint8_t> WireReader::U8(std::string_view field) {
  WRIT_ASSIGN_OR_RETURN(auto b, Take(field, 1));
  return b[0];
}

Result<uint16_t> WireReader::U16(std::string_view field) {
  WRIT_ASSIGN_OR_RETURN(auto b, Take(field, 2));
  return LoadLe16(b.data());
}

Result<uint32_t> WireReader::U32(std::string_view field) {
  WRIT_ASSIGN_OR_RETURN(auto b, Take(field, 4));
  return LoadLe32(b.data());
}

Result<uint64_t> WireReader::U64(std::string_view field) {
  WRIT_ASSIGN_OR_RETURN(auto b, Take(field, 8));
  return LoadLe64(b.data());
}

Result<std::vector<uint8_t>> WireReader::Bytes(std::string_view field) {
  WRIT_ASSIGN_OR_RETURN(auto b, TakePrefixed(field));
  return std::vector<uint8_t>(b.begin(), b.end());
}

Result<std::string> WireReader::String(std::string_view field) {
  WRIT_ASSIGN_OR_RETURN(auto b, TakePrefixed(field));
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

bool WireReader::NextU32Is(uint32_t value) const {
  return remaining() >= 4 && LoadLe32(data_.data() + pos_) == value;
}

Status WireReader::ExpectEnd() const {
  if (remaining() == 0) return Status::Ok();
  return Status::Malformed(std::string(message_) + ": " + std::to_string(remaining()) +
                           " trailing bytes after the last field");
}

}  // namespace writ::protocol
