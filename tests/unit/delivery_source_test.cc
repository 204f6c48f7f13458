// DeliverySource's digest pass: the same digest whichever path reads the file (one
// thread for small files, a reader thread handing blocks over for large ones), and a
// file that ends before its announced size is an error, not a digest.
#include "sender/delivery_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "random_bytes.h"
#include "sender/mapping_guard.h"
#include "temp_dir.h"
#include "vocabulary/digest.h"

namespace writ::sender {
namespace {

// A file holding `bytes`, in its own temporary directory.
class TempFile {
 public:
  explicit TempFile(const std::vector<uint8_t>& bytes)
      : dir_("writ-source"), path_(dir_.File("source")) {
    std::ofstream out(path_, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(out.good()) << "writing " << path_;
  }
  const std::string& path() const { return path_; }

 private:
  writ::testing::TempDir dir_;
  std::string path_;
};

std::vector<uint8_t> RandomBytes(size_t n) { return writ::testing::RandomBytes(n, n); }

std::vector<uint8_t> DigestOf(const std::vector<uint8_t>& bytes, Rule rule) {
  auto digester = vocabulary::Digester::Create(rule);
  EXPECT_TRUE(digester.ok());
  (*digester)->Update(bytes);
  return (*digester)->Finish();
}

TEST(DeliverySource, TheDigestPassMatchesADigestOfTheBytesAtEverySize) {
  // Around the pipelined pass's threshold (4 blocks of 2 MiB) and its block edges.
  for (size_t n : {size_t{0}, size_t{1}, size_t{256} << 10, (size_t{8} << 20),
                   (size_t{8} << 20) + 1, (size_t{21} << 20) + 4095}) {
    const auto bytes = RandomBytes(n);
    TempFile file(bytes);
    auto source = DeliverySource::Open(file.path());
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    for (Rule rule : {Rule::kXxh3_128, Rule::kCrc32c}) {
      auto digest = source->Digest(rule);
      ASSERT_TRUE(digest.ok()) << digest.status().ToString();
      EXPECT_EQ(*digest, DigestOf(bytes, rule)) << n << " bytes";
    }
  }
}

TEST(DeliverySource, AFileThatShrankIsAnErrorNotADigest) {
  TempFile file(RandomBytes(size_t{20} << 20));
  auto source = DeliverySource::Open(file.path());
  ASSERT_TRUE(source.ok());
  ASSERT_EQ(truncate(file.path().c_str(), 11 << 20), 0);  // after Open took its size
  auto digest = source->Digest(Rule::kXxh3_128);
  ASSERT_FALSE(digest.ok());
  EXPECT_NE(digest.status().message().find("shrank"), std::string::npos)
      << digest.status().ToString();
}

// Folding a mapped file reads the mapping (no second copy by pread): the same digest at any
// split, and a file truncated after the mapping is an error naming it, not a SIGBUS.
TEST(DeliverySource, FoldingAMappedFileMatchesADigestOfTheBytesAtAnySplit) {
  ASSERT_TRUE(MappingGuardReady()) << "writ's SIGBUS handler could not be installed";
  const auto bytes = RandomBytes((size_t{3} << 20) + 4097);
  TempFile file(bytes);
  auto source = DeliverySource::Open(file.path());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  ASSERT_TRUE(source->Map().ok());
  ASSERT_FALSE(source->mapped().empty());
  for (const uint64_t piece : {uint64_t{1} << 20, uint64_t{4099}, uint64_t{bytes.size()}}) {
    auto digester = vocabulary::Digester::Create(Rule::kXxh3_128);
    ASSERT_TRUE(digester.ok());
    for (uint64_t at = 0; at < bytes.size(); at += piece) {
      const uint64_t n = std::min<uint64_t>(piece, bytes.size() - at);
      ASSERT_TRUE(source->Fold(**digester, at, n).ok()) << "piece " << piece;
    }
    EXPECT_EQ((*digester)->Finish(), DigestOf(bytes, Rule::kXxh3_128)) << "piece " << piece;
  }
}

TEST(DeliverySource, FoldingAMappedFileThatShrankIsAnErrorNotASigbus) {
  TempFile file(RandomBytes(size_t{2} << 20));
  auto source = DeliverySource::Open(file.path());
  ASSERT_TRUE(source.ok());
  ASSERT_TRUE(source->Map().ok());
  ASSERT_EQ(truncate(file.path().c_str(), 1 << 20), 0);  // after the mapping
  auto digester = vocabulary::Digester::Create(Rule::kXxh3_128);
  ASSERT_TRUE(digester.ok());
  EXPECT_TRUE(source->Fold(**digester, 0, 1 << 20).ok()) << "the bytes still in the file";
  const Status past_end = source->Fold(**digester, 1 << 20, 1 << 20);
  ASSERT_FALSE(past_end.ok());
  EXPECT_EQ(past_end.code(), ErrorCode::kIo) << past_end.ToString();
  EXPECT_NE(past_end.message().find("shrank while it was being sent"), std::string::npos)
      << past_end.ToString();
  // The guard is per read: the next read of the same shrunken mapping fails the same way.
  EXPECT_FALSE(source->Fold(**digester, (1 << 20) + 4096, 4096).ok());
}

// Only guarded reads are caught: any other SIGBUS still ends the process as before.
TEST(DeliverySourceDeathTest, ASigbusOutsideAGuardedReadIsNotSwallowed) {
  ASSERT_TRUE(MappingGuardReady());
  TempFile file(RandomBytes(size_t{64} << 10));
  auto source = DeliverySource::Open(file.path());
  ASSERT_TRUE(source.ok());
  ASSERT_TRUE(source->Map().ok());
  ASSERT_EQ(truncate(file.path().c_str(), 0), 0);
  const uint8_t* past_end = source->mapped().data() + 8192;
  EXPECT_DEATH(
      {
        volatile uint8_t byte = *past_end;  // unguarded: SIGBUS
        (void)byte;
        std::_Exit(0);
      },
      "");
}

}  // namespace
}  // namespace writ::sender
