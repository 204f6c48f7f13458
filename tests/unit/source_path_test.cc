#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "fabric/provider.h"
#include "sender/delivery_run.h"
#include "temp_dir.h"

namespace writ::sender {
namespace {

bool CopiesWithCpu(const std::string& provider) {
  fabric::DeclaredProvider declared;
  declared.name = provider;
  return fabric::ProviderInfo::Declared(declared).copies_with_cpu();
}

TEST(SourcePathChoice, ProvidersThatMoveBytesWithTheCpuAreNamed) {
  for (const char* p : {"tcp", "shm", "udp", "sockets", "tcp;ofi_rxm"})
    EXPECT_TRUE(CopiesWithCpu(p)) << p;
  for (const char* p : {"verbs", "verbs;ofi_rxm", "efa", "cxi", "psm3", "memory"})
    EXPECT_FALSE(CopiesWithCpu(p)) << p;
}

TEST(SourcePathChoice, AutoMapsAFileOnlyWhereANicReadsRegisteredMemory) {
  writ::testing::TempDir dir;
  const std::string path = dir.File("big");
  std::ofstream(path) << std::string(kZeroCopyMinBytes, 'x');
  auto file = DeliverySource::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const uint64_t big = kZeroCopyMinBytes;
  EXPECT_FALSE(WantsZeroCopy(SourcePath::kAuto, *file, big, /*provider_copies_with_cpu=*/true));
  EXPECT_TRUE(WantsZeroCopy(SourcePath::kAuto, *file, big, false));
  EXPECT_FALSE(WantsZeroCopy(SourcePath::kAuto, *file, big - 1, false)) << "below the minimum";
  // What the caller asks for is what it gets.
  EXPECT_TRUE(WantsZeroCopy(SourcePath::kZeroCopy, *file, big, true));
  EXPECT_TRUE(WantsZeroCopy(SourcePath::kZeroCopy, *file, 1, true));
  EXPECT_FALSE(WantsZeroCopy(SourcePath::kStaging, *file, big, false));
}

TEST(SourcePathChoice, AutoWritesTheCallersOwnMemoryInPlaceOnEveryProvider) {
  const std::vector<uint8_t> bytes(kZeroCopyMinBytes, 7);
  const DeliverySource memory = DeliverySource::FromBytes(bytes, "in-memory");
  EXPECT_TRUE(WantsZeroCopy(SourcePath::kAuto, memory, bytes.size(), true));
  EXPECT_TRUE(WantsZeroCopy(SourcePath::kAuto, memory, bytes.size(), false));
  EXPECT_FALSE(WantsZeroCopy(SourcePath::kAuto, memory, bytes.size() - 1, true));
}

}  // namespace
}  // namespace writ::sender
