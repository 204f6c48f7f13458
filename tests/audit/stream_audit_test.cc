// AuditStream (the audit as the bundle streams in, issue 18) says exactly what
// Audit(ParseBundle(text)) says: the same report, or the same error.
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "audit_test_util.h"
#include "synthetic_bundle.h"

namespace writ::audit::testing {
namespace {

std::vector<std::string> AllBundleFiles() {
  std::vector<std::string> files;
  for (const char* root : {WRIT_AUDIT_BUNDLES, WRIT_AUDIT_EXAMPLES})
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
      if (entry.is_regular_file() && entry.path().extension() == ".json")
        files.push_back(entry.path().string());
  return files;
}

// Compares both paths on `text`; `what` names it in failures.
void ExpectSameAnswer(const std::string& text, const std::string& what) {
  const auto typed = ParseBundle(text);
  std::istringstream in(text);
  const auto streamed = AuditStream(in);
  ASSERT_EQ(typed.ok(), streamed.ok()) << what << ": " << streamed.status().ToString();
  if (!typed.ok()) {
    EXPECT_EQ(typed.status().ToString(), streamed.status().ToString()) << what;
    return;
  }
  const AuditReport report = Audit(*typed);
  EXPECT_EQ(ReportToJson(report), ReportToJson(*streamed)) << what;
  EXPECT_EQ(ReportToText(report), ReportToText(*streamed)) << what;
}

TEST(StreamAudit, EveryTestBundleGivesTheSameReportOrError) {
  const std::vector<std::string> files = AllBundleFiles();
  ASSERT_GT(files.size(), 50u);
  for (const std::string& file : files) ExpectSameAnswer(ReadText(file), file);
}

TEST(StreamAudit, ErrorRecordsInterleavedWithSuccessesKeepTheFirstErrorOfEachId) {
  const std::string text = R"({"schema":"writ.evidence/1",
    "deliveries":[{"id":"D","bytes":2,"portions":[{"wr_id":"a","bytes":1},{"wr_id":"b","bytes":1}]}],
    "work_completions":[
      {"wr_id":"a","status":"success"},
      {"wr_id":"b","status":"remote_access_error","qp_num":3,"vendor_err":81},
      {"wr_id":"b","status":"success"},
      {"wr_id":"b","status":"retry_exceeded","qp_num":4},
      {"wr_id":"a","status":"local_length_error"}]})";
  ExpectSameAnswer(text, "interleaved");
  std::istringstream in(text);
  const auto report = AuditStream(in);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->records, 5u);
  EXPECT_EQ(report->successful, 2u);
  EXPECT_EQ(report->failed, 3u);
}

TEST(StreamAudit, ALargeBundleGivesTheSameReport) {
  ExpectSameAnswer(SyntheticBundle(200, 50), "synthetic 200 x 50");
}

}  // namespace
}  // namespace writ::audit::testing
