// writ.audit and writ.verify: the audit of an evidence bundle (writ.audit/1 JSON) and the
// check of a receipt, as `writ audit --json` and `writ verify` do them.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "bindings.h"
#include "writ/audit.h"
#include "writ/receipt.h"

namespace writ::python {
namespace {

// (code, message, report JSON) of a bundle given as text.
py::tuple AuditText(const std::string& text) {
  Result<audit::EvidenceBundle> bundle = [&] {
    py::gil_scoped_release nogil;
    return audit::ParseBundle(text);
  }();
  if (!bundle.ok()) return Answer(bundle.status());
  std::string report;
  {
    py::gil_scoped_release nogil;
    report = audit::ReportToJson(audit::Audit(*bundle));
  }
  return Answer(Status::Ok(), py::str(report));
}

// The same for a bundle in a file, audited as it is read (never held whole).
py::tuple AuditFile(const std::string& path) {
  Status failed;
  std::string report;
  {
    py::gil_scoped_release nogil;
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      failed = Status::InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
    } else if (auto audited = audit::AuditStream(file); !audited.ok()) {
      failed = audited.status().code() == ErrorCode::kIo
                   ? Status::InvalidArgument("cannot read " + path)
                   : audited.status();
    } else {
      report = audit::ReportToJson(*audited);
    }
  }
  return Answer(failed, py::str(report));
}

// (code, message, canonical receipt JSON): consistency, then the signature against the key
// it names and against `public_key_hex` when given. Every failure is kValidation, as
// `writ verify` exits 5 for a malformed receipt too.
py::tuple Verify(const std::string& text, const std::string& public_key_hex) {
  Result<Receipt> receipt = ReceiptFromJson(text);
  if (!receipt.ok()) {
    return Answer(Status::Validation("invalid receipt: " + receipt.status().message()));
  }
  if (Status verified = VerifyReceipt(*receipt, public_key_hex); !verified.ok()) {
    return Answer(Status::Validation("invalid receipt: " + verified.message()));
  }
  return Answer(Status::Ok(), py::str(ReceiptToJson(*receipt)));
}

}  // namespace

void BindEvidence(py::module_& m) {
  m.def("audit_text", &AuditText, py::arg("text"));
  m.def("audit_file", &AuditFile, py::arg("path"));
  m.def("verify", &Verify, py::arg("text"), py::arg("public_key"));
}

}  // namespace writ::python
