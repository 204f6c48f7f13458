// Rule 15: unknown fields are skipped, not judged; nesting and integer range are bounded.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

std::string Message(const std::string& text) {
  const auto bundle = ParseBundle(text);
  return bundle.ok() ? "(accepted)" : bundle.status().message();
}

// A bundle whose unknown field nests so that `levels` containers are open at its deepest,
// the bundle's own object included.
std::string Nested(std::size_t levels) {
  return R"({"schema":"writ.evidence/1","vendor":)" + std::string(levels - 1, '[') +
         std::string(levels - 1, ']') + "}";
}

TEST(Rule15UnknownFields, DeepVendorFieldsWithRepeatedKeysAreSkipped) {
  const auto bundle = ParseBundle(ReadText(BundlePath("rule15/vendor-fields.json")));
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  const AuditReport report = Audit(*bundle);
  EXPECT_EQ(DeliveryById(report, "V-1").transport, TransportState::kEstablished);
  EXPECT_EQ(bundle->context.transport, Transport::kIwarp);
}

TEST(Rule15UnknownFields, NestingUpTo512IsAcceptedAndDeeperIsMalformed) {
  EXPECT_EQ(Message(Nested(512)), "(accepted)");
  EXPECT_NE(Message(Nested(513)).find("nesting deeper than 512"), std::string::npos)
      << Message(Nested(513));
}

TEST(Rule15UnknownFields, DeepNestingInADefinedFieldIsMalformedToo) {
  const std::string text = R"({"schema":"writ.evidence/1","claims":[{"id":"c","kind":"x","t":)" +
                           std::string(600, '[') + std::string(600, ']') + "}]}";
  EXPECT_NE(Message(text).find("nesting deeper than 512"), std::string::npos);
}

TEST(Rule15UnknownFields, AnIntegerPast64BitsIsOutOfRange) {
  for (const char* name : {"rule15/huge-count.json", "rule15/huge-wr-id.json"}) {
    const std::string message = Message(ReadText(BundlePath(name)));
    EXPECT_NE(message.find("out of range"), std::string::npos) << name << ": " << message;
  }
  EXPECT_NE(Message(ReadText(BundlePath("rule15/huge-count.json"))).find("deliveries[0].bytes: "),
            std::string::npos);
}

TEST(Rule15UnknownFields, AHugeIntegerInAnUnknownFieldIsNotJudged) {
  EXPECT_EQ(Message(ReadText(BundlePath("rule15/huge-unknown-field.json"))), "(accepted)");
}

TEST(Rule15UnknownFields, RepeatedKeysInDefinedObjectsStayMalformed) {
  EXPECT_EQ(Message(ReadText(BundlePath("rule15/duplicate-defined-key.json"))),
            "context.transport: duplicate key");
}

}  // namespace
}  // namespace writ::audit::testing
