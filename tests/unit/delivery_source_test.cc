// DeliverySource's digest pass: the same digest whichever path reads the file (one
// thread for small files, a reader thread handing blocks over for large ones), and a
// file that ends before its announced size is an error, not a digest.
#include "sender/delivery_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "random_bytes.h"
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

}  // namespace
}  // namespace writ::sender
