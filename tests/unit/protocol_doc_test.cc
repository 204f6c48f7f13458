// docs/protocol.md against the codec: the message table's fields (order, names, types),
// the marked hex dumps and the enum tables must say what the code encodes.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "protocol/codec.h"
#include "protocol/frame.h"
#include "protocol/wire.h"

namespace writ::protocol {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;  // name, type or value

std::string Doc() {
  std::ifstream in(WRIT_PROTOCOL_DOC);
  EXPECT_TRUE(in) << "cannot read " << WRIT_PROTOCOL_DOC;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::stringstream in(row);
  std::string cell;
  std::getline(in, cell, '|');  // before the first '|'
  while (std::getline(in, cell, '|')) {
    const size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
    cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  return cells;
}

// "## Message types" rows: code -> (name, [(field, type)]).
std::map<int, std::pair<std::string, Fields>> MessageTable(const std::string& doc) {
  std::map<int, std::pair<std::string, Fields>> out;
  const size_t start = doc.find("## Message types");
  std::stringstream in(doc.substr(start, doc.find("\n#", start + 1) - start));
  const std::regex field("`([a-z_]+) (u8|u16|u32|u64|string|bytes)`");
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> c = Cells(line);
    if (c.size() < 4 || c[0].empty() || !std::isdigit(static_cast<unsigned char>(c[0][0])))
      continue;
    Fields fields;
    for (std::sregex_iterator m(c[3].begin(), c[3].end(), field), end; m != end; ++m) {
      fields.emplace_back((*m)[1], (*m)[2]);
    }
    out[std::stoi(c[0])] = {c[1].substr(1, c[1].size() - 2), fields};
  }
  return out;
}

std::string Hex(std::span<const uint8_t> bytes) {
  std::string out;
  char buf[4];
  for (uint8_t b : bytes) std::snprintf(buf, sizeof buf, "%02x", b), out += buf;
  return out;
}

// Reads `payload` as the documented fields say: (field, value as text), or an error.
Result<Fields> Walk(std::span<const uint8_t> payload, const Fields& doc_fields) {
  WireReader r(payload, "doc");
  Fields out;
  for (const auto& [name, type] : doc_fields) {
    std::string value;
    if (type == "u8") {
      WRIT_ASSIGN_OR_RETURN(uint8_t v, r.U8(name));
      value = std::to_string(v);
    } else if (type == "u16") {
      WRIT_ASSIGN_OR_RETURN(uint16_t v, r.U16(name));
      value = std::to_string(v);
    } else if (type == "u32") {
      WRIT_ASSIGN_OR_RETURN(uint32_t v, r.U32(name));
      value = std::to_string(v);
    } else if (type == "u64") {
      WRIT_ASSIGN_OR_RETURN(uint64_t v, r.U64(name));
      value = std::to_string(v);
    } else if (type == "string") {
      WRIT_ASSIGN_OR_RETURN(value, r.String(name));
    } else {
      WRIT_ASSIGN_OR_RETURN(std::vector<uint8_t> v, r.Bytes(name));
      value = Hex(v);
    }
    out.emplace_back(name, value);
  }
  WRIT_RETURN_IF_ERROR(r.ExpectEnd());
  return out;
}

std::vector<uint8_t> Filled(size_t n, uint8_t b) { return std::vector<uint8_t>(n, b); }

// One sample of every message, with every field distinct, and its fields in codec order.
std::vector<std::pair<Message, Fields>> Samples() {
  const std::string k32 = std::string(64, '1'), n16 = std::string(32, '2');
  return {
      {Hello{7, "tcp;ofi_rxm", {0xa1, 0xa2}, "writ-serve@h", 64},
       {{"version", "7"},
        {"provider", "tcp;ofi_rxm"},
        {"fabric_address", "a1a2"},
        {"receiver_id", "writ-serve@h"},
        {"max_in_flight", "64"}}},
      {Announce{"d-1",
                10,
                4,
                Rule::kCrc32c,
                {0xe3, 0x06, 0x92, 0x83},
                Rung::kReceived,
                RetentionClass::kPowerLoss,
                {0xf1},
                Filled(32, 0x11),
                Filled(16, 0x22),
                1234567,
                Filled(64, 0x33),
                {}},
       {{"delivery_id", "d-1"},
        {"bytes", "10"},
        {"chunk_size", "4"},
        {"rule", "2"},
        {"digest", "e3069283"},
        {"until", "2"},
        {"retention", "3"},
        {"sender_fabric_address", "f1"},
        {"sender_key", k32},
        {"nonce", n16},
        {"time_ms", "1234567"},
        {"signature", std::string(128, '3')}}},
      {Grant{"g", 5, 4096, 77, 8192, 2, 3},
       {{"delivery_id", "g"},
        {"window_id", "5"},
        {"remote_address", "4096"},
        {"key", "77"},
        {"length", "8192"},
        {"first_chunk", "2"},
        {"chunk_count", "3"}}},
      {Commit{"c", {0xab, 0xcd}, Filled(64, 0x77)},
       {{"delivery_id", "c"}, {"digest", "abcd"}, {"signature", std::string(128, '7')}}},
      {Receipt{"r", "{}"}, {{"delivery_id", "r"}, {"json", "{}"}}},
      {Refuse{"f", RefuseReason::kLimit, "too many"},
       {{"delivery_id", "f"}, {"reason", "7"}, {"detail", "too many"}}},
      {Abort{"a", "bye"}, {{"delivery_id", "a"}, {"detail", "bye"}}},
      {Query{"q", Filled(32, 0x44), Filled(16, 0x55), 7654321, Filled(64, 0x66)},
       {{"delivery_id", "q"},
        {"sender_key", std::string(64, '4')},
        {"nonce", std::string(32, '5')},
        {"time_ms", "7654321"},
        {"signature", std::string(128, '6')}}},
      {QueryAnswer{"qa", "{\"x\":1}"}, {{"delivery_id", "qa"}, {"json", "{\"x\":1}"}}},
      {Receipts{{Receipt{"r", "{}"}}}, {{"count", "1"}, {"delivery_id", "r"}, {"json", "{}"}}},
      {Ring{9, 8192, 88, 65536, 64},
       {{"window_id", "9"},
        {"remote_address", "8192"},
        {"key", "88"},
        {"slot_size", "65536"},
        {"slot_count", "64"}}},
      {Deliver{3, Announce{"d-2",
                           10,
                           10,
                           Rule::kCrc32c,
                           {0xab, 0xcd, 0xef, 0x01},
                           Rung::kValidated,
                           RetentionClass::kVolatile,
                           {},
                           {},
                           {},
                           0,
                           {},
                           {}}},
       {{"slot", "3"},
        {"delivery_id", "d-2"},
        {"bytes", "10"},
        {"chunk_size", "10"},
        {"rule", "2"},
        {"digest", "abcdef01"},
        {"until", "3"},
        {"retention", "1"},
        {"sender_fabric_address", ""},
        {"sender_key", ""},
        {"nonce", ""},
        {"time_ms", "0"},
        {"signature", ""}}},
      {SlotsFree{9, {5}}, {{"window_id", "9"}, {"count", "1"}, {"slot", "5"}}},
      {Remove{"r", 1, Filled(32, 0x11), Filled(16, 0x22), 42, Filled(64, 0x33)},
       {{"delivery_id", "r"},
        {"force", "1"},
        {"sender_key", k32},
        {"nonce", n16},
        {"time_ms", "42"},
        {"signature", std::string(128, '3')}}},
      {RemoveAnswer{"r", "{}"}, {{"delivery_id", "r"}, {"json", "{}"}}},
  };
}

TEST(ProtocolDoc, TheMessageTableListsEveryFieldTheCodecEncodes) {
  const auto table = MessageTable(Doc());
  ASSERT_EQ(table.size(), std::variant_size_v<Message>) << "one row per message type";
  for (const auto& [message, expected] : Samples()) {
    const int code = static_cast<int>(TypeOf(message));
    SCOPED_TRACE(std::string(MessageTypeName(message)));
    ASSERT_TRUE(table.count(code)) << "no row for type code " << code;
    const auto& [name, doc_fields] = table.at(code);
    EXPECT_EQ(name, MessageTypeName(message)) << "type code " << code;
    const std::vector<uint8_t> frame = Encode(message);
    auto walked = Walk(std::span(frame).subspan(kFrameHeaderBytes), doc_fields);
    ASSERT_TRUE(walked.ok()) << "the documented fields do not read the encoded payload: "
                             << walked.status().message();
    EXPECT_EQ(*walked, expected) << "names, order or types differ from the codec";
  }
}

// Every hex dump marked `<!-- frame: NAME -->` is the encoder's output for NAME.
TEST(ProtocolDoc, TheMarkedHexDumpsAreWhatTheEncoderWrites) {
  const std::map<std::string, Message> frames = {
      {"commit-rc233", Commit{"RC-233", {0xe3, 0x06, 0x92, 0x83}, {}}},
      {"announce-unsigned", Announce{"x",
                                     10,
                                     4,
                                     Rule::kCrc32c,
                                     {0xe3, 0x06, 0x92, 0x83},
                                     Rung::kReceived,
                                     RetentionClass::kPowerLoss,
                                     {},
                                     {},
                                     {},
                                     0,
                                     {},
                                     {}}},
      {"deliver-slot3", Deliver{3, Announce{"x",
                                            10,
                                            10,
                                            Rule::kCrc32c,
                                            {0xe3, 0x06, 0x92, 0x83},
                                            Rung::kValidated,
                                            RetentionClass::kVolatile,
                                            {},
                                            {},
                                            {},
                                            0,
                                            {},
                                            {}}}},
      {"announce-regions", Announce{"x",
                                    10,
                                    4,
                                    Rule::kCrc32c,
                                    {0xe3, 0x06, 0x92, 0x83},
                                    Rung::kReceived,
                                    RetentionClass::kPowerLoss,
                                    {},
                                    {},
                                    {},
                                    0,
                                    {},
                                    {4, 0, 6}}},
  };
  const std::string doc = Doc();
  const std::regex marker("<!-- frame: ([a-z0-9-]+) -->\\n```\\n([^`]*)```");
  const std::regex byte("^[0-9a-f]{2}$");
  size_t seen = 0;
  for (std::sregex_iterator m(doc.begin(), doc.end(), marker), end; m != end; ++m, ++seen) {
    const std::string name = (*m)[1];
    ASSERT_TRUE(frames.count(name)) << "the test does not know the frame " << name;
    std::vector<uint8_t> bytes;
    std::stringstream lines((*m)[2].str());
    for (std::string line; std::getline(lines, line);) {
      std::stringstream tokens(line);
      for (std::string t; tokens >> t && std::regex_match(t, byte);) {
        bytes.push_back(static_cast<uint8_t>(std::stoi(t, nullptr, 16)));
      }
    }
    EXPECT_EQ(Hex(bytes), Hex(Encode(frames.at(name)))) << name;
  }
  EXPECT_EQ(seen, frames.size());
}

// The enum tables: `rule` (value, name, digest bytes), `until`, `retention`, `reason`.
TEST(ProtocolDoc, TheEnumTablesMatchTheNames) {
  const std::string doc = Doc();
  const size_t start = doc.find("### Enum values");
  std::stringstream in(doc.substr(start, doc.find("\n## ", start) - start));
  const std::regex pair("(\\d+)\\s*\\|?\\s*`([^`]+)`");
  std::string table;
  size_t checked = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) == 0) table = line.substr(3, line.find('`', 3) - 3);
    if (line.rfind("|", 0) != 0 || line.rfind("|---", 0) == 0) continue;
    for (std::sregex_iterator m(line.begin(), line.end(), pair), end; m != end; ++m) {
      const auto value = static_cast<uint8_t>(std::stoi((*m)[1]));
      const std::string name = (*m)[2];
      if (table == "rule") {
        EXPECT_EQ(RuleName(static_cast<Rule>(value)), name);
        EXPECT_EQ(std::to_string(DigestSize(static_cast<Rule>(value))), Cells(line)[2]) << name;
        ++checked;
        break;  // the row's later cells are not values
      }
      if (table == "until") {
        EXPECT_EQ(RungName(static_cast<Rung>(value)), name);
      }
      if (table == "retention") {
        EXPECT_EQ(RetentionName(static_cast<RetentionClass>(value)), name);
      }
      if (table == "reason") {
        EXPECT_EQ(RefuseReasonName(static_cast<RefuseReason>(value)), name);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5u + 4u + 3u + 14u) << "every value of every enum, once";
}

}  // namespace
}  // namespace writ::protocol
