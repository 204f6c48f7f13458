// The report's two forms: the writ.audit/1 JSON document and the human text.
#include <nlohmann/json.hpp>

#include "audit_test_util.h"
#include "synthetic_bundle.h"

namespace writ::audit::testing {
namespace {

using nlohmann::json;

TEST(ReportJson, HasTheContractFieldsInTheContractOrder) {
  const json doc = json::parse(ReportToJson(AuditBundle("rule1/error-record.json")));
  EXPECT_EQ(doc["schema"], "writ.audit/1");
  const nlohmann::ordered_json ordered =
      nlohmann::ordered_json::parse(ReportToJson(AuditBundle("rule1/error-record.json")));
  std::vector<std::string> keys;
  for (const auto& [key, value] : ordered.items()) keys.push_back(key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"schema", "records", "successful", "failed",
                                      "logical_deliveries", "placed_bytes", "deliveries", "claims",
                                      "missing_context", "unattributed", "questions"}));
  const json& d = doc["deliveries"][0];
  for (const char* key : {"id", "bytes", "portions", "transport", "placement", "notification",
                          "validation", "processing", "retention", "reasons"})
    EXPECT_TRUE(d.contains(key)) << key;
  EXPECT_EQ(d["transport"], "failed");
  EXPECT_EQ(d["placement"], "not_established");
}

TEST(ReportJson, KeepsTheBundleOrderAndIsDeterministic) {
  const std::string text = ReadText(BundlePath("rule8/retention-claims.json"));
  const std::string first = ReportToJson(Audit(*ParseBundle(text)));
  EXPECT_EQ(first, ReportToJson(Audit(*ParseBundle(text))));
  const json doc = json::parse(first);
  std::vector<std::string> ids;
  for (const auto& d : doc["deliveries"]) ids.push_back(d["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"running", "restart", "power", "replicated"}));
  EXPECT_EQ(doc["claims"][0]["id"], "durable-running");
  EXPECT_EQ(doc["claims"].back()["id"], "copies-power");
}

TEST(ReportJson, EveryClaimHasAReason) {
  const json doc = json::parse(ReportToJson(AuditBundle("rule8/delivery-claims.json")));
  for (const auto& c : doc["claims"]) {
    EXPECT_TRUE(c["verdict"] == "supported" || c["verdict"] == "not_supported");
    EXPECT_FALSE(c["reason"].get<std::string>().empty());
    EXPECT_EQ(c.size(), 3u);
  }
}

TEST(ReportText, AsksAboutEveryMissingContextFieldAndUnsupportedClaim) {
  const std::string text = ReportToText(AuditBundle("rule4/notification-only.json"));
  EXPECT_NE(text.find("Which completion level does this success record guarantee?"),
            std::string::npos);
  EXPECT_NE(text.find("Which device"), std::string::npos);
  EXPECT_NE(text.find("n2 \"the receiver got it, so it is good\": NOT SUPPORTED"),
            std::string::npos);
  EXPECT_NE(text.find("  - Which acknowledgement names delivery \"RC-233\""), std::string::npos);
  EXPECT_NE(text.find("Delivery \"RC-233\": 4,096 bytes in 1 portion"), std::string::npos);
}

TEST(ReportText, ShowsSupplierStringsWithoutTerminalControls) {
  AuditReport report;
  DeliveryReport d;
  d.id = "evil\x1b[2J\xe2\x80\xaeid";
  report.deliveries.push_back(d);
  const std::string text = ReportToText(report);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("evil\\x1b[2J\\u202eid"), std::string::npos);
}

TEST(ReportText, CanSumUpTheDeliveriesPastALimit) {
  const AuditReport report = Audit(*ParseBundle(SyntheticBundle(5, 2)));
  TextOptions options;
  options.max_deliveries = 2;
  const std::string text = ReportToText(report, options);
  EXPECT_NE(text.find("Delivery \"D-1\""), std::string::npos);
  EXPECT_EQ(text.find("Delivery \"D-2\""), std::string::npos);
  EXPECT_NE(text.find("... and 3 more deliveries: 3 with transport established, 3 placed"),
            std::string::npos);
}

TEST(ReportText, EveryMissingContextFieldHasItsOwnQuestion) {
  for (const char* field :
       {"operation", "transport", "device", "memory_type", "software_release", "completion_level"})
    EXPECT_NE(MissingContextQuestion(field), MissingContextQuestion("nonsense")) << field;
}

}  // namespace
}  // namespace writ::audit::testing
