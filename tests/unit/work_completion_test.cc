#include "fabric/work_completion.h"

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "fabric/fabric_error.h"

namespace writ::fabric {
namespace {

WorkCompletion ErrorRecord(uint64_t id) {
  return WorkCompletion::Error(id, 3, FI_ECANCELED, ProviderError{2, "No such file or directory"});
}

WorkCompletion WriteSuccess(uint64_t id) {
  return WorkCompletion::Success(
      id, 3, {Operation::kWrite, FI_RMA | FI_WRITE, std::nullopt, std::nullopt});
}

TEST(WorkCompletion, ErrorRecordExposesOnlyTheFourValidFields) {
  const WorkCompletion wc = ErrorRecord(42);
  EXPECT_FALSE(wc.ok());
  EXPECT_EQ(wc.request_id(), 42u);
  EXPECT_EQ(wc.endpoint(), 3u);
  EXPECT_EQ(wc.status().Name(), "FI_ECANCELED");
  ASSERT_TRUE(wc.provider_error().ok());
  EXPECT_EQ(wc.provider_error()->prov_errno, 2);

  EXPECT_EQ(wc.operation().status().code(), ErrorCode::kWrongRecord);
  EXPECT_EQ(wc.flags().status().code(), ErrorCode::kWrongRecord);
  EXPECT_EQ(wc.length().status().code(), ErrorCode::kWrongRecord);
  EXPECT_EQ(wc.remote_data().status().code(), ErrorCode::kWrongRecord);
  EXPECT_NE(wc.length().status().message().find("only request id, status, endpoint"),
            std::string::npos);
}

TEST(WorkCompletion, ErrorWithZeroErrnoIsStillAnError) {
  const WorkCompletion wc = WorkCompletion::Error(1, 0, 0, ProviderError{0, ""});
  EXPECT_FALSE(wc.ok());
  EXPECT_FALSE(wc.status().ok());
}

TEST(WorkCompletion, SuccessRecordHasNoProviderError) {
  const WorkCompletion wc = WriteSuccess(7);
  EXPECT_TRUE(wc.ok());
  EXPECT_EQ(wc.status().Name(), "success");
  EXPECT_EQ(*wc.operation(), Operation::kWrite);
  EXPECT_EQ(wc.provider_error().status().code(), ErrorCode::kWrongRecord);
}

TEST(WorkCompletion, UndefinedSuccessFieldsAreErrorsNotZeros) {
  const WorkCompletion write = WriteSuccess(7);
  EXPECT_EQ(write.length().status().code(), ErrorCode::kWrongRecord);
  EXPECT_EQ(write.remote_data().status().code(), ErrorCode::kWrongRecord);

  const WorkCompletion notified = WorkCompletion::Success(
      UINT64_MAX, 0,
      {Operation::kRemoteWrite, FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, std::nullopt, 233});
  ASSERT_TRUE(notified.remote_data().ok());
  EXPECT_EQ(*notified.remote_data(), 233u);
}

TEST(WorkCompletion, DescribeNeverPrintsUndefinedFields) {
  const std::string text = ErrorRecord(9).Describe();
  EXPECT_NE(text.find("FI_ECANCELED"), std::string::npos);
  EXPECT_EQ(text.find("len"), std::string::npos);
  EXPECT_EQ(text.find("data"), std::string::npos);
}

TEST(CompletionTally, CountsEachRecordByItsOwnStatus) {
  std::vector<WorkCompletion> batch = {WriteSuccess(1), ErrorRecord(2), WriteSuccess(3),
                                       ErrorRecord(4), ErrorRecord(5)};
  CompletionTally tally;
  for (const auto& wc : batch) tally.Add(wc);
  EXPECT_EQ(tally.records, 5u);
  EXPECT_EQ(tally.successes, 2u);
  EXPECT_EQ(tally.errors, 3u);
}

TEST(FabricStatus, KeepsProviderErrorAndText) {
  const Status s = FabricStatus(-FI_ECONNREFUSED, "fi_connect");
  EXPECT_EQ(s.code(), ErrorCode::kTransport);
  ASSERT_TRUE(s.fi_errno());
  EXPECT_EQ(*s.fi_errno(), FI_ECONNREFUSED);
  EXPECT_NE(s.message().find("fi_connect"), std::string::npos);
  EXPECT_NE(s.message().find("FI_ECONNREFUSED"), std::string::npos);
  EXPECT_EQ(FabricStatus(-FI_ENODATA, "fi_getinfo").code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace writ::fabric
