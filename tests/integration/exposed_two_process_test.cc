// Exposed targets across processes: a receiving program of its own (exposing_receiver.cc)
// exposes a paged buffer, and real `writ send --target` processes, several at once, deliver
// blocks into scattered pages of it, and a range at an offset. The program's buffer, written
// out when it ends, holds each in its place and nothing elsewhere; a page listed twice is
// refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "provider_matrix.h"
#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t kTwoProcessPage = 16 << 10;
constexpr uint64_t kTwoProcessPages = 64;

std::vector<uint8_t> FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

class ExposedTwoProcess : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable(GetParam()),
                    "provider " << GetParam() << " cannot serve on this machine");
  }
};

TEST_P(ExposedTwoProcess, WritSendProcessesFillTheirPagesOfAnotherProgramsBuffer) {
  TempDir dir;
  const std::string saved = dir.File("buffer.bin");
  auto program =
      ChildProcess::Start({EXPOSING_RECEIVER, saved, GetParam(), std::to_string(kTwoProcessPages),
                           std::to_string(kTwoProcessPage)});
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  auto listening = program->ReadLineStartingWith("listening on ", 30s);
  ASSERT_TRUE(listening.ok()) << listening.status().ToString();
  const std::string address = listening->substr(listening->rfind(' ') + 1);

  // Three blocks into scattered pages, and one range at an offset (a page and a half).
  const std::vector<std::vector<uint64_t>> pages = {{7, 2, 40, 41}, {0, 63, 5, 6}, {30, 12, 13}};
  const uint64_t at_offset = 20 * kTwoProcessPage, offset_bytes = kTwoProcessPage * 3 / 2;
  std::vector<std::string> files;
  std::vector<std::unique_ptr<ChildProcess>> senders;
  for (size_t b = 0; b <= pages.size(); ++b) {
    const bool paged = b < pages.size();
    files.push_back(dir.File("block-" + std::to_string(b)));
    WritePatternFile(files.back(), 40 + b,
                     paged ? pages[b].size() * kTwoProcessPage : offset_bytes);
    std::vector<std::string> line = {"send",     files.back(), "--to",
                                     address,    "--id",       "blk-" + std::to_string(b),
                                     "--target", "kv",         "--json"};
    if (paged) {
      std::string list;
      for (uint64_t p : pages[b]) list += (list.empty() ? "" : ",") + std::to_string(p);
      line.insert(line.end(), {"--target-pages", list});
    } else {
      line.insert(line.end(), {"--target-offset", std::to_string(at_offset)});
    }
    senders.push_back(StartWrit(line, files.back() + ".err"));
    ASSERT_TRUE(senders.back());
  }
  for (size_t b = 0; b < senders.size(); ++b) {
    CommandRun run = FinishWrit(*senders[b], files[b] + ".err");
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    EXPECT_EQ(run.json["reached"]["rung"], "validated") << run.out;
  }
  CommandRun twice = RunWrit({"send", files[0], "--to", address, "--id", "twice", "--target", "kv",
                              "--target-pages", "9,9,10,11", "--json"});
  EXPECT_EQ(twice.exit_code, 3) << twice.out;
  EXPECT_NE(twice.out.find("page 9 of target kv is listed twice"), std::string::npos) << twice.out;

  std::vector<std::string> told;
  for (size_t b = 0; b < senders.size(); ++b) {
    auto line = program->ReadLineStartingWith("delivered ", 30s);
    ASSERT_TRUE(line.ok()) << line.status().ToString();
    told.push_back(*line);
  }
  std::sort(told.begin(), told.end());
  EXPECT_EQ(told, (std::vector<std::string>{"delivered blk-0 ok", "delivered blk-1 ok",
                                            "delivered blk-2 ok", "delivered blk-3 ok"}));
  program->CloseStdin();
  auto exited = program->Wait(30s);
  ASSERT_TRUE(exited.ok() && *exited == 0) << (exited.ok() ? *exited : -1);

  // What the program's buffer must hold: each block in its pages, the range at its offset,
  // zeros everywhere else.
  std::vector<uint8_t> expected(kTwoProcessPages * kTwoProcessPage, 0);
  for (size_t b = 0; b < files.size(); ++b) {
    const std::vector<uint8_t> block = FileBytes(files[b]);
    if (b == pages.size()) {
      std::copy(block.begin(), block.end(), expected.begin() + at_offset);
      continue;
    }
    for (size_t k = 0; k < pages[b].size(); ++k) {
      std::copy(block.begin() + k * kTwoProcessPage, block.begin() + (k + 1) * kTwoProcessPage,
                expected.begin() + pages[b][k] * kTwoProcessPage);
    }
  }
  const std::vector<uint8_t> buffer = FileBytes(saved);
  ASSERT_EQ(buffer.size(), expected.size());
  const auto differ = std::mismatch(buffer.begin(), buffer.end(), expected.begin());
  EXPECT_EQ(differ.first, buffer.end())
      << "the buffer differs first at byte " << (differ.first - buffer.begin()) << ", page "
      << (differ.first - buffer.begin()) / kTwoProcessPage;
}

INSTANTIATE_TEST_SUITE_P(Loopback, ExposedTwoProcess, ::testing::ValuesIn(LoopbackProviderNames()),
                         ProviderName);

}  // namespace
}  // namespace writ::testing
