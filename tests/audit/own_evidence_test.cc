// writ's own evidence (writ send --evidence): written through the typed bundle,
// it states `medium` and `portion`, so its audit leaves no question (issue 18).
#include <nlohmann/json.hpp>

#include "audit_test_util.h"
#include "writ/sender.h"

namespace writ::audit::testing {
namespace {

constexpr uint64_t kChunk = 8ull << 20;

Receipt ReceiptAt(ReceiptRung rung) {
  Receipt r;
  r.rung = rung;
  r.issuer = "writ-serve@127.0.0.1:7000";
  return r;
}

// What `writ demo` ends with: RC-233 in three chunks, validated, retained volatile.
DeliveryOutcome Rc233(const std::string& retention, const std::string& survives) {
  DeliveryOutcome o;
  o.delivery = DeliveryRef{"RC-233", 3 * kChunk, "xxh3-128", "00", 3, kChunk};
  o.context = ReceiptContext{"rdma_write_with_imm",
                             "tcp",
                             "tcp;ofi_rxm",
                             "lo",
                             "dram",
                             "writ 0.1.0; libfabric 1.17",
                             "delivery",
                             {}};
  for (uint64_t c = 0; c < 3; ++c) {
    o.work_completions.push_back(WorkCompletionRecord{10 + c, c, 1, true, "success", 7, {}, ""});
    o.portion_request_ids.push_back(10 + c);
  }
  Receipt validated = ReceiptAt(ReceiptRung::kValidated);
  validated.rule_passed = "xxh3-128 of the complete delivery";
  Receipt retained = ReceiptAt(ReceiptRung::kRetained);
  retained.retention = writ::RetentionPromise{retention, "held", survives, "readable", "memfd"};
  o.receipts = {ReceiptAt(ReceiptRung::kTransport), ReceiptAt(ReceiptRung::kReceived), validated,
                retained};
  return o;
}

TEST(OwnEvidence, Rc233AuditsWithNoQuestionAndEveryClaimSupported) {
  for (const auto& [retention, survives] :
       {std::pair{"volatile", "process-running"}, std::pair{"power-loss", "power-loss"}}) {
    auto bundle = ParseBundle(OutcomeToEvidenceBundle(Rc233(retention, survives)));
    ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
    const AuditReport report = Audit(*bundle);
    EXPECT_EQ(report.questions, std::vector<std::string>{}) << retention;
    EXPECT_TRUE(report.unattributed.empty());
    for (const ClaimVerdict& c : report.claims)
      EXPECT_EQ(c.verdict, Verdict::kSupported) << c.id << ": " << c.reason;
    const DeliveryReport& d = DeliveryById(report, "RC-233");
    EXPECT_EQ(d.transport, TransportState::kEstablished);
    EXPECT_EQ(d.placement, PlacementState::kObserved);
    EXPECT_EQ(d.notification, NotificationState::kEstablished);
    EXPECT_EQ(d.validation, ValidationState::kEstablished);
    EXPECT_EQ(d.retention.ToString(), survives);
  }
}

TEST(OwnEvidence, EveryPromiseStatesItsMediumAndEveryNotificationItsPortion) {
  auto bundle = ParseBundle(OutcomeToEvidenceBundle(Rc233("volatile", "process-running")));
  ASSERT_TRUE(bundle.ok());
  ASSERT_EQ(bundle->retention_promises.size(), 1u);
  EXPECT_EQ(bundle->retention_promises[0].medium, Medium::kDram);
  ASSERT_EQ(bundle->notifications.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(bundle->notifications[i].portion, bundle->deliveries[0].portions[i].wr_id);
  auto durable = ParseBundle(OutcomeToEvidenceBundle(Rc233("power-loss", "power-loss")));
  ASSERT_TRUE(durable.ok());
  EXPECT_EQ(durable->retention_promises[0].medium, Medium::kDisk);
}

TEST(OwnEvidence, TheSerializerWritesWhatTheParserReads) {
  for (const char* name : {"rule11/parts.json", "rule12/failed.json", "rule13/volatile.json",
                           "rule14/unattributed.json", "rule8/delivery-claims.json"}) {
    const std::string once = BundleToJson(LoadBundle(name));
    auto again = ParseBundle(once);
    ASSERT_TRUE(again.ok()) << name << ": " << again.status().ToString();
    EXPECT_EQ(BundleToJson(*again), once) << name;
    EXPECT_EQ(ReportToJson(Audit(*again)), ReportToJson(AuditBundle(name))) << name;
  }
}

}  // namespace
}  // namespace writ::audit::testing
