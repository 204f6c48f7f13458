#include "receipt/strict_json.h"

#include <algorithm>
#include <set>
#include <vector>

#include "common/printable.h"

namespace writ::receipt {
namespace {

using json = nlohmann::json;

// The keys seen so far in each open object (arrays get an entry too, unused), and the
// path of each, to name a duplicate.
class DuplicateKeyFinder {
 public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: Open(event == json::parse_event_t::array_start); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!open_.empty()) open_.pop_back();
        break;
      case json::parse_event_t::key: Key(parsed.get<std::string>()); break;
      case json::parse_event_t::value: break;
    }
    return true;
  }

  const std::string& duplicate() const { return duplicate_; }

 private:
  struct Level {
    std::string path;  // "" for the top level, else "delivery." or "context.notes[]."
    std::set<std::string> keys;
    std::string last_key;
  };

  void Open(bool array) {
    std::string path;
    if (!open_.empty()) {
      path = open_.back().path + open_.back().last_key + (array ? "[]" : "") + ".";
    }
    open_.push_back(Level{std::move(path), {}, {}});
  }

  void Key(std::string key) {
    if (open_.empty()) return;
    Level& o = open_.back();
    if (!o.keys.insert(key).second && duplicate_.empty()) duplicate_ = o.path + key;
    o.last_key = std::move(key);
  }

  std::vector<Level> open_;
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
  DuplicateKeyFinder finder;
  json j = json::parse(
      text,
      [&finder](int depth, json::parse_event_t event, json& parsed) {
        return finder(depth, event, parsed);
      },
      /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Malformed(std::string(what) + ": not valid JSON");
  if (!finder.duplicate().empty()) {
    return Status::Malformed(Printable(finder.duplicate()) + ": duplicate key");
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
