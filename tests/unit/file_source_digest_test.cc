// A file's delivery reads the file once: a zero-copy chunk is digested from the mapping the
// transport writes from (under mapping_guard.h's SIGBUS guard), a staged chunk from its
// staging slot as it is read. The digest equals a one-pass digest of the file whichever path
// and chunking, and a file truncated during the send fails the delivery without a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/hex.h"
#include "seam_rig.h"
#include "temp_dir.h"
#include "vocabulary/digest.h"

namespace writ::seam {
namespace {

std::string OnePassDigest(Rule rule, const std::vector<uint8_t>& bytes) {
  auto digester = vocabulary::Digester::Create(rule);
  EXPECT_TRUE(digester.ok());
  (*digester)->Update(bytes);
  return writ::ToHex((*digester)->Finish());
}

std::string WriteFile(const writ::testing::TempDir& dir, const std::vector<uint8_t>& bytes) {
  const std::string path = dir.File("source");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(out.good()) << "writing " << path;
  return path;
}

const char* PathName(SourcePath path) {
  return path == SourcePath::kStaging ? "staging" : "zero-copy";
}

TEST(FileSourceDigest, EqualsAOnePassDigestAtEverySizeAndChunkingOnBothPaths) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  writ::testing::TempDir dir("writ-file-digest");
  int n = 0;
  // Small even and odd chunks, and one over the 256 KiB pieces a staged chunk is folded in.
  for (const uint64_t chunk : {uint64_t{64} << 10, uint64_t{4099}, (uint64_t{1} << 20) + 3}) {
    for (const uint64_t size :
         {uint64_t{0}, uint64_t{1}, chunk - 1, chunk, chunk + 1, 3 * chunk, 5 * chunk + 7}) {
      const auto bytes = Pattern(static_cast<uint64_t>(n), size);
      const std::string path = WriteFile(dir, bytes);
      for (const Rule rule : {Rule::kXxh3_128, Rule::kSha256}) {
        for (const SourcePath source_path : {SourcePath::kStaging, SourcePath::kZeroCopy}) {
          DeliveryOptions options = SmallChunks("file-" + std::to_string(n++), chunk);
          options.rule = rule;
          options.source = source_path;
          const std::string what = std::string(RuleName(rule)) + ", " + std::to_string(size) +
                                   " bytes in chunks of " + std::to_string(chunk) + ", " +
                                   PathName(source_path);
          auto source = sender::DeliverySource::Open(path);
          ASSERT_TRUE(source.ok()) << what << ": " << source.status().ToString();
          const DeliveryOutcome out = rig.Deliver(std::move(source).value(), options);
          ASSERT_TRUE(out.status.ok()) << what << ": " << out.status.ToString();
          if (size > 0) {
            EXPECT_EQ(out.source_path, PathName(source_path)) << what;
          }
          EXPECT_EQ(out.digest_source, "computed") << what;
          EXPECT_EQ(out.delivery.digest, OnePassDigest(rule, bytes)) << what;
          ASSERT_FALSE(out.receipts.empty()) << what;
          EXPECT_EQ(out.receipts.back().delivery.digest, out.delivery.digest) << what;
        }
      }
    }
  }
}

TEST(FileSourceDigest, AFileTruncatedDuringTheSendFailsTheDeliveryWithoutACrash) {
  for (const SourcePath source_path : {SourcePath::kZeroCopy, SourcePath::kStaging}) {
    SeamRig rig("tcp");
    SEAM_START(rig);
    ASSERT_TRUE(rig.Connect(2).ok());
    writ::testing::TempDir dir("writ-file-truncated");
    const std::string path = WriteFile(dir, Pattern(7, 64 * (64 << 10)));
    auto source = sender::DeliverySource::Open(path);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    DeliveryOptions options = SmallChunks(std::string("truncated-") + PathName(source_path));
    options.source = source_path;
    bool truncated = false;
    options.progress = [&](uint64_t, uint64_t) {  // after the first chunk landed
      if (!truncated) truncated = truncate(path.c_str(), 0) == 0;
    };
    const DeliveryOutcome out = rig.Deliver(std::move(source).value(), options);
    ASSERT_TRUE(truncated) << PathName(source_path);
    EXPECT_EQ(out.source_path, PathName(source_path));
    ASSERT_FALSE(out.status.ok()) << PathName(source_path);
    // writ's own read names the shrunken file; so does a write that failed first because the
    // transport read a truncated page (tcp: EFAULT in the kernel).
    EXPECT_NE(out.status.message().find("the delivery's file shrank while it was being sent"),
              std::string::npos)
        << PathName(source_path) << ": " << out.status.ToString();
  }
}

}  // namespace
}  // namespace writ::seam
