// The sender's digest cache (src/sender/digest_cache.h): an entry answers only for the
// exact file version and rule it was recorded for; a missing, corrupt or unwritable cache
// is an empty one; the file keeps the most recent entries only. And the one-pass fold of a
// file equals the whole-file digest whatever the chunking.
#include "sender/digest_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "random_bytes.h"
#include "temp_dir.h"
#include "vocabulary/digest.h"

namespace writ::sender {
namespace {

const FileKey kKey{1, 2, 3, 4, 5};
const std::vector<uint8_t> kDigest(16, 0xab);

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(DigestCache, AnswersOnlyForTheSameFileVersionAndRule) {
  writ::testing::TempDir dir("writ-cache");
  DigestCache cache(dir.File("digest-cache"));
  EXPECT_FALSE(cache.Find(kKey, Rule::kXxh3_128)) << "a missing cache is empty";
  ASSERT_TRUE(cache.Remember(kKey, Rule::kXxh3_128, kDigest).ok());
  EXPECT_EQ(cache.Find(kKey, Rule::kXxh3_128), kDigest);
  EXPECT_FALSE(cache.Find(kKey, Rule::kSha256));
  // Any field of the key changed: another version of the file, never the stale entry.
  for (int field = 0; field < 5; ++field) {
    FileKey changed = kKey;
    if (field == 0) ++changed.device;
    if (field == 1) ++changed.inode;
    if (field == 2) ++changed.size;
    if (field == 3) ++changed.mtime_ns;
    if (field == 4) ++changed.ctime_ns;
    EXPECT_FALSE(cache.Find(changed, Rule::kXxh3_128)) << "field " << field;
  }
  // A new version of the same file replaces the old entry.
  FileKey touched = kKey;
  touched.ctime_ns += 1000;
  ASSERT_TRUE(cache.Remember(touched, Rule::kXxh3_128, std::vector<uint8_t>(16, 0xcd)).ok());
  EXPECT_FALSE(cache.Find(kKey, Rule::kXxh3_128));
  EXPECT_EQ(cache.Find(touched, Rule::kXxh3_128), std::vector<uint8_t>(16, 0xcd));
  ASSERT_TRUE(cache.Forget(touched, Rule::kXxh3_128).ok());
  EXPECT_FALSE(cache.Find(touched, Rule::kXxh3_128));
}

TEST(DigestCache, ACorruptCacheIsIgnoredAndRewritten) {
  writ::testing::TempDir dir("writ-cache");
  const std::string path = dir.File("digest-cache");
  DigestCache cache(path);
  ASSERT_TRUE(cache.Remember(kKey, Rule::kXxh3_128, kDigest).ok());
  const std::string good = ReadText(path);
  for (const std::string& bad :
       {std::string("garbage\n"), std::string(""), good.substr(0, good.size() - 7),
        good + "1 2 3 4 5 zz xxh3-128\n", good + "1 2 3 4 5 abab xxh3-128\n",
        good + "1 2 3 4 5 " + std::string(32, 'a') + " no-such-rule\n",
        std::string("\x00\xff\x01", 3)}) {
    WriteText(path, bad);
    EXPECT_FALSE(cache.Find(kKey, Rule::kXxh3_128)) << "cache text: " << bad;
    ASSERT_TRUE(cache.Remember(kKey, Rule::kXxh3_128, kDigest).ok());
    EXPECT_EQ(ReadText(path), good) << "rewritten whole";
  }
  WriteText(path, good);
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  if (ReadText(path).empty()) {  // not readable (not root): an empty cache, not an error
    EXPECT_FALSE(cache.Find(kKey, Rule::kXxh3_128));
  }
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  DigestCache nowhere(dir.File("no-such-dir/digest-cache"));
  EXPECT_FALSE(nowhere.Find(kKey, Rule::kXxh3_128));
  EXPECT_FALSE(nowhere.Remember(kKey, Rule::kXxh3_128, kDigest).ok())
      << "the caller ignores it: a cache never fails a send";
}

TEST(DigestCache, KeepsTheMostRecentEntriesOnly) {
  writ::testing::TempDir dir("writ-cache");
  DigestCache cache(dir.File("digest-cache"), 4);
  for (uint64_t inode = 1; inode <= 6; ++inode) {
    ASSERT_TRUE(cache.Remember(FileKey{1, inode, 3, 4, 5}, Rule::kCrc32c, {0, 0, 0, 1}).ok());
  }
  EXPECT_FALSE(cache.Find(FileKey{1, 1, 3, 4, 5}, Rule::kCrc32c));
  EXPECT_FALSE(cache.Find(FileKey{1, 2, 3, 4, 5}, Rule::kCrc32c));
  for (uint64_t inode = 3; inode <= 6; ++inode) {
    EXPECT_TRUE(cache.Find(FileKey{1, inode, 3, 4, 5}, Rule::kCrc32c)) << inode;
  }
}

TEST(DigestCache, OnlyAFileOlderThanTheCoarseClockTicksIsCached) {
  const int64_t now = RealtimeNowNs();
  EXPECT_FALSE(OldEnoughToCache(FileKey{1, 2, 3, now, now}, now));
  EXPECT_FALSE(OldEnoughToCache(FileKey{1, 2, 3, now - 1000000000, now}, now));
  EXPECT_TRUE(OldEnoughToCache(FileKey{1, 2, 3, now - 1000000000, now - 1000000000}, now));
}

TEST(DeliverySourceFold, ChunkByChunkEqualsTheWholeFileDigest) {
  writ::testing::TempDir dir("writ-fold");
  const std::string path = dir.File("source");
  const std::vector<uint8_t> bytes = writ::testing::RandomBytes(7, (1 << 20) + 12345);
  WriteText(path, std::string(bytes.begin(), bytes.end()));
  auto source = DeliverySource::Open(path);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  ASSERT_TRUE(source->file_key().has_value());
  EXPECT_EQ(source->CurrentKey().value(), *source->file_key());
  for (Rule rule : {Rule::kXxh3_128, Rule::kCrc32c, Rule::kSha256}) {
    const std::vector<uint8_t> whole = source->Digest(rule).value();
    for (uint64_t chunk : {uint64_t{1} << 20, uint64_t{4099}, uint64_t{300} << 10}) {
      auto digester = vocabulary::Digester::Create(rule).value();
      for (uint64_t at = 0; at < bytes.size(); at += chunk) {
        ASSERT_TRUE(source->Fold(*digester, at, std::min<uint64_t>(chunk, bytes.size() - at)).ok());
      }
      EXPECT_EQ(digester->Finish(), whole) << "chunks of " << chunk;
    }
  }
}

}  // namespace
}  // namespace writ::sender
