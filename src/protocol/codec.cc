#include "protocol/codec.h"

#include <string>
#include <type_traits>
#include <utility>

#include "protocol/frame.h"
#include "protocol/validate.h"
#include "protocol/wire.h"

namespace writ::protocol {
namespace {

// MessageType values are the variant's alternative index plus one.
static_assert(std::is_same_v<std::variant_alternative_t<0, Message>, Hello>);
static_assert(std::is_same_v<std::variant_alternative_t<1, Message>, Announce>);
static_assert(std::is_same_v<std::variant_alternative_t<2, Message>, Grant>);
static_assert(std::is_same_v<std::variant_alternative_t<3, Message>, Commit>);
static_assert(std::is_same_v<std::variant_alternative_t<4, Message>, Receipt>);
static_assert(std::is_same_v<std::variant_alternative_t<5, Message>, Refuse>);
static_assert(std::is_same_v<std::variant_alternative_t<6, Message>, Abort>);
static_assert(std::is_same_v<std::variant_alternative_t<7, Message>, Query>);
static_assert(std::is_same_v<std::variant_alternative_t<8, Message>, QueryAnswer>);
static_assert(std::is_same_v<std::variant_alternative_t<9, Message>, Receipts>);
static_assert(std::is_same_v<std::variant_alternative_t<10, Message>, Ring>);
static_assert(std::is_same_v<std::variant_alternative_t<11, Message>, Deliver>);
static_assert(std::is_same_v<std::variant_alternative_t<12, Message>, SlotsFree>);
static_assert(std::is_same_v<std::variant_alternative_t<13, Message>, Remove>);
static_assert(std::is_same_v<std::variant_alternative_t<14, Message>, RemoveAnswer>);
static_assert(std::is_same_v<std::variant_alternative_t<15, Message>, Written>);
static_assert(std::variant_size_v<Message> == 16);

void Put(WireWriter& w, const Hello& m) {
  w.U16(m.version);
  w.String(m.provider);
  w.Bytes(m.fabric_address);
  w.String(m.receiver_id);
  w.U32(m.max_in_flight);
}

void Put(WireWriter& w, const Announce& m) {
  w.String(m.delivery_id);
  w.U64(m.bytes);
  w.U64(m.chunk_size);
  w.U8(static_cast<uint8_t>(m.rule));
  w.Bytes(m.digest);
  w.U8(static_cast<uint8_t>(m.until));
  w.U8(static_cast<uint8_t>(m.retention));
  w.Bytes(m.sender_fabric_address);
  w.Bytes(m.sender_key);
  w.Bytes(m.nonce);
  w.U64(m.time_ms);
  w.Bytes(m.signature);
  // Optional trailing field: a plain announce is encoded as before it existed.
  if (!m.region_lengths.empty()) {
    w.U32(static_cast<uint32_t>(m.region_lengths.size()));
    for (uint64_t length : m.region_lengths) w.U64(length);
  }
  if (!m.target.empty()) {
    w.U32(kTargetMark);
    w.String(m.target);
    w.U64(m.target_offset);
    if (!m.target_pages.empty()) {
      w.U32(static_cast<uint32_t>(m.target_pages.size()));
      for (uint64_t page : m.target_pages) w.U64(page);
    }
  }
}

void Put(WireWriter& w, const Grant& m) {
  w.String(m.delivery_id);
  w.U32(m.window_id);
  w.U64(m.remote_address);
  w.U64(m.key);
  w.U64(m.length);
  w.U64(m.first_chunk);
  w.U32(m.chunk_count);
}

void Put(WireWriter& w, const Commit& m) {
  w.String(m.delivery_id);
  w.Bytes(m.digest);
  w.Bytes(m.signature);
}

void Put(WireWriter& w, const Receipt& m) {
  w.String(m.delivery_id);
  w.String(m.json);
}

void Put(WireWriter& w, const Receipts& m) {
  w.U32(static_cast<uint32_t>(m.receipts.size()));
  for (const Receipt& r : m.receipts) Put(w, r);
}

void Put(WireWriter& w, const Refuse& m) {
  w.String(m.delivery_id);
  w.U8(static_cast<uint8_t>(m.reason));
  w.String(m.detail);
}

void Put(WireWriter& w, const Abort& m) {
  w.String(m.delivery_id);
  w.String(m.detail);
}

void Put(WireWriter& w, const Query& m) {
  w.String(m.delivery_id);
  w.Bytes(m.sender_key);
  w.Bytes(m.nonce);
  w.U64(m.time_ms);
  w.Bytes(m.signature);
}

void Put(WireWriter& w, const QueryAnswer& m) {
  w.String(m.delivery_id);
  w.String(m.json);
}

void Put(WireWriter& w, const Remove& m) {
  w.String(m.delivery_id);
  w.U8(m.force);
  w.Bytes(m.sender_key);
  w.Bytes(m.nonce);
  w.U64(m.time_ms);
  w.Bytes(m.signature);
}

void Put(WireWriter& w, const RemoveAnswer& m) {
  w.String(m.delivery_id);
  w.String(m.json);
}

void Put(WireWriter& w, const Ring& m) {
  w.U32(m.window_id);
  w.U64(m.remote_address);
  w.U64(m.key);
  w.U64(m.slot_size);
  w.U32(m.slot_count);
}

// The announce last: its optional region table stays the payload's trailing field.
void Put(WireWriter& w, const Deliver& m) {
  w.U32(m.slot);
  Put(w, m.announce);
}

void Put(WireWriter& w, const SlotsFree& m) {
  w.U32(m.window_id);
  w.U32(static_cast<uint32_t>(m.slots.size()));
  for (uint32_t slot : m.slots) w.U32(slot);
}

void Put(WireWriter& w, const Written& m) {
  w.String(m.delivery_id);
  w.U32(m.window_id);
  w.U32(static_cast<uint32_t>(m.chunks.size()));
  for (uint32_t chunk : m.chunks) w.U32(chunk);
}

Result<Hello> GetHello(WireReader& r) {
  Hello m;
  WRIT_ASSIGN_OR_RETURN(m.version, r.U16("version"));
  WRIT_ASSIGN_OR_RETURN(m.provider, r.String("provider"));
  WRIT_ASSIGN_OR_RETURN(m.fabric_address, r.Bytes("fabric_address"));
  WRIT_ASSIGN_OR_RETURN(m.receiver_id, r.String("receiver_id"));
  WRIT_ASSIGN_OR_RETURN(m.max_in_flight, r.U32("max_in_flight"));
  return m;
}

// The announce's optional region table: a count of at least 1 (an empty table is not
// encoded, so every announce has one encoding), believed only as far as bytes remain.
Status GetRegionLengths(WireReader& r, std::vector<uint64_t>& out) {
  WRIT_ASSIGN_OR_RETURN(uint32_t count, r.U32("region_count"));
  if (count == 0) return Status::Malformed("announce.region_count: 0, an empty table is omitted");
  if (count > r.remaining() / 8) {
    return Status::Malformed("announce.region_lengths: truncated, " + std::to_string(count) +
                             " regions declared, " + std::to_string(r.remaining()) + " bytes left");
  }
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    WRIT_ASSIGN_OR_RETURN(uint64_t length, r.U64("region_length"));
    out.push_back(length);
  }
  return Status::Ok();
}

// The target block's optional page list: as the region table, a count of at least 1.
Status GetTargetPages(WireReader& r, std::vector<uint64_t>& out) {
  WRIT_ASSIGN_OR_RETURN(uint32_t count, r.U32("target_page_count"));
  if (count == 0)
    return Status::Malformed("announce.target_page_count: 0, an empty list is omitted");
  if (count > r.remaining() / 8) {
    return Status::Malformed("announce.target_pages: truncated, " + std::to_string(count) +
                             " pages declared, " + std::to_string(r.remaining()) + " bytes left");
  }
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    WRIT_ASSIGN_OR_RETURN(uint64_t page, r.U64("target_page"));
    out.push_back(page);
  }
  return Status::Ok();
}

Result<Announce> GetAnnounce(WireReader& r) {
  Announce m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.bytes, r.U64("bytes"));
  WRIT_ASSIGN_OR_RETURN(m.chunk_size, r.U64("chunk_size"));
  WRIT_ASSIGN_OR_RETURN(uint8_t rule, r.U8("rule"));
  m.rule = static_cast<Rule>(rule);  // range checked by Validate
  WRIT_ASSIGN_OR_RETURN(m.digest, r.Bytes("digest"));
  WRIT_ASSIGN_OR_RETURN(uint8_t until, r.U8("until"));
  m.until = static_cast<Rung>(until);
  WRIT_ASSIGN_OR_RETURN(uint8_t retention, r.U8("retention"));
  m.retention = static_cast<RetentionClass>(retention);
  WRIT_ASSIGN_OR_RETURN(m.sender_fabric_address, r.Bytes("sender_fabric_address"));
  WRIT_ASSIGN_OR_RETURN(m.sender_key, r.Bytes("sender_key"));
  WRIT_ASSIGN_OR_RETURN(m.nonce, r.Bytes("nonce"));
  WRIT_ASSIGN_OR_RETURN(m.time_ms, r.U64("time_ms"));
  WRIT_ASSIGN_OR_RETURN(m.signature, r.Bytes("signature"));
  if (r.remaining() >= 4 && !r.NextU32Is(kTargetMark)) {
    WRIT_RETURN_IF_ERROR(GetRegionLengths(r, m.region_lengths));
  }
  if (r.remaining() >= 4) {
    WRIT_ASSIGN_OR_RETURN(uint32_t mark, r.U32("target_mark"));
    if (mark != kTargetMark) return Status::Malformed("announce.target_mark: not ffffffff");
    WRIT_ASSIGN_OR_RETURN(m.target, r.String("target"));
    if (m.target.empty()) return Status::Malformed("announce.target: empty, the block is omitted");
    WRIT_ASSIGN_OR_RETURN(m.target_offset, r.U64("target_offset"));
    if (r.remaining() > 0) WRIT_RETURN_IF_ERROR(GetTargetPages(r, m.target_pages));
  }
  return m;
}

Result<Grant> GetGrant(WireReader& r) {
  Grant m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.window_id, r.U32("window_id"));
  WRIT_ASSIGN_OR_RETURN(m.remote_address, r.U64("remote_address"));
  WRIT_ASSIGN_OR_RETURN(m.key, r.U64("key"));
  WRIT_ASSIGN_OR_RETURN(m.length, r.U64("length"));
  WRIT_ASSIGN_OR_RETURN(m.first_chunk, r.U64("first_chunk"));
  WRIT_ASSIGN_OR_RETURN(m.chunk_count, r.U32("chunk_count"));
  return m;
}

Result<Commit> GetCommit(WireReader& r) {
  Commit m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.digest, r.Bytes("digest"));
  WRIT_ASSIGN_OR_RETURN(m.signature, r.Bytes("signature"));
  return m;
}

Result<Receipt> GetReceipt(WireReader& r) {
  Receipt m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.json, r.String("json"));
  return m;
}

Result<Receipts> GetReceipts(WireReader& r) {
  Receipts m;
  WRIT_ASSIGN_OR_RETURN(uint32_t count, r.U32("count"));
  // Checked before anything is read: a count the frame cannot hold allocates nothing.
  if (count == 0 || count > kMaxReceiptsPerMessage) {
    return Status::Malformed("receipts.count: " + std::to_string(count) + ", expected 1 to " +
                             std::to_string(kMaxReceiptsPerMessage));
  }
  for (uint32_t i = 0; i < count; ++i) {
    WRIT_ASSIGN_OR_RETURN(Receipt one, GetReceipt(r));
    m.receipts.push_back(std::move(one));
  }
  return m;
}

Result<Refuse> GetRefuse(WireReader& r) {
  Refuse m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(uint8_t reason, r.U8("reason"));
  m.reason = static_cast<RefuseReason>(reason);
  WRIT_ASSIGN_OR_RETURN(m.detail, r.String("detail"));
  return m;
}

Result<Abort> GetAbort(WireReader& r) {
  Abort m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.detail, r.String("detail"));
  return m;
}

Result<Query> GetQuery(WireReader& r) {
  Query m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.sender_key, r.Bytes("sender_key"));
  WRIT_ASSIGN_OR_RETURN(m.nonce, r.Bytes("nonce"));
  WRIT_ASSIGN_OR_RETURN(m.time_ms, r.U64("time_ms"));
  WRIT_ASSIGN_OR_RETURN(m.signature, r.Bytes("signature"));
  return m;
}

Result<QueryAnswer> GetQueryAnswer(WireReader& r) {
  QueryAnswer m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.json, r.String("json"));
  return m;
}

Result<Remove> GetRemove(WireReader& r) {
  Remove m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.force, r.U8("force"));
  WRIT_ASSIGN_OR_RETURN(m.sender_key, r.Bytes("sender_key"));
  WRIT_ASSIGN_OR_RETURN(m.nonce, r.Bytes("nonce"));
  WRIT_ASSIGN_OR_RETURN(m.time_ms, r.U64("time_ms"));
  WRIT_ASSIGN_OR_RETURN(m.signature, r.Bytes("signature"));
  return m;
}

Result<RemoveAnswer> GetRemoveAnswer(WireReader& r) {
  RemoveAnswer m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.json, r.String("json"));
  return m;
}

Result<Ring> GetRing(WireReader& r) {
  Ring m;
  WRIT_ASSIGN_OR_RETURN(m.window_id, r.U32("window_id"));
  WRIT_ASSIGN_OR_RETURN(m.remote_address, r.U64("remote_address"));
  WRIT_ASSIGN_OR_RETURN(m.key, r.U64("key"));
  WRIT_ASSIGN_OR_RETURN(m.slot_size, r.U64("slot_size"));
  WRIT_ASSIGN_OR_RETURN(m.slot_count, r.U32("slot_count"));
  return m;
}

Result<Deliver> GetDeliver(WireReader& r) {
  Deliver m;
  WRIT_ASSIGN_OR_RETURN(m.slot, r.U32("slot"));
  WRIT_ASSIGN_OR_RETURN(m.announce, GetAnnounce(r));
  return m;
}

Result<SlotsFree> GetSlotsFree(WireReader& r) {
  SlotsFree m;
  WRIT_ASSIGN_OR_RETURN(m.window_id, r.U32("window_id"));
  WRIT_ASSIGN_OR_RETURN(uint32_t count, r.U32("count"));
  // Checked before anything is read: a count the frame cannot hold allocates nothing.
  if (count == 0 || count > kMaxRingSlots || count > r.remaining() / 4) {
    return Status::Malformed("slots-free.count: " + std::to_string(count) + ", expected 1 to " +
                             std::to_string(kMaxRingSlots) + " and at most the " +
                             std::to_string(r.remaining() / 4) + " slots the payload holds");
  }
  m.slots.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    WRIT_ASSIGN_OR_RETURN(uint32_t slot, r.U32("slot"));
    m.slots.push_back(slot);
  }
  return m;
}

Result<Written> GetWritten(WireReader& r) {
  Written m;
  WRIT_ASSIGN_OR_RETURN(m.delivery_id, r.String("delivery_id"));
  WRIT_ASSIGN_OR_RETURN(m.window_id, r.U32("window_id"));
  WRIT_ASSIGN_OR_RETURN(uint32_t count, r.U32("count"));
  // Checked before anything is read: a count the frame cannot hold allocates nothing.
  if (count == 0 || count > kMaxWrittenChunks || count > r.remaining() / 4) {
    return Status::Malformed("written.count: " + std::to_string(count) + ", expected 1 to " +
                             std::to_string(kMaxWrittenChunks) + " and at most the " +
                             std::to_string(r.remaining() / 4) + " chunks the payload holds");
  }
  m.chunks.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    WRIT_ASSIGN_OR_RETURN(uint32_t chunk, r.U32("chunk"));
    m.chunks.push_back(chunk);
  }
  return m;
}

template <typename T>
Result<Message> AsMessage(Result<T> r) {
  if (!r.ok()) return r.status();
  return Message(std::move(r).value());
}

Result<Message> GetAny(MessageType type, WireReader& r) {
  switch (type) {
    case MessageType::kHello: return AsMessage(GetHello(r));
    case MessageType::kAnnounce: return AsMessage(GetAnnounce(r));
    case MessageType::kGrant: return AsMessage(GetGrant(r));
    case MessageType::kCommit: return AsMessage(GetCommit(r));
    case MessageType::kReceipt: return AsMessage(GetReceipt(r));
    case MessageType::kRefuse: return AsMessage(GetRefuse(r));
    case MessageType::kAbort: return AsMessage(GetAbort(r));
    case MessageType::kQuery: return AsMessage(GetQuery(r));
    case MessageType::kQueryAnswer: return AsMessage(GetQueryAnswer(r));
    case MessageType::kReceipts: return AsMessage(GetReceipts(r));
    case MessageType::kRing: return AsMessage(GetRing(r));
    case MessageType::kDeliver: return AsMessage(GetDeliver(r));
    case MessageType::kSlotsFree: return AsMessage(GetSlotsFree(r));
    case MessageType::kRemove: return AsMessage(GetRemove(r));
    case MessageType::kRemoveAnswer: return AsMessage(GetRemoveAnswer(r));
    case MessageType::kWritten: return AsMessage(GetWritten(r));
  }
  return Status::Malformed("frame.type: unknown message type " +
                           std::to_string(static_cast<int>(type)));
}

}  // namespace

std::vector<uint8_t> Encode(const Message& message) {
  std::vector<uint8_t> frame;
  EncodeAppend(message, frame);
  return frame;
}

size_t EncodeAppend(const Message& message, std::vector<uint8_t>& out) {
  const size_t begin = out.size();
  out.resize(begin + kFrameHeaderBytes);
  WireWriter writer(out);
  std::visit([&](const auto& m) { Put(writer, m); }, message);
  FrameHeader header;
  header.type = TypeOf(message);
  const size_t frame_bytes = out.size() - begin;
  header.payload_bytes = static_cast<uint32_t>(frame_bytes - kFrameHeaderBytes);
  WriteFrameHeader(header, out.data() + begin);
  return frame_bytes;
}

Result<Message> DecodePayload(MessageType type, std::span<const uint8_t> payload,
                              const Limits& limits) {
  WireReader reader(payload, MessageTypeName(type));
  WRIT_ASSIGN_OR_RETURN(Message message, GetAny(type, reader));
  WRIT_RETURN_IF_ERROR(reader.ExpectEnd());
  const bool receipts = type == MessageType::kReceipt || type == MessageType::kReceipts;
  WRIT_RETURN_IF_ERROR(Validate(message, limits, limits.parse_receipt_json || !receipts));
  return message;
}

namespace {

// What a signature over `m` covers: a tag naming the kind of request, the receiver it is
// for, then the message as encoded with its signature empty.
template <typename Signed>
std::vector<uint8_t> SigningBytes(std::string_view tag, const Signed& m,
                                  std::string_view receiver_id) {
  Signed unsigned_copy = m;
  unsigned_copy.signature.clear();
  std::vector<uint8_t> out;
  WireWriter w(out);
  w.String(tag);
  w.String(receiver_id);
  Put(w, unsigned_copy);
  return out;
}

}  // namespace

std::vector<uint8_t> AnnounceSigningBytes(const Announce& announce, std::string_view receiver_id) {
  return SigningBytes("writ-announce-v1", announce, receiver_id);
}

std::vector<uint8_t> QuerySigningBytes(const Query& query, std::string_view receiver_id) {
  return SigningBytes("writ-query-v1", query, receiver_id);
}

std::vector<uint8_t> RemoveSigningBytes(const Remove& remove, std::string_view receiver_id) {
  return SigningBytes("writ-remove-v1", remove, receiver_id);
}

std::vector<uint8_t> CommitSigningBytes(const Commit& commit, std::string_view receiver_id,
                                        std::span<const uint8_t> announce_nonce) {
  Commit unsigned_copy = commit;
  unsigned_copy.signature.clear();
  std::vector<uint8_t> out;
  WireWriter w(out);
  w.String("writ-commit-v1");
  w.String(receiver_id);
  w.Bytes(announce_nonce);  // binds the commit to its announce
  Put(w, unsigned_copy);
  return out;
}

Result<Message> DecodeFrame(std::span<const uint8_t> frame, const Limits& limits) {
  WRIT_ASSIGN_OR_RETURN(FrameHeader header, ParseFrameHeader(frame, limits));
  const size_t body = frame.size() - kFrameHeaderBytes;
  if (body < header.payload_bytes) {
    return Status::Malformed(
        std::string(MessageTypeName(header.type)) + ": truncated frame, payload declares " +
        std::to_string(header.payload_bytes) + " bytes, " + std::to_string(body) + " present");
  }
  if (body > header.payload_bytes) {
    return Status::Malformed("frame: " + std::to_string(body - header.payload_bytes) +
                             " trailing bytes after the " +
                             std::string(MessageTypeName(header.type)) + " frame");
  }
  return DecodePayload(header.type, frame.subspan(kFrameHeaderBytes), limits);
}

}  // namespace writ::protocol
