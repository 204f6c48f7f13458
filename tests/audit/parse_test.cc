// ParseBundle: strict typed validation; the error names the path of the first bad field.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

struct MalformedCase {
  const char* bundle;
  const char* message;  // the whole message, or its start when it ends in "..."
};

class MalformedBundles : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedBundles, AreRejectedNamingTheFirstBadField) {
  const MalformedCase& c = GetParam();
  auto bundle = ParseBundle(ReadText(BundlePath(std::string("malformed/") + c.bundle)));
  ASSERT_FALSE(bundle.ok()) << c.bundle;
  EXPECT_EQ(bundle.status().code(), ErrorCode::kMalformed);
  std::string expected = c.message;
  if (expected.ends_with("...")) {
    expected.resize(expected.size() - 3);
    EXPECT_EQ(bundle.status().message().substr(0, expected.size()), expected);
  } else {
    EXPECT_EQ(bundle.status().message(), expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Contract, MalformedBundles,
    ::testing::Values(
        MalformedCase{"truncated.json", "invalid JSON: parse error at line 1, column 48: ..."},
        MalformedCase{"not-an-object.json", "bundle: expected a JSON object"},
        MalformedCase{"no-schema.json", "schema: missing (expected \"writ.evidence/1\")"},
        MalformedCase{"wrong-schema.json",
                      "schema: expected \"writ.evidence/1\", got \"writ.evidence/2\""},
        MalformedCase{"null-schema.json", "schema: expected \"writ.evidence/1\", got null"},
        MalformedCase{"portion-bytes-string.json",
                      "deliveries[0].portions[2].bytes: expected integer"},
        MalformedCase{"portion-without-wr-id.json", "deliveries[0].portions[1].wr_id: missing"},
        MalformedCase{"portion-empty-wr-id.json",
                      "deliveries[0].portions[0].wr_id: expected a non-empty string"},
        MalformedCase{"duplicate-delivery-id.json",
                      "deliveries[1].id: duplicate delivery id \"RC-233\""},
        MalformedCase{"duplicate-key.json", "work_completions[0].status: duplicate key"},
        MalformedCase{"success-byte-len-string.json",
                      "work_completions[1].byte_len: expected integer"},
        MalformedCase{"negative-wr-id.json",
                      "work_completions[0].wr_id: expected string or non-negative integer"},
        MalformedCase{"record-without-status.json", "work_completions[0].status: missing"},
        MalformedCase{"negative-bytes.json", "deliveries[0].bytes: expected non-negative integer"},
        MalformedCase{"float-bytes.json", "deliveries[0].bytes: expected integer"},
        MalformedCase{"delivery-without-portions.json", "deliveries[0].portions: missing"},
        MalformedCase{"deliveries-not-array.json", "deliveries: expected array"},
        MalformedCase{"unknown-transport.json",
                      "context.transport: expected one of ib_rc, roce_rc, iwarp, tcp, shm, efa or "
                      "other or null"},
        MalformedCase{"context-not-object.json", "context: expected object"},
        MalformedCase{"placement-bad-basis.json",
                      "placement[0].basis: expected one of stipulated or observed"},
        MalformedCase{
            "ack-bad-result.json",
            "acknowledgements[0].result: expected one of validated, processed or failed or null"},
        MalformedCase{"bad-survives.json", "retention_promises[0].survives: expected ..."},
        MalformedCase{"replicated-zero.json", "retention_promises[0].survives: expected ..."},
        MalformedCase{"claim-without-count.json", "claims[0].count: missing"},
        MalformedCase{"claim-bad-survives.json", "claims[0].survives: expected ..."},
        MalformedCase{"claim-without-id.json", "claims[0].id: missing"},
        MalformedCase{"bytes-overflow.json",
                      "deliveries[1].bytes: the deliveries add up to more than 2^64-1 bytes"},
        MalformedCase{"portion-end-overflow.json",
                      "deliveries[0].portions[0]: offset + bytes exceeds 2^64-1"},
        MalformedCase{"portion-not-object.json", "deliveries[0].portions[0]: expected object"}),
    [](const ::testing::TestParamInfo<MalformedCase>& info) {
      std::string name = info.param.bundle;
      name.resize(name.size() - 5);  // ".json"
      for (char& c : name)
        if (c == '-') c = '_';
      return name;
    });

TEST(ParseBundle, UnknownFieldsAreIgnoredAndEmptyStringsStateNothing) {
  const EvidenceBundle bundle = LoadBundle("parse/unknown-fields.json");
  EXPECT_EQ(bundle.context.transport, Transport::kEfa);
  EXPECT_FALSE(bundle.context.device.has_value());  // ""
  ASSERT_EQ(bundle.claims.size(), 1u);
  EXPECT_EQ(bundle.claims[0].kind, ClaimKind::kPlaced);
  EXPECT_FALSE(bundle.claims[0].count.has_value());  // not read for this kind
  const AuditReport report = Audit(bundle);
  EXPECT_EQ(report.missing_context, std::vector<std::string>{"device"});
}

TEST(ParseBundle, ABundleWithOnlyASchemaIsEmptyAndStatesNoContext) {
  const AuditReport report = AuditBundle("parse/no-context.json");
  EXPECT_EQ(report.records, 0u);
  EXPECT_EQ(report.logical_deliveries, 0u);
  EXPECT_EQ(report.missing_context,
            (std::vector<std::string>{"operation", "transport", "device", "memory_type",
                                      "software_release", "completion_level"}));
}

TEST(ParseBundle, GarbageNeverThrows) {
  for (std::string_view text : {std::string_view(""), std::string_view("\xff\xfe"),
                                std::string_view("{\"schema\":\"writ.evidence/1\",\"a\":1e999}"),
                                std::string_view("{\"schema\":\"\\ud800\"}"),
                                std::string_view("nul\0l", 5), std::string_view("[[[[[[[[[[")}) {
    auto bundle = ParseBundle(text);
    EXPECT_FALSE(bundle.ok());
    EXPECT_EQ(bundle.status().code(), ErrorCode::kMalformed);
  }
}

TEST(ParseBundle, DeepNestingIsRefusedBeforeItCostsAnything) {
  const std::string deep = "{\"schema\":\"writ.evidence/1\",\"x\":" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  auto bundle = ParseBundle(deep);
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.status().message().find("nesting deeper than"), std::string::npos);
}

}  // namespace
}  // namespace writ::audit::testing

namespace writ::audit::testing {
namespace {

// The streaming overload (what `writ audit` uses) reads exactly what the text overload reads.
TEST(ParseBundle, FromAStreamIsTheSameAsFromText) {
  for (const char* name :
       {"rule14/unattributed.json", "rule15/vendor-fields.json", "malformed/duplicate-key.json",
        "rule15/huge-count.json", "malformed/truncated.json"}) {
    const std::string text = ReadText(BundlePath(name));
    std::istringstream stream(text);
    auto streamed = ParseBundle(stream);
    auto whole = ParseBundle(std::string_view(text));
    ASSERT_EQ(streamed.ok(), whole.ok()) << name;
    if (whole.ok())
      EXPECT_EQ(BundleToJson(*streamed), BundleToJson(*whole)) << name;
    else
      EXPECT_EQ(streamed.status().message(), whole.status().message()) << name;
  }
}

}  // namespace
}  // namespace writ::audit::testing
