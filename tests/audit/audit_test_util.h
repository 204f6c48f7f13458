// Loading the test bundles of tests/audit/bundles/ and the examples.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "writ/audit.h"

namespace writ::audit::testing {

inline std::string ReadText(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file.good()) << "cannot open " << path;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// tests/audit/bundles/<name>
inline std::string BundlePath(const std::string& name) {
  return std::string(WRIT_AUDIT_BUNDLES) + "/" + name;
}

inline EvidenceBundle LoadBundle(const std::string& name) {
  auto bundle = ParseBundle(ReadText(BundlePath(name)));
  EXPECT_TRUE(bundle.ok()) << name << ": " << bundle.status().ToString();
  return bundle.ok() ? std::move(bundle).value() : EvidenceBundle{};
}

inline AuditReport AuditBundle(const std::string& name) { return Audit(LoadBundle(name)); }

inline const DeliveryReport& DeliveryById(const AuditReport& report, const std::string& id) {
  auto it = std::find_if(report.deliveries.begin(), report.deliveries.end(),
                         [&](const DeliveryReport& d) { return d.id == id; });
  if (it == report.deliveries.end()) {
    ADD_FAILURE() << "no delivery " << id;
    static const DeliveryReport kNone;
    return kNone;
  }
  return *it;
}

inline const ClaimVerdict& ClaimById(const AuditReport& report, const std::string& id) {
  auto it = std::find_if(report.claims.begin(), report.claims.end(),
                         [&](const ClaimVerdict& c) { return c.id == id; });
  if (it == report.claims.end()) {
    ADD_FAILURE() << "no claim " << id;
    static const ClaimVerdict kNone;
    return kNone;
  }
  return *it;
}

// True when some reason sentence of `d` contains `words`.
inline bool SaysSomewhere(const DeliveryReport& d, const std::string& words) {
  return std::any_of(d.reasons.begin(), d.reasons.end(), [&](const std::string& reason) {
    return reason.find(words) != std::string::npos;
  });
}

inline bool Supported(const AuditReport& report, const std::string& claim) {
  return ClaimById(report, claim).verdict == Verdict::kSupported;
}

}  // namespace writ::audit::testing
