// The sender's digest cache may skip the pre-pass, never the proof (docs/security.md, "What
// the digest cache may skip"). A file written through a shared mapping keeps its size, mtime
// and ctime (the cache's key) while the mapping's page stays dirty and writable; the next
// send announced the old digest, the receiver answered from its store and `writ send` exited
// 0 with receipts for content the file no longer had.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;

struct Times {
  int64_t size = 0, mtime_ns = 0, ctime_ns = 0;
  bool operator==(const Times&) const = default;
};

Times TimesOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0);
  return {st.st_size, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
          st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec};
}

TEST(DigestCacheProof, AFileChangedThroughASharedMappingIsNeverAnsweredFromTheStore) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const std::string file = dir.File("mapped");
  WritePatternFile(file, 51, 256 << 10);
  const int fd = open(file.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto* bytes =
      static_cast<uint8_t*>(mmap(nullptr, 256 << 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(bytes, MAP_FAILED);
  bytes[100] ^= 1;  // the write fault stamps the times now; the page stays dirty and writable
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // older than the coarse clock

  auto serve = Serve::Start("tcp", {"--identity", dir.File("server")});
  ASSERT_TRUE(serve);
  auto send = [&](const std::string& id) {
    return RunWrit({"send", file, "--to", serve->address(), "--id", id, "--identity",
                    dir.File("sender"), "--json"});
  };
  CommandRun first = send("mapped");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(first.json.value("bytes_moved", false)) << first.out;
  const Times before = TimesOf(file);
  bytes[200] ^= 1;  // no fault: the key is unchanged, the content is not
  const bool key_unchanged = TimesOf(file) == before;
  munmap(bytes, 256 << 10);
  close(fd);
  if (!key_unchanged) {
    GTEST_SKIP() << "this file system stamped the mapped write: the cache's key changed";
  }
  CommandRun second = send("mapped");
  EXPECT_NE(second.exit_code, 0) << "receipts for content the file no longer has:\n" << second.out;
  EXPECT_NE((second.out + second.err).find("changed since its digest was cached"),
            std::string::npos)
      << second.out << second.err;
  for (const json& r : second.json.value("receipts", json::array())) {
    ADD_FAILURE() << "a receipt was handed on: " << r.dump();
  }
  // The entry is dropped: the file's next send computes its digest, and its bytes move and
  // validate (a stale cached digest would have them refused). Under another id: "mapped"
  // holds other content now, which a send under that id is refused as (conflicting id).
  CommandRun third = send("mapped-now");
  EXPECT_EQ(third.exit_code, 0) << third.err;
  EXPECT_TRUE(third.json.value("bytes_moved", false)) << third.out;
  EXPECT_EQ(serve->Stop(), 0);
}

}  // namespace
}  // namespace writ::testing
