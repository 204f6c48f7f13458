#include "protocol/validate.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "protocol/announce_group.h"
#include "protocol/text.h"

namespace writ::protocol {
namespace {

std::string Field(std::string_view message, std::string_view field) {
  std::string out(message);
  out += '.';
  out += field;
  out += ": ";
  return out;
}

std::string ByteHex(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

// Checks done in the order a reader of the error would want them.
class Checker {
 public:
  Checker(std::string_view message, const Limits& limits, bool parse_json)
      : message_(message), limits_(limits), parse_json_(parse_json) {}

  // Non-empty printable ASCII without spaces, at most `limit` bytes.
  Status Token(std::string_view field, std::string_view value, uint32_t limit,
               bool may_be_empty = false) const {
    if (value.empty()) {
      if (may_be_empty) return Status::Ok();
      return Fail(field, "empty");
    }
    if (value.size() > limit) {
      return Fail(field, std::to_string(value.size()) + " bytes, limit " + std::to_string(limit));
    }
    for (size_t i = 0; i < value.size(); ++i) {
      const auto c = static_cast<uint8_t>(value[i]);
      if (c < 0x21 || c > 0x7e) {
        return Fail(field, "byte " + ByteHex(c) + " at offset " + std::to_string(i) +
                               " is not printable ASCII without spaces");
      }
    }
    return Status::Ok();
  }

  Status Id(std::string_view field, std::string_view value, bool may_be_empty = false) const {
    return Token(field, value, limits_.max_id_bytes, may_be_empty);
  }

  Status Address(std::string_view field, size_t size, bool may_be_empty) const {
    if (size == 0 && !may_be_empty) return Fail(field, "empty");
    if (size > limits_.max_address_bytes) {
      return Fail(field, std::to_string(size) + " bytes, limit " +
                             std::to_string(limits_.max_address_bytes));
    }
    return Status::Ok();
  }

  // Human text: valid UTF-8 without control characters (it ends up on terminals).
  Status Text(std::string_view field, std::string_view value) const {
    if (value.size() > limits_.max_detail_bytes) {
      return Fail(field, std::to_string(value.size()) + " bytes, limit " +
                             std::to_string(limits_.max_detail_bytes));
    }
    const TextProblem problem = FindTextProblem(value);
    switch (problem.kind) {
      case TextProblem::kNone: break;
      case TextProblem::kInvalidUtf8:
        return Fail(field, "invalid UTF-8 at offset " + std::to_string(problem.offset));
      case TextProblem::kControl:
        return Fail(field, "control character at offset " + std::to_string(problem.offset));
    }
    return Status::Ok();
  }

  // A JSON object. Size is bounded by the frame limit alone.
  Status JsonObject(std::string_view field, std::string_view value) const {
    const size_t first = value.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return Fail(field, "empty");
    if (value[first] != '{') return Fail(field, "not a JSON object");
    if (parse_json_ && !nlohmann::json::accept(value.begin(), value.end())) {
      return Fail(field, "not valid JSON");
    }
    return Status::Ok();
  }

  const Limits& limits() const { return limits_; }

  Status Fail(std::string_view field, const std::string& what) const {
    return Status::Malformed(Field(message_, field) + what);
  }

 private:
  std::string_view message_;
  const Limits& limits_;
  bool parse_json_;
};

Status Check(const Hello& m, const Checker& c) {
  if (m.version == 0) return c.Fail("version", "0, versions start at 1");
  WRIT_RETURN_IF_ERROR(c.Token("provider", m.provider, c.limits().max_name_bytes));
  WRIT_RETURN_IF_ERROR(c.Address("fabric_address", m.fabric_address.size(), false));
  WRIT_RETURN_IF_ERROR(c.Id("receiver_id", m.receiver_id));
  if (m.max_in_flight == 0) return c.Fail("max_in_flight", "0, a connection carries at least 1");
  return Status::Ok();
}

template <typename M>
Status CheckSignedFields(const M& m, const Checker& c, bool group_form = false);
Status CheckRegionLengths(const Announce& m, const Checker& c);

Status Check(const Announce& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id));
  if (m.chunk_size == 0) return c.Fail("chunk_size", "0, must be at least 1");
  if (m.bytes != 0 && m.chunk_size > m.bytes) {
    return c.Fail("chunk_size", std::to_string(m.chunk_size) + " is larger than the " +
                                    std::to_string(m.bytes) + "-byte delivery");
  }
  if (!IsKnown(m.rule)) {
    return c.Fail("rule", "unknown value " + std::to_string(static_cast<int>(m.rule)));
  }
  // Empty: the sender does not know it yet; the commit carries it.
  if (!m.digest.empty() && m.digest.size() != DigestSize(m.rule)) {
    return c.Fail("digest", std::to_string(m.digest.size()) + " bytes, " +
                                std::string(RuleName(m.rule)) + " needs " +
                                std::to_string(DigestSize(m.rule)) + " (or 0: not known yet)");
  }
  if (!IsKnown(m.until)) {
    return c.Fail("until", "unknown value " + std::to_string(static_cast<int>(m.until)));
  }
  if (!IsKnown(m.retention)) {
    return c.Fail("retention", "unknown value " + std::to_string(static_cast<int>(m.retention)));
  }
  WRIT_RETURN_IF_ERROR(c.Address("sender_fabric_address", m.sender_fabric_address.size(), true));
  WRIT_RETURN_IF_ERROR(CheckSignedFields(m, c, /*group_form=*/true));
  WRIT_RETURN_IF_ERROR(CheckRegionLengths(m, c));
  if (m.target.empty()) {
    if (m.target_offset != 0) return c.Fail("target_offset", "set without a target");
    if (!m.target_pages.empty()) return c.Fail("target_pages", "set without a target");
    return Status::Ok();
  }
  WRIT_RETURN_IF_ERROR(c.Token("target", m.target, c.limits().max_name_bytes));
  if (m.target_offset > UINT64_MAX - m.bytes) {
    return c.Fail("target_offset", "offset plus bytes pass 2^64");
  }
  if (m.target_pages.empty()) return Status::Ok();
  // Which pages exist, and whether the list repeats one, is the receiver's check: only it
  // knows the target's geometry.
  if (m.target_offset != 0) return c.Fail("target_offset", "set with a page list");
  if (m.target_pages.size() > c.limits().max_target_pages) {
    return c.Fail("target_pages", std::to_string(m.target_pages.size()) + " pages, limit " +
                                      std::to_string(c.limits().max_target_pages));
  }
  return Status::Ok();
}

// A scatter-gather table: bounded, and its lengths (zero-length regions allowed) sum to
// exactly `bytes`, without wrapping.
Status CheckRegionLengths(const Announce& m, const Checker& c) {
  if (m.region_lengths.size() > c.limits().max_regions) {
    return c.Fail("region_lengths", std::to_string(m.region_lengths.size()) + " regions, limit " +
                                        std::to_string(c.limits().max_regions));
  }
  if (m.region_lengths.empty()) return Status::Ok();
  uint64_t sum = 0;
  for (uint64_t length : m.region_lengths) {
    if (length > m.bytes - sum) {
      return c.Fail("region_lengths", "the regions add up to more than the " +
                                          std::to_string(m.bytes) + "-byte delivery");
    }
    sum += length;
  }
  if (sum != m.bytes) {
    return c.Fail("region_lengths", "the regions add up to " + std::to_string(sum) +
                                        " bytes, the delivery is " + std::to_string(m.bytes));
  }
  return Status::Ok();
}

// An announce's signature in the group form (announce_group.h): a leaf of a group of 2 to
// kMaxAnnounceGroup, with 1 to kMaxAnnounceGroupSteps sibling hashes (that their count is
// the tree's is the receiver's check, with the hashes).
Status CheckAnnounceGroup(const std::vector<uint8_t>& signature, const Checker& c) {
  const size_t path = signature.size() - kAnnounceGroupHeaderBytes;
  if (path % 32 != 0 || path / 32 > kMaxAnnounceGroupSteps) {
    return c.Fail("signature", std::to_string(signature.size()) +
                                   " bytes, Ed25519 signatures have 64, or 72 + 32 a step "
                                   "(at most 16) in the group form");
  }
  const auto group = ParseAnnounceGroup(signature);
  if (group->leaves < 2 || group->leaves > kMaxAnnounceGroup || group->index >= group->leaves) {
    return c.Fail("signature", "leaf " + std::to_string(group->index) + " of a group of " +
                                   std::to_string(group->leaves) + ", groups have 2 to " +
                                   std::to_string(kMaxAnnounceGroup) + " leaves");
  }
  return Status::Ok();
}

// An announce's or a query's sender authentication: all four fields, or none. An
// announce's signature may take the group form.
template <typename M>
Status CheckSignedFields(const M& m, const Checker& c, bool group_form) {
  if (m.sender_key.empty()) {
    if (!m.nonce.empty() || m.time_ms != 0 || !m.signature.empty()) {
      return c.Fail("sender_key", "empty, but nonce, time or signature is present");
    }
    return Status::Ok();
  }
  if (m.sender_key.size() != kSenderKeyBytes) {
    return c.Fail("sender_key",
                  std::to_string(m.sender_key.size()) + " bytes, Ed25519 keys have 32");
  }
  if (m.nonce.size() != kNonceBytes) {
    return c.Fail("nonce", std::to_string(m.nonce.size()) + " bytes, needs 16");
  }
  if (group_form && m.signature.size() > kAnnounceGroupHeaderBytes) {
    return CheckAnnounceGroup(m.signature, c);
  }
  if (m.signature.size() != kSignatureBytes) {
    return c.Fail("signature",
                  std::to_string(m.signature.size()) + " bytes, Ed25519 signatures have 64");
  }
  return Status::Ok();
}

Status Check(const Grant& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id));
  if (m.length == 0) return c.Fail("length", "0, must be at least 1");
  if (m.remote_address > UINT64_MAX - m.length) {
    return c.Fail("length", std::to_string(m.length) + " bytes from remote_address " +
                                std::to_string(m.remote_address) + " wrap past 2^64");
  }
  if (m.chunk_count == 0) return c.Fail("chunk_count", "0, must be at least 1");
  if (m.first_chunk > UINT64_MAX - m.chunk_count) {
    return c.Fail("chunk_count", std::to_string(m.chunk_count) + " chunks from first_chunk " +
                                     std::to_string(m.first_chunk) + " wrap past 2^64");
  }
  return Status::Ok();
}

// The digest's size for its rule is the receiver's check: only the announce names the rule.
Status Check(const Commit& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id));
  if (m.digest.empty()) return c.Fail("digest", "empty, the commit carries the delivery's digest");
  if (m.digest.size() > kMaxDigestBytes) {
    return c.Fail("digest", std::to_string(m.digest.size()) + " bytes, limit " +
                                std::to_string(kMaxDigestBytes));
  }
  if (!m.signature.empty() && m.signature.size() != kSignatureBytes) {
    return c.Fail("signature", std::to_string(m.signature.size()) +
                                   " bytes, Ed25519 signatures have 64 (or 0: unsigned)");
  }
  return Status::Ok();
}

Status Check(const Receipt& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id));
  return c.JsonObject("json", m.json);
}

Status Check(const Receipts& m, const Checker& c) {
  if (m.receipts.empty() || m.receipts.size() > kMaxReceiptsPerMessage) {
    return c.Fail("count", std::to_string(m.receipts.size()) + ", expected 1 to " +
                               std::to_string(kMaxReceiptsPerMessage));
  }
  for (const Receipt& r : m.receipts) {
    WRIT_RETURN_IF_ERROR(c.Id("delivery_id", r.delivery_id));
    WRIT_RETURN_IF_ERROR(c.JsonObject("json", r.json));
  }
  return Status::Ok();
}

Status Check(const Refuse& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id, /*may_be_empty=*/true));
  if (!IsKnown(m.reason)) {
    return c.Fail("reason", "unknown value " + std::to_string(static_cast<int>(m.reason)));
  }
  return c.Text("detail", m.detail);
}

Status Check(const Abort& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id, /*may_be_empty=*/true));
  return c.Text("detail", m.detail);
}

Status Check(const Query& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id));
  return CheckSignedFields(m, c);
}

Status Check(const QueryAnswer& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id));
  return c.JsonObject("json", m.json);
}

Status Check(const Remove& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id));
  if (m.force > 1) return c.Fail("force", std::to_string(m.force) + ", expected 0 or 1");
  return CheckSignedFields(m, c);
}

Status Check(const RemoveAnswer& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id));
  return c.JsonObject("json", m.json);
}

Status Check(const Ring& m, const Checker& c) {
  if (m.window_id == 0 || m.window_id > 0xFFFF) {
    return c.Fail("window_id", std::to_string(m.window_id) + ", expected 1 to 65535");
  }
  if (m.slot_size == 0) return c.Fail("slot_size", "0, must be at least 1");
  if (m.slot_count == 0 || m.slot_count > kMaxRingSlots) {
    return c.Fail("slot_count", std::to_string(m.slot_count) + ", expected 1 to " +
                                    std::to_string(kMaxRingSlots));
  }
  if (m.slot_size > (UINT64_MAX - m.remote_address) / m.slot_count) {
    return c.Fail("slot_count", std::to_string(m.slot_count) + " slots of " +
                                    std::to_string(m.slot_size) + " bytes wrap past 2^64");
  }
  return Status::Ok();
}

// The slot's range against the ring is the receiver's check: only it knows its ring.
Status Check(const Deliver& m, const Checker& c) {
  if (m.slot >= kMaxRingSlots) {
    return c.Fail("slot", std::to_string(m.slot) + ", a ring has at most " +
                              std::to_string(kMaxRingSlots) + " slots");
  }
  const Announce& a = m.announce;
  WRIT_RETURN_IF_ERROR(Check(a, c));  // names the rule the digest is checked against
  if (!a.target.empty()) {
    return c.Fail("target", "a ring slot is a copy: an addressed delivery is announced");
  }
  if (a.bytes == 0) return c.Fail("bytes", "0, an empty delivery has nothing to write");
  // Its size against the rule was checked with the announce.
  if (a.digest.empty()) {
    return c.Fail("digest", "empty, a deliver's announce carries the digest of its slot's bytes");
  }
  return Status::Ok();
}

Status Check(const SlotsFree& m, const Checker& c) {
  if (m.window_id == 0 || m.window_id > 0xFFFF) {
    return c.Fail("window_id", std::to_string(m.window_id) + ", expected 1 to 65535");
  }
  if (m.slots.empty() || m.slots.size() > kMaxRingSlots) {
    return c.Fail("count", std::to_string(m.slots.size()) + ", expected 1 to " +
                               std::to_string(kMaxRingSlots));
  }
  for (uint32_t slot : m.slots) {
    if (slot >= kMaxRingSlots) return c.Fail("slot", std::to_string(slot) + ", out of range");
  }
  return Status::Ok();
}

Status Check(const Written& m, const Checker& c) {
  WRIT_RETURN_IF_ERROR(c.Id("delivery_id", m.delivery_id));
  if (m.window_id == 0 || m.window_id > 0xFFFF) {
    return c.Fail("window_id", std::to_string(m.window_id) + ", expected 1 to 65535");
  }
  if (m.chunks.empty() || m.chunks.size() > kMaxWrittenChunks) {
    return c.Fail("count", std::to_string(m.chunks.size()) + ", expected 1 to " +
                               std::to_string(kMaxWrittenChunks));
  }
  for (uint32_t chunk : m.chunks) {
    if (chunk > 0xFFFF) return c.Fail("chunk", std::to_string(chunk) + ", expected 0 to 65535");
  }
  return Status::Ok();
}

}  // namespace

Status Validate(const Message& message, const Limits& limits, bool parse_json) {
  const Checker checker(MessageTypeName(message), limits, parse_json);
  return std::visit([&](const auto& m) { return Check(m, checker); }, message);
}

uint64_t ChunkCount(const Announce& announce) {
  if (announce.chunk_size == 0) return 0;
  return announce.bytes / announce.chunk_size + (announce.bytes % announce.chunk_size != 0);
}

Status CheckGrantFits(const Announce& announce, const Grant& grant) {
  if (grant.delivery_id != announce.delivery_id) {
    return Status::Malformed("grant.delivery_id: \"" + grant.delivery_id +
                             "\", the announced delivery is \"" + announce.delivery_id + "\"");
  }
  const uint64_t chunks = ChunkCount(announce);
  if (grant.first_chunk >= chunks || grant.chunk_count > chunks - grant.first_chunk) {
    return Status::Malformed("grant.chunk_count: chunks [" + std::to_string(grant.first_chunk) +
                             ", +" + std::to_string(grant.chunk_count) + ") run past the " +
                             std::to_string(chunks) + " chunks of the delivery");
  }
  // Both products stay below `bytes`: the end is capped at the last chunk.
  const uint64_t end_chunk = grant.first_chunk + grant.chunk_count;
  const uint64_t begin = grant.first_chunk * announce.chunk_size;
  const uint64_t end = end_chunk == chunks ? announce.bytes : end_chunk * announce.chunk_size;
  if (grant.length < end - begin) {
    return Status::Malformed("grant.length: " + std::to_string(grant.length) + " bytes, chunks [" +
                             std::to_string(grant.first_chunk) + ", " + std::to_string(end_chunk) +
                             ") need " + std::to_string(end - begin));
  }
  return Status::Ok();
}

}  // namespace writ::protocol
