// ParseBundle: writ.evidence/1 text → EvidenceBundle (see bundle_reader.h).
#include <ios>

#include "audit/bundle_reader.h"
#include "audit/rules.h"
#include "writ/audit.h"

namespace writ::audit {

Result<EvidenceBundle> ParseBundle(std::string_view json_text) {
  try {
    internal::BundleReader reader;
    // Errors come back through the reader (its parse_error), not as the return value.
    (void)nlohmann::json::sax_parse(json_text, &reader);
    return reader.Finish();
  } catch (const std::exception& e) {
    // Only allocation can throw here; keep the promise that nothing escapes.
    return Status::Internal(std::string("reading the bundle: ") + e.what());
  }
}

Result<EvidenceBundle> ParseBundle(std::istream& in) {
  try {
    internal::BundleReader reader;
    (void)nlohmann::json::sax_parse(in, &reader);
    if (in.bad()) return Status::Io("reading the bundle failed");
    return reader.Finish();
  } catch (const std::ios_base::failure&) {
    return Status::Io("reading the bundle failed");
  } catch (const std::exception& e) {
    return Status::Internal(std::string("reading the bundle: ") + e.what());
  }
}

Result<AuditReport> AuditStream(std::istream& in) {
  try {
    internal::CompactRecords records;
    internal::BundleReader reader(&records);
    (void)nlohmann::json::sax_parse(in, &reader);
    if (in.bad()) return Status::Io("reading the bundle failed");
    auto bundle = reader.Finish();
    if (!bundle.ok()) return bundle.status();
    return internal::AuditOf(*bundle, &records);
  } catch (const std::ios_base::failure&) {
    // libstdc++'s file buffer throws when a read fails (EISDIR, EIO): an input error.
    return Status::Io("reading the bundle failed");
  } catch (const std::exception& e) {
    return Status::Internal(std::string("reading the bundle: ") + e.what());
  }
}

}  // namespace writ::audit
