// fabric_peer: one side of the two-process fabric tests. `target` registers a
// window and reports what landed in it; `initiator` writes into it and prints
// every WorkCompletion it reads. Lines on stdout are the test's evidence.
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/pattern.h"
#include "fabric/node.h"
#include "fabric/progress_loop.h"

using namespace writ;
using namespace writ::fabric;
using json = nlohmann::json;

namespace {

constexpr uint64_t kStream = 233;
constexpr uint64_t kChunk = 8ull << 20;

[[noreturn]] void Die(const std::string& what) {
  std::cout << "FAIL " << what << std::endl;
  std::exit(3);
}

template <typename T>
T Must(Result<T> r, const std::string& what) {
  if (!r.ok()) Die(what + ": " + r.status().ToString());
  return std::move(r).value();
}

std::map<std::string, std::string> Flags(int argc, char** argv, int first) {
  std::map<std::string, std::string> flags;
  for (int i = first; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  return flags;
}

std::string Hex(const std::vector<uint8_t>& bytes) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

std::vector<uint8_t> Unhex(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  return out;
}

template <typename T>
json Probe(const Result<T>& r) {
  if (r.ok()) return json{{"value", true}};
  return json{{"error", std::string(ErrorCodeName(r.status().code()))},
              {"message", r.status().message()}};
}

json RecordJson(const WorkCompletion& wc) {
  json j{{"request_id", wc.request_id()},
         {"ok", wc.ok()},
         {"status", wc.status().Name()},
         {"endpoint", wc.endpoint()}};
  auto prov = wc.provider_error();
  if (prov.ok()) j["prov_errno"] = prov->prov_errno, j["prov_text"] = prov->text;
  auto data = wc.remote_data();
  if (data.ok()) j["remote_data"] = *data;
  auto op = wc.operation();
  if (op.ok()) j["operation"] = std::string(OperationName(*op));
  j["probe"] = {{"provider_error", Probe(prov)},
                {"operation", Probe(op)},
                {"flags", Probe(wc.flags())},
                {"length", Probe(wc.length())},
                {"remote_data", Probe(data)}};
  return j;
}

// `node` is this side's own address for a target or an RDM initiator: 127.0.0.1 on
// loopback providers; on verbs the address of an RDMA netdev (--node; in the Soft-RoCE
// guest 10.77.0.1 on rxe0's netdev), since rdma_cm cannot bind a verbs device to lo.
ProviderRequest Request(const std::string& provider, Role role, const std::string& target,
                        const std::string& node = "127.0.0.1") {
  ProviderRequest req;
  req.provider = provider;
  req.role = role;
  if (provider == "shm") return req;
  if (role == Role::kTarget || EndpointKindFor(provider) == EndpointKind::kRdm) {
    req.node = node;
    req.service = role == Role::kTarget ? "0" : "";
  } else {
    const size_t colon = target.rfind(':');
    req.node = target.substr(0, colon);
    req.service = target.substr(colon + 1);
  }
  return req;
}

std::string NodeFlag(const std::map<std::string, std::string>& flags) {
  return flags.count("--node") ? flags.at("--node") : "127.0.0.1";
}

uint8_t* AllocWindow(size_t length, uint8_t fill) {
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(4096, (length + 4095) / 4096 * 4096));
  if (!p) Die("out of memory");
  std::memset(p, fill, length);
  return p;
}

int RunTarget(const std::map<std::string, std::string>& flags) {
  const std::string provider = flags.at("--provider");
  const uint64_t window_len = std::stoull(flags.at("--window"));
  NodeOptions options;
  options.provider = Request(provider, Role::kTarget, "", NodeFlag(flags));
  auto node = Must(FabricNode::Open(options), "open target node");
  uint8_t* window = AllocWindow(window_len, 0xEE);
  auto region = Must(node->Register(window, window_len, Access::kRemoteWrite), "register window");
  const std::string address = node->kind() == EndpointKind::kMsg
                                  ? Must(node->LocalAddressText(), "address")
                                  : Hex(Must(node->LocalAddress(), "address"));

  std::mutex mu;
  std::condition_variable cv;
  std::vector<WorkCompletion> records;
  std::string failure;
  ProgressLoop loop(
      *node,
      [&](const WorkCompletion& wc) {
        std::lock_guard lock(mu);
        records.push_back(wc);
        cv.notify_all();
      },
      [&](const Status& s) {
        std::lock_guard lock(mu);
        failure = s.ToString();
        cv.notify_all();
      });

  std::cout << "READY " << address << " " << region.descriptor().Encode() << " "
            << node->provider().name() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "wait-notifications") {
      size_t want = 0, timeout_ms = 0;
      in >> want >> timeout_ms;
      std::unique_lock lock(mu);
      auto notifications = [&] {
        std::vector<uint64_t> values;
        for (const auto& r : records) {
          if (r.ok() && r.operation().ok() && *r.operation() == Operation::kRemoteWrite) {
            auto d = r.remote_data();
            if (d.ok()) values.push_back(*d);
          }
        }
        return values;
      };
      cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                  [&] { return notifications().size() >= want || !failure.empty(); });
      json out = notifications();
      std::cout << "NOTIFICATIONS " << out.dump() << std::endl;
    } else if (cmd == "records") {
      std::lock_guard lock(mu);
      for (const auto& r : records) std::cout << "RECORD " << RecordJson(r).dump() << std::endl;
      std::cout << "END " << failure << std::endl;
    } else if (cmd == "verify") {
      const size_t bad = FirstPatternMismatch(kStream, 0, window, window_len);
      if (bad == window_len)
        std::cout << "VERIFY ok " << window_len << std::endl;
      else
        std::cout << "VERIFY mismatch " << bad << std::endl;
    } else if (cmd == "untouched") {
      size_t i = 0;
      while (i < window_len && window[i] == 0xEE) ++i;
      if (i == window_len)
        std::cout << "UNTOUCHED yes" << std::endl;
      else
        std::cout << "UNTOUCHED no " << i << std::endl;
    } else if (cmd == "revoke") {
      Status s = region.Close();
      std::cout << "REVOKED " << (s.ok() ? "ok" : s.ToString()) << std::endl;
    } else if (cmd == "quit") {
      break;
    }
  }
  loop.Stop();
  (void)region.Close();
  Status closed = node->Close();
  std::free(window);
  if (!closed.ok()) Die("close: " + closed.ToString());
  return 0;
}

int RunInitiator(const std::map<std::string, std::string>& flags) {
  const std::string provider = flags.at("--provider");
  const std::string target = flags.at("--target");
  const std::string scenario = flags.at("--scenario");
  auto level = ParseCompletionLevel(flags.count("--level") ? flags.at("--level") : "delivery");
  if (!level.ok()) Die("bad --level");
  const RegionDescriptor remote = Must(RegionDescriptor::Decode(flags.at("--region")), "region");

  NodeOptions options;
  options.provider = Request(provider, Role::kInitiator, target, NodeFlag(flags));
  auto node = Must(FabricNode::Open(options), "open initiator node");
  Peer peer = node->kind() == EndpointKind::kMsg
                  ? Must(node->Connect(std::chrono::seconds(10)), "connect")
                  : Must(node->AddPeer(Unhex(target)), "add peer");

  const uint64_t source_len = remote.length;
  uint8_t* source = AllocWindow(source_len, 0);
  FillPattern(kStream, 0, source, source_len);
  auto local = Must(node->Register(source, source_len, Access::kLocalSource), "register source");

  struct Write {
    uint64_t id;
    uint64_t offset;
    uint64_t length;
    uint64_t key;
    uint32_t data;
  };
  std::vector<Write> writes;
  const uint64_t good = remote.key;
  const uint64_t bad = remote.key ^ 0x5A5A5A5Aull;
  if (scenario == "rc233") {
    for (uint64_t k = 0; k < 3; ++k)
      writes.push_back({k + 1, k * kChunk, kChunk, good, uint32_t(233000 + k)});
  } else if (scenario == "badkey") {
    writes.push_back({1, 0, 4096, bad, 1});
  } else if (scenario == "badkey-large") {
    writes.push_back({1, 0, remote.length, bad, 1});
  } else if (scenario == "overrun") {
    writes.push_back({1, remote.length - 4096, 8192, good, 1});
  } else if (scenario == "good") {
    writes.push_back({1, 0, 4096, good, 1});
  } else if (scenario == "mixed") {
    writes.push_back({1, 0, 4096, good, 1});
    writes.push_back({2, 4096, 4096, good, 2});
    writes.push_back({3, 8192, 4096, bad, 3});
    writes.push_back({4, 12288, 4096, good, 4});
  } else {
    Die("unknown scenario " + scenario);
  }

  CompletionTally tally;
  std::vector<WorkCompletion> records;
  json posts = json::array();
  // For docs/benchmarks.md: from the first post to the last record read.
  const auto first_post = std::chrono::steady_clock::now();
  for (const auto& w : writes) {
    WriteRequest req;
    req.request_id = w.id;
    req.peer = peer;
    req.local = &local;
    req.local_offset = w.offset < source_len ? w.offset : 0;
    req.length =
        w.length <= source_len - req.local_offset ? w.length : source_len - req.local_offset;
    req.remote = remote;
    req.remote.key = w.key;
    req.remote_offset = w.offset;
    req.length = w.length;
    if (req.local_offset + req.length > source_len) req.local_offset = 0;
    req.level = *level;
    if (!flags.count("--no-data")) req.remote_data = w.data;
    auto posted = node->PostWrite(req);
    if (posted.ok()) {
      posts.push_back({{"request_id", w.id},
                       {"requested", CompletionLevelName(posted->requested)},
                       {"granted", CompletionLevelName(posted->granted)}});
    } else {
      posts.push_back({{"request_id", w.id}, {"post_error", posted.status().ToString()}});
    }
  }
  std::cout << "POSTED " << posts.dump() << std::endl;
  size_t expected = 0;
  for (const auto& p : posts) expected += p.contains("granted") ? 1 : 0;

  const int wait_ms = flags.count("--wait-ms") ? std::stoi(flags.at("--wait-ms")) : 20000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (records.size() < expected && std::chrono::steady_clock::now() < deadline) {
    const size_t before = records.size();
    auto polled = node->Poll(records, 64);
    if (!polled.ok()) Die("poll: " + polled.status().ToString());
    if (records.size() == before) std::this_thread::yield();
  }
  const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - first_post);
  uint64_t written = 0;
  for (const auto& r : records) {
    tally.Add(r);
    if (r.ok()) {
      for (const auto& w : writes) written += w.id == r.request_id() ? w.length : 0;
    }
    std::cout << "RECORD " << RecordJson(r).dump() << std::endl;
  }
  std::cout << "ELAPSED "
            << json{{"microseconds", elapsed.count()}, {"bytes_succeeded", written}}.dump()
            << std::endl;
  std::cout << "TALLY "
            << json{{"records", tally.records},
                    {"successes", tally.successes},
                    {"errors", tally.errors},
                    {"expected", expected}}
                   .dump()
            << std::endl;
  (void)local.Close();
  Status closed = node->Close();
  std::free(source);
  std::cout << "CLOSED " << (closed.ok() ? "ok" : closed.ToString()) << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) Die("usage: fabric_peer target|initiator|probe --flag value ...");
  const std::string mode = argv[1];
  auto flags = Flags(argc, argv, 2);
  if (mode == "target") return RunTarget(flags);
  if (mode == "initiator") return RunInitiator(flags);
  if (mode == "probe") {
    ProviderRequest req = Request(flags.at("--provider"), Role::kTarget, "", NodeFlag(flags));
    auto info = ProviderInfo::Discover(req);
    if (!info.ok()) {
      std::cout << "UNAVAILABLE " << info.status().ToString() << std::endl;
      return 0;
    }
    json levels = json::array();
    for (auto l : info->supported_levels()) levels.push_back(CompletionLevelName(l));
    std::cout << "AVAILABLE "
              << json{{"name", info->name()},
                      {"domain", info->domain_name()},
                      {"mr_mode", info->mr_mode()},
                      {"levels", levels},
                      {"rx_cq_data", info->needs_posted_receives_for_data()},
                      {"version", info->provider_version()}}
                     .dump()
              << std::endl;
    return 0;
  }
  Die("unknown mode " + mode);
}
