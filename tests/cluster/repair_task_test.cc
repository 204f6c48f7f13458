// The repair task and result as they travel through etcd (cluster/repair_task.h): what a
// holder's serve accepts from a key anyone with etcd access may write.
#include "cluster/repair_task.h"

#include <gtest/gtest.h>

namespace writ::cluster {
namespace {

TEST(RepairTask, RoundTripsAndItsKeysHoldAnyIdAsHex) {
  const RepairTask task{"ckpt/step 7", 3, "process-restart"};
  auto back = RepairTaskFromJson(RepairTaskToJson(task));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->id, task.id);
  EXPECT_EQ(back->k, 3u);
  EXPECT_EQ(back->replica_retention, "process-restart");
  EXPECT_EQ(RepairTaskKey("abcd", "a/b"), "/writ/repair/tasks/abcd/612f62");
  EXPECT_EQ(RepairTaskKey("abcd", "a/b").rfind(RepairTasksFor("abcd"), 0), 0u);
  EXPECT_EQ(RepairResultKey("abcd", "a/b"), "/writ/repair/results/abcd/612f62");
}

TEST(RepairTask, RefusesWhatIsNotATaskNamingWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "not a JSON object"},
      {R"({"k":2,"replica_retention":"power-loss"})", "no delivery id"},
      {R"({"id":"","k":2,"replica_retention":"power-loss"})", "no delivery id"},
      {R"({"id":"x","k":0,"replica_retention":"power-loss"})", "k must be 1 to 16"},
      {R"({"id":"x","k":17,"replica_retention":"power-loss"})", "k must be 1 to 16"},
      {R"({"id":"x","k":-1,"replica_retention":"power-loss"})", "k must be 1 to 16"},
      {R"({"id":"x","k":2})", "no replica_retention"},
  };
  for (const auto& [text, why] : cases) {
    auto task = RepairTaskFromJson(text);
    ASSERT_FALSE(task.ok()) << text;
    EXPECT_EQ(task.status().code(), ErrorCode::kMalformed) << text;
    EXPECT_NE(task.status().message().find(why), std::string::npos) << task.status().message();
  }
}

TEST(RepairResult, RoundTripsAndNeedsItsVerdict) {
  const RepairResult result{false, "1 of 2 copies counted", {"x: 127.0.0.2:1 (domain a): absent"}};
  auto back = RepairResultFromJson(RepairResultToJson(result));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->ok);
  EXPECT_EQ(back->error, result.error);
  EXPECT_EQ(back->lines, result.lines);
  EXPECT_FALSE(RepairResultFromJson(R"({"lines":[]})").ok());
}

}  // namespace
}  // namespace writ::cluster
