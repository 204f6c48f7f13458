// The fuzz seed corpus: every sample message ("valid-*") and frames on the
// edge of each rejection ("reject-*"). write_seed_corpus writes them to
// fuzz/corpus/protocol_fuzzer/; corpus_test checks the files still match.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "protocol/codec.h"
#include "sample_messages.h"
#include "test_util.h"

namespace writ::protocol::testing {

inline std::vector<std::pair<std::string, std::vector<uint8_t>>> SeedCorpus() {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> seeds;
  for (const Message& m : AllSamples()) {
    seeds.emplace_back("valid-" + std::string(MessageTypeName(m)), Encode(m));
  }
  Announce sha = SampleAnnounce();
  sha.rule = Rule::kSha256;
  sha.digest = Bytes(32, 3);
  sha.sender_fabric_address.clear();
  seeds.emplace_back("valid-announce-sha256", Encode(sha));
  Announce regions = SampleAnnounce();  // scatter-gather: 8 MiB + 0 + 16 MiB
  regions.region_lengths = {8388608, 0, 16777216};
  seeds.emplace_back("valid-announce-regions", Encode(regions));
  Announce addressed = SampleAnnounce();  // into an exposed target, at an offset
  addressed.target = "kv-cache";
  addressed.target_offset = 1 << 20;
  seeds.emplace_back("valid-announce-target", Encode(addressed));
  Announce paged = regions;  // a region table, then a target block with a page list
  paged.target = "kv-cache";
  paged.target_pages = {9, 3, 4};
  seeds.emplace_back("valid-announce-target-pages", Encode(paged));
  seeds.emplace_back("valid-refuse-connection", Encode(Refuse{"", RefuseReason::kAuth, ""}));

  std::vector<uint8_t> cut = Encode(SampleAnnounce());
  cut.resize(cut.size() - 3);
  seeds.emplace_back("reject-truncated-announce", cut);
  seeds.emplace_back("reject-oversize-length", RawFrame(5, {}, kProtocolVersion, 0, 0xffffffffu));
  std::vector<uint8_t> magic = Encode(SampleCommit());
  magic[0] = 'X';
  seeds.emplace_back("reject-bad-magic", magic);
  seeds.emplace_back("reject-unknown-type", RawFrame(99, PayloadOf(Encode(SampleCommit()))));
  seeds.emplace_back("reject-version-1", RawFrame(4, PayloadOf(Encode(SampleCommit())), 1));
  std::vector<uint8_t> trailing = PayloadOf(Encode(SampleQuery()));
  trailing.push_back(0);
  seeds.emplace_back("reject-trailing-byte", RawFrame(8, trailing));
  Announce short_digest = SampleAnnounce();
  short_digest.digest.resize(15);
  seeds.emplace_back("reject-digest-length", Encode(short_digest));
  regions.region_lengths.back() -= 1;
  seeds.emplace_back("reject-region-sum", Encode(regions));
  seeds.emplace_back("reject-receipt-not-object", Encode(Receipt{"RC-233", "[1,2,3]"}));
  std::vector<uint8_t> no_receipts = PayloadOf(Encode(SampleReceipts()));
  no_receipts.resize(4);
  no_receipts[0] = 0;  // count 0
  seeds.emplace_back("reject-receipts-empty", RawFrame(10, no_receipts));
  return seeds;
}

}  // namespace writ::protocol::testing
