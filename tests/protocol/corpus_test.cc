#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "seed_corpus.h"

namespace writ::protocol {
namespace {

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The checked-in seeds are what the current encoder writes, so a format
// change cannot silently leave the fuzzer starting from stale frames.
TEST(SeedCorpus, FilesMatchTheEncoder) {
  for (const auto& [name, bytes] : testing::SeedCorpus()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(ReadFile(std::string(WRIT_PROTOCOL_CORPUS_DIR) + "/" + name), bytes)
        << "regenerate with: protocol_seed_writer fuzz/corpus/protocol_fuzzer";
    auto decoded = DecodeFrame(bytes, Limits{});
    if (name.rfind("valid-", 0) == 0) {
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      EXPECT_EQ(Encode(*decoded), bytes);
    } else {
      EXPECT_FALSE(decoded.ok());
    }
  }
}

}  // namespace
}  // namespace writ::protocol
