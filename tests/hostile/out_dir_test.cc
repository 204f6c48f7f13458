// `writ serve --out DIR` (ReceiverOptions::out_dir): a retained delivery appears as a file
// named by its id, with its receipts beside it; an id that is not a safe file name stays
// inside DIR; a file already there with other bytes is never overwritten.
#include "receiver/out_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every entry of `dir`, by name.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

CommandRun Send(const Serve& serve, const std::string& file, const std::string& id) {
  return RunWrit({"send", file, "--to", serve.address(), "--id", id, "--json"});
}

TEST(ServeOut, ADeliveryAppearsAsAFileWithItsReceipts) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  std::filesystem::create_directory(dir.File("out"));
  WritePatternFile(dir.File("data"), 3, 3 << 20);
  auto serve = Serve::Start("tcp", {"--identity", dir.File("id"), "--out", dir.File("out")});
  ASSERT_TRUE(serve);
  CommandRun sent = Send(*serve, dir.File("data"), "batch-7.bin");
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_EQ(Contents(dir.File("out/batch-7.bin")), Contents(dir.File("data")));
  const json receipts = json::parse(Contents(dir.File("out/batch-7.bin.receipts.json")));
  ASSERT_TRUE(receipts.is_array());
  ASSERT_FALSE(receipts.empty());
  EXPECT_EQ(receipts.back()["rung"], "retained");
  // Every one is a receipt the receiver sent (the sender's output adds its own).
  for (const json& r : receipts) {
    const json& got = sent.json["receipts"];
    EXPECT_NE(std::find(got.begin(), got.end(), r), got.end()) << r.dump();
  }
  EXPECT_EQ(Entries(dir.File("out")),
            (std::vector<std::string>{"batch-7.bin", "batch-7.bin.receipts.json"}))
      << "no temporary left behind";
  // The same bytes again: the file is left as it is and the send succeeds.
  CommandRun again = Send(*serve, dir.File("data"), "batch-7.bin");
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

// The synced path (fsync of the file and the directory) with a durable store beside it.
TEST(ServeOut, APowerLossDeliveryAppearsToo) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  std::filesystem::create_directory(dir.File("out"));
  std::filesystem::create_directory(dir.File("data-dir"));
  WritePatternFile(dir.File("data"), 8, 1 << 20);
  auto serve = Serve::Start("tcp", {"--identity", dir.File("id"), "--data", dir.File("data-dir"),
                                    "--out", dir.File("out")});
  ASSERT_TRUE(serve);
  CommandRun sent = RunWrit({"send", dir.File("data"), "--to", serve->address(), "--id", "durable",
                             "--retention", "power-loss", "--json"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_EQ(Contents(dir.File("out/durable")), Contents(dir.File("data")));
  const json receipts = json::parse(Contents(dir.File("out/durable.receipts.json")));
  EXPECT_EQ(receipts.back()["rung"], "retained");
  EXPECT_EQ(receipts.back(), sent.json["receipts"].back());
}

TEST(ServeOut, UnsafeIdsMapToNamesInsideTheDirectory) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  std::filesystem::create_directories(dir.File("top/out"));
  WritePatternFile(dir.File("data"), 4, 4096);
  auto serve = Serve::Start("tcp", {"--identity", dir.File("id"), "--out", dir.File("top/out")});
  ASSERT_TRUE(serve);
  for (const std::string id : {"../x", "a/b", ".hidden", "x.receipts.json"}) {
    CommandRun sent = Send(*serve, dir.File("data"), id);
    EXPECT_EQ(sent.exit_code, 0) << id << ": " << sent.err;
  }
  EXPECT_EQ(Entries(dir.File("top/out")),
            (std::vector<std::string>{"%2E.%2Fx", "%2E.%2Fx.receipts.json", "%2Ehidden",
                                      "%2Ehidden.receipts.json", "a%2Fb", "a%2Fb.receipts.json",
                                      "x.receipts%2Ejson", "x.receipts%2Ejson.receipts.json"}));
  EXPECT_EQ(Entries(dir.File("top")), (std::vector<std::string>{"out"})) << "nothing outside";
  EXPECT_EQ(Contents(dir.File("top/out/a%2Fb")), Contents(dir.File("data")));
}

// A file at a delivery's name with no retained delivery behind it is stale: it is moved
// aside (never overwritten, never blocking the id) and the delivery takes its place.
TEST(ServeOut, AnExistingFileWithOtherBytesIsMovedAsideNotOverwritten) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  std::filesystem::create_directory(dir.File("out"));
  std::ofstream(dir.File("out/report")) << "the operator's own file\n";
  WritePatternFile(dir.File("data"), 5, 8192);
  auto serve = Serve::Start("tcp", {"--identity", dir.File("id"), "--out", dir.File("out")});
  ASSERT_TRUE(serve);
  CommandRun sent = Send(*serve, dir.File("data"), "report");
  ASSERT_EQ(sent.exit_code, 0) << sent.out << sent.err;
  EXPECT_EQ(Contents(dir.File("out/report")), Contents(dir.File("data")));
  std::vector<std::string> aside;
  for (const std::string& name : Entries(dir.File("out"))) {
    if (name.rfind(".report.stale-", 0) == 0) aside.push_back(name);
  }
  ASSERT_EQ(aside.size(), 1u) << "the operator's file is kept under another name";
  EXPECT_EQ(Contents(dir.File("out/" + aside.front())), "the operator's own file\n");
}

TEST(ServeOut, AFailedWriteRefusesNamingThePathAndErrno) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  std::filesystem::create_directory(dir.File("out"));
  WritePatternFile(dir.File("data"), 6, 4096);
  auto serve = Serve::Start("tcp", {"--identity", dir.File("id"), "--out", dir.File("out")});
  ASSERT_TRUE(serve);
  std::filesystem::remove(dir.File("out"));  // gone after the start-up check
  CommandRun sent = Send(*serve, dir.File("data"), "lost");
  EXPECT_NE(sent.exit_code, 0);
  const std::string said = sent.out + sent.err;
  EXPECT_NE(said.find(dir.File("out")), std::string::npos) << said;
  EXPECT_NE(said.find("errno 2"), std::string::npos) << said;
  for (const json& r : sent.json["receipts"]) EXPECT_NE(r["rung"], "retained") << r.dump();
}

TEST(ServeOut, AMissingDirectoryIsRefusedAtStart) {
  TempDir dir;
  CommandRun serve = RunWrit({"serve", "--listen", "127.0.0.1:0", "--provider", "tcp", "--identity",
                              dir.File("id"), "--out", dir.File("missing")});
  EXPECT_NE(serve.exit_code, 0);
  EXPECT_NE(serve.err.find(dir.File("missing")), std::string::npos) << serve.err;
}

receiver::OutRead ReadFrom(const std::string& content) {
  return [content](uint64_t offset, std::span<uint8_t> out) {
    std::memcpy(out.data(), content.data() + offset, out.size());
    return Status::Ok();
  };
}

// A symlink planted at a delivery's name, to a file holding the delivery's bytes: before
// O_NOFOLLOW the serve followed it and answered "same bytes" (an equality oracle on any
// file it can read); now it is refused by name and left as it is.
TEST(ServeOutPlanted, ASymlinkAtTheNameIsNeitherFollowedNorCompared) {
  TempDir dir;
  std::filesystem::create_directory(dir.File("out"));
  const std::string secret = "the operator's secret\n";
  std::ofstream(dir.File("secret")) << secret;
  std::filesystem::create_symlink(dir.File("secret"), dir.File("out/guess"));
  Status same =
      receiver::PublishOutPayload(dir.File("out"), "guess", secret.size(), false, ReadFrom(secret));
  EXPECT_FALSE(same.ok()) << "a symlink to the same bytes was answered as held";
  EXPECT_NE(same.message().find("not a regular file"), std::string::npos) << same.ToString();
  Status other = receiver::PublishOutPayload(dir.File("out"), "guess", secret.size(), false,
                                             ReadFrom(std::string(secret.size(), 'x')));
  EXPECT_EQ(other.message(), same.message()) << "the answer does not depend on the target";
  EXPECT_TRUE(std::filesystem::is_symlink(dir.File("out/guess")));
  EXPECT_EQ(Contents(dir.File("secret")), secret);
  // A dangling symlink is refused too, not replaced.
  std::filesystem::create_symlink(dir.File("nowhere"), dir.File("out/dangling"));
  EXPECT_FALSE(
      receiver::PublishOutPayload(dir.File("out"), "dangling", 3, false, ReadFrom("abc")).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.File("nowhere")));
}

// A FIFO planted at a delivery's name: an open for reading waited for a writer, holding the
// connection (and the serve's drain) forever. Now it is refused at once.
TEST(ServeOutPlanted, AFifoAtTheNameIsRefusedWithoutWaiting) {
  TempDir dir;
  std::filesystem::create_directory(dir.File("out"));
  ASSERT_EQ(mkfifo(dir.File("out/pipe").c_str(), 0600), 0);
  auto publish = std::async(std::launch::async, [&] {
    return receiver::PublishOutPayload(dir.File("out"), "pipe", 3, false, ReadFrom("abc"));
  });
  const bool done = publish.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!done) {  // unblock the reader so that the test ends
    const int w = open(dir.File("out/pipe").c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) close(w);
  }
  ASSERT_TRUE(done) << "publishing over a FIFO blocked";
  Status refused = publish.get();
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("not a regular file"), std::string::npos) << refused.ToString();
}

// Two-process: a FIFO at a delivery's name is never opened (before, the serve's connection
// blocked in open(2) and the sender waited with it): with no delivery behind it, it is moved
// aside like any stale name, the delivery lands, and SIGTERM then ends the serve with 0.
TEST(ServeOutPlanted, AFifoDoesNotHoldTheServePastItsDrainDeadline) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  std::filesystem::create_directory(dir.File("out"));
  ASSERT_EQ(mkfifo(dir.File("out/pipe").c_str(), 0600), 0);
  WritePatternFile(dir.File("data"), 9, 4096);
  auto serve = Serve::Start(
      "tcp", {"--identity", dir.File("id"), "--out", dir.File("out"), "--drain-timeout", "2s"});
  ASSERT_TRUE(serve);
  auto send = StartWrit({"send", dir.File("data"), "--to", serve->address(), "--id", "pipe"},
                        dir.File("send.err"));
  ASSERT_TRUE(send);
  auto sent = send->Wait(std::chrono::seconds(60));
  if (!sent.ok()) send->Kill(SIGKILL);
  ASSERT_TRUE(sent.ok()) << "the send was held by the FIFO";
  EXPECT_EQ(*sent, 0) << Contents(dir.File("send.err"));
  EXPECT_EQ(Contents(dir.File("out/pipe")), Contents(dir.File("data")));
  bool fifo_aside = false;
  for (const auto& e : std::filesystem::directory_iterator(dir.File("out"))) {
    const std::string name = e.path().filename().string();
    fifo_aside |= name.rfind(".pipe.stale-", 0) == 0 && e.is_fifo();
  }
  EXPECT_TRUE(fifo_aside) << "the FIFO is kept, unopened, under another name";
  EXPECT_EQ(serve->Stop(), 0);
}

// Percent-decoding, the inverse of OutName.
std::string Decode(const std::string& name) {
  std::string id;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '%') {
      id += name[i];
      continue;
    }
    id += static_cast<char>(std::stoi(name.substr(i + 1, 2), nullptr, 16));
    i += 2;
  }
  return id;
}

TEST(OutName, IsOneToOneAndNeverAPathHiddenOrAReceiptsFile) {
  for (const std::string& id : std::vector<std::string>{
           "plain-1.bin", ".", "..", "../x", "a/b", ".hidden", "%2F", "x.receipts.json",
           "x.receipts%2Ejson", std::string("nul\0byte", 9), "\xff\x1b[2J", "caf\xc3\xa9"}) {
    auto name = receiver::OutName(id);
    ASSERT_TRUE(name.ok()) << id;
    EXPECT_EQ(Decode(*name), id) << *name;
    EXPECT_EQ(name->find('/'), std::string::npos) << *name;
    EXPECT_NE(name->front(), '.') << *name;
    EXPECT_FALSE(name->ends_with(".receipts.json")) << *name;
    for (char c : *name)
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._-%", c)) << *name;
  }
  EXPECT_EQ(*receiver::OutName("../x"), "%2E.%2Fx");
  EXPECT_FALSE(receiver::OutName("").ok());
  EXPECT_TRUE(receiver::OutName(std::string(241, 'a')).ok());
  EXPECT_FALSE(receiver::OutName(std::string(242, 'a')).ok()) << "no room for .receipts.json";
}

}  // namespace
}  // namespace writ::testing
