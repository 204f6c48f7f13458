#include "receipt/strict_json.h"

#include <algorithm>
#include <vector>

#include "common/printable.h"

namespace writ::receipt {
namespace {

using json = nlohmann::json;

// Builds the document as nlohmann's own SAX DOM parser does, and notes the first duplicated
// key as it is met: the object being filled already holds the keys seen so far, so nothing
// else is kept per key (a callback parser copied each key three times: 270 allocations per
// receipt, most of a sender's). Each open container remembers the key it was opened under,
// to name a duplicate's path only when there is one.
class StrictDomBuilder {
 public:
  explicit StrictDomBuilder(json& root) : root_(root) {}

  bool null() { return Put(nullptr) != nullptr; }
  bool boolean(bool value) { return Put(value) != nullptr; }
  bool number_integer(json::number_integer_t value) { return Put(value) != nullptr; }
  bool number_unsigned(json::number_unsigned_t value) { return Put(value) != nullptr; }
  bool number_float(json::number_float_t value, const json::string_t&) {
    return Put(value) != nullptr;
  }
  bool string(json::string_t& value) { return Put(std::move(value)) != nullptr; }
  bool binary(json::binary_t& value) { return Put(json::binary(std::move(value))) != nullptr; }
  bool start_object(std::size_t) { return Open(json::value_t::object, false); }
  bool start_array(std::size_t) { return Open(json::value_t::array, true); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(json::string_t& key) {
    Level& o = open_.back();
    auto& members = o.container->get_ref<json::object_t&>();
    auto [at, fresh] = members.try_emplace(std::move(key), nullptr);
    if (!fresh && duplicate_.empty()) duplicate_ = PathOf(open_.size() - 1) + at->first;
    at->second = nullptr;  // a duplicate's later value replaces the first, as nlohmann does
    o.last_key = &at->first;
    slot_ = &at->second;
    return true;
  }
  template <typename Exception>
  bool parse_error(std::size_t, const std::string&, const Exception&) {
    return false;
  }

  const std::string& duplicate() const { return duplicate_; }

 private:
  struct Level {
    json* container;
    bool array;
    const std::string* last_key = nullptr;  // objects: the key being filled
  };

  json* Put(json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Level& top = open_.back();
    if (top.array) {
      auto& items = top.container->get_ref<json::array_t&>();
      items.push_back(std::move(value));
      return &items.back();
    }
    *slot_ = std::move(value);
    return slot_;
  }
  bool Open(json::value_t type, bool array) {
    json* made = Put(json(type));
    open_.push_back(Level{made, array});
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }
  // "" for the top level, else "delivery." or "context.notes[].": each enclosing level's
  // path, the key it was opened under, "[]" for an array.
  std::string PathOf(size_t level) const {
    std::string path;
    for (size_t i = 1; i <= level; ++i) {
      const Level& parent = open_[i - 1];
      if (!parent.array && parent.last_key != nullptr) path += *parent.last_key;
      path += open_[i].array ? "[]." : ".";
    }
    return path;
  }

  json& root_;
  std::vector<Level> open_;
  json* slot_ = nullptr;  // the member of the innermost object its next value fills
  std::string duplicate_;
};

}  // namespace

Result<json> ParseJsonWithoutDuplicateKeys(std::string_view text, std::string_view what) {
  // nlohmann skips a leading UTF-8 byte order mark and ends the document at a NUL byte,
  // ignoring whatever follows it: both would let unread bytes ride along with a receipt.
  if (text.starts_with("\xEF\xBB\xBF")) {
    return Status::Malformed(std::string(what) + ": starts with a byte order mark");
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return Status::Malformed(std::string(what) + ": a NUL byte at offset " + std::to_string(nul) +
                             " (exactly one JSON document is read)");
  }
  json j;
  StrictDomBuilder builder(j);
  if (!json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                       /*strict=*/true, /*ignore_comments=*/false)) {
    return Status::Malformed(std::string(what) + ": not valid JSON");
  }
  if (!builder.duplicate().empty()) {
    return Status::Malformed(Printable(builder.duplicate()) + ": duplicate key");
  }
  return j;
}

Status CheckKnownFields(const json& object, std::string_view prefix,
                        std::span<const std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Status::Malformed(Printable(std::string(prefix) + key) +
                               ": unknown field (not part of the signed receipt)");
    }
  }
  return Status::Ok();
}

}  // namespace writ::receipt
