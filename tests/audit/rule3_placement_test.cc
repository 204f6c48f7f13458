// Rule 3: placement is never inferred from completions, on any transport;
// only a placement entry makes it stipulated or observed. On iwarp the report
// says a local completion may precede remote placement (RFC 5040).
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

struct TransportCase {
  const char* bundle;
  const char* says;
};

class Rule3Transports : public ::testing::TestWithParam<TransportCase> {};

TEST_P(Rule3Transports, CompletionsNeverEstablishPlacement) {
  const AuditReport report = AuditBundle(GetParam().bundle);
  const DeliveryReport& d = DeliveryById(report, "D-1");
  EXPECT_EQ(d.transport, TransportState::kEstablished);
  EXPECT_EQ(d.placement, PlacementState::kNotEstablished);
  EXPECT_EQ(report.placed_bytes, 0u);
  EXPECT_TRUE(SaysSomewhere(d, "placement is never inferred from completions"));
  EXPECT_TRUE(SaysSomewhere(d, GetParam().says)) << "expected a reason saying: " << GetParam().says;
  EXPECT_FALSE(Supported(report, "p1"));
}

INSTANTIATE_TEST_SUITE_P(
    EveryTransport, Rule3Transports,
    ::testing::Values(
        TransportCase{"rule3/iwarp.json",
                      "may precede placement of the data in the remote buffer (RFC 5040)"},
        TransportCase{"rule3/tcp.json",
                      "On tcp the Write is carried as messages over a TCP stream"},
        TransportCase{"rule3/shm.json", "On shm both ends share one host"},
        TransportCase{"rule3/efa.json", "On efa (SRD)"},
        TransportCase{"rule3/other.json", "The transport is \"other\""},
        TransportCase{"rule3/no-transport.json", "does not state the transport"},
        TransportCase{"rule3/delivery-complete-no-entry.json",
                      "yet placement is taken only from a placement entry"}));

TEST(Rule3Placement, ObservedOutranksStipulatedAndIwarpStillWarns) {
  const AuditReport report = AuditBundle("rule3/iwarp-observed.json");
  const DeliveryReport& d = DeliveryById(report, "D-1");
  EXPECT_EQ(d.placement, PlacementState::kObserved);
  EXPECT_EQ(report.placed_bytes, 4096u);
  EXPECT_TRUE(SaysSomewhere(d, "RFC 5040"));
  EXPECT_TRUE(Supported(report, "p1"));
}

TEST(Rule3Placement, StipulatedCountsAsPlacedAndSaysSo) {
  const AuditReport report = AuditBundle("rule2/error-plausible-byte-len.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.placement, PlacementState::kStipulated);
  EXPECT_TRUE(SaysSomewhere(d, "stipulated by the supplier, not observed"));
  EXPECT_EQ(report.placed_bytes, 25165824u);
}

}  // namespace
}  // namespace writ::audit::testing
