// The sender keeps each receipt it is sent as its text, read strictly on arrival without
// being copied (ReadReceiptFacts), and reads it into a Receipt only when asked
// (ReceiptList). Both readings must accept and refuse exactly the same texts.
#include "writ/receipt_list.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sample_receipt.h"

namespace writ {
namespace {

using json = nlohmann::json;

Receipt Retained(const std::string& id) {
  Receipt r = SampleReceipt(ReceiptRung::kValidated, id);
  r.rung = ReceiptRung::kRetained;
  r.rule_passed.reset();
  r.observer = "receiver store";
  r.context.notes = {"a note"};
  r.retention = RetentionPromise{"volatile", "held", "process-running", "none", "memfd"};
  r.failure_domain = "rack-1";
  return r;
}

Receipt GroupSigned(ReceiptRung rung, const std::string& id) {
  Receipt r = SampleReceipt(rung, id);
  ReceiptSignature& s = r.signature.emplace();
  s.algorithm = "ed25519-merkle-sha256";
  s.key_id = std::string(16, 'a');
  s.public_key = std::string(64, 'b');
  s.value = std::string(128, 'c');
  s.root = std::string(64, 'd');
  s.leaf_index = 1;
  s.leaves = 3;
  s.path = {{"left", std::string(64, 'e')}, {"right", std::string(64, 'f')}};
  return r;
}

// Every value of `doc` at any depth, as JSON pointers.
void Pointers(const json& doc, const std::string& at, std::vector<std::string>& out) {
  if (!at.empty()) out.push_back(at);
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) Pointers(value, at + "/" + key, out);
  } else if (doc.is_array()) {
    for (size_t i = 0; i < doc.size(); ++i) Pointers(doc[i], at + "/" + std::to_string(i), out);
  }
}

// Altered texts of `receipt`: each value removed, and replaced by a value of every other
// JSON type; an unknown member in every object.
std::vector<std::string> Alterations(const Receipt& receipt) {
  const json doc = json::parse(ReceiptToJson(receipt));
  std::vector<std::string> pointers;
  Pointers(doc, "", pointers);
  std::vector<std::string> texts;
  for (const std::string& p : pointers) {
    const json::json_pointer at(p);
    json removed = doc;
    json& parent = removed[at.parent_pointer()];
    if (parent.is_array()) {
      parent.erase(std::stoul(at.back()));
    } else {
      parent.erase(at.back());
    }
    texts.push_back(removed.dump());
    for (const json& other : {json(1), json(-1), json("x"), json(""), json::object(), json::array(),
                              json(true), json(nullptr), json(1.5)}) {
      json replaced = doc;
      replaced[at] = other;
      texts.push_back(replaced.dump());
    }
    if (doc[at].is_object()) {
      json unknown = doc;
      unknown[at]["unknown"] = 1;
      texts.push_back(unknown.dump());
    }
  }
  json top = doc;
  top["unknown"] = "x";
  texts.push_back(top.dump());
  return texts;
}

TEST(ReceiptFacts, RefuseExactlyWhatTheFullReadingRefusesWithTheSameError) {
  for (const Receipt& receipt :
       {Retained("facts-1"), GroupSigned(ReceiptRung::kReceived, "facts-2"),
        GroupSigned(ReceiptRung::kValidated, "facts-3")}) {
    size_t refused = 0;
    const std::vector<std::string> texts = Alterations(receipt);
    for (const std::string& text : texts) {
      const Status full = ReceiptFromJson(text).status();
      const Status facts = ReadReceiptFacts(text).status();
      EXPECT_EQ(full.ok(), facts.ok()) << text;
      EXPECT_EQ(full.message(), facts.message()) << text;
      refused += full.ok() ? 0 : 1;
    }
    // Most alterations are refused (a few are not: another string where any string will do).
    EXPECT_GT(refused, texts.size() / 2) << ReceiptToJson(receipt);
  }
}

TEST(ReceiptFacts, AreTheReceiptsOwnFields) {
  const std::string text = ReceiptToJson(Retained("facts-own"));
  auto facts = ReadReceiptFacts(text);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->rung, ReceiptRung::kRetained);
  EXPECT_EQ(facts->delivery_id, "facts-own");
  EXPECT_EQ(facts->bytes, 4096u);
  EXPECT_EQ(facts->digest, "00112233445566778899aabbccddeeff");
  EXPECT_EQ(facts->retention, "volatile");
  auto validated = ReadReceiptFacts(ReceiptToJson(SampleReceipt(ReceiptRung::kValidated, "v")));
  ASSERT_TRUE(validated.ok());
  EXPECT_EQ(validated->rung, ReceiptRung::kValidated);
  EXPECT_EQ(validated->retention, "");
}

TEST(ReceiptList, KeepsEachTextAsItCameAndReadsItIntoTheSameReceipt) {
  // Not the canonical form: the list keeps what the receiver sent, not a rewriting of it.
  const std::string text = json::parse(ReceiptToJson(Retained("kept"))).dump(1);
  ReceiptList list;
  ASSERT_TRUE(list.AddText(text).ok());
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list.rung(0), ReceiptRung::kRetained);
  EXPECT_EQ(list.Text(0), text);
  EXPECT_EQ(list[0], Retained("kept"));
  const Receipt made = SampleReceipt(ReceiptRung::kReceived, "kept");
  list.Add(made);
  EXPECT_EQ(list.Text(0), ReceiptToJson(made)) << "one made here: its canonical JSON";
  EXPECT_EQ(list[0], made);
  EXPECT_EQ(list.back(), Retained("kept"));
}

TEST(ReceiptList, HoldsReceiptsInRungOrderRetainedLastWhateverOrderTheyCameIn) {
  ReceiptList list;
  ASSERT_TRUE(list.AddText(ReceiptToJson(Retained("order"))).ok());
  ASSERT_TRUE(list.AddText(ReceiptToJson(GroupSigned(ReceiptRung::kValidated, "order"))).ok());
  Receipt transport = SampleReceipt(ReceiptRung::kReceived, "order");
  transport.rung = ReceiptRung::kTransport;
  transport.observer = "sender";
  list.Add(transport);
  ASSERT_TRUE(list.AddText(ReceiptToJson(GroupSigned(ReceiptRung::kReceived, "order"))).ok());
  std::vector<ReceiptRung> rungs;
  for (const Receipt& r : list) rungs.push_back(r.rung);
  EXPECT_EQ(rungs, (std::vector<ReceiptRung>{ReceiptRung::kTransport, ReceiptRung::kReceived,
                                             ReceiptRung::kValidated, ReceiptRung::kRetained}));
  for (size_t i = 0; i < list.size(); ++i) EXPECT_EQ(list.rung(i), rungs[i]);
}

TEST(ReceiptList, RefusesATextTheReaderRefusesAndKeepsWhatItHad) {
  ReceiptList list;
  ASSERT_TRUE(list.AddText(ReceiptToJson(Retained("refused"))).ok());
  const std::string forged = ReceiptToJson(Retained("refused")) + std::string(1, '\0') + "{}";
  const Status added = list.AddText(forged);
  EXPECT_EQ(added.code(), ErrorCode::kMalformed);
  EXPECT_NE(added.message().find("NUL byte"), std::string::npos) << added.message();
  EXPECT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0], Retained("refused"));
}

TEST(ReceiptList, CopiesAndAssignmentsReadTheirOwnEntries) {
  ReceiptList a;
  ASSERT_TRUE(a.AddText(ReceiptToJson(Retained("copy"))).ok());
  EXPECT_EQ(a.front().delivery.id, "copy");  // read before the copy
  ReceiptList b = a;
  ASSERT_TRUE(b.AddText(ReceiptToJson(SampleReceipt(ReceiptRung::kReceived, "copy"))).ok());
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(a.receipts().size(), 1u);
  EXPECT_EQ(b.receipts().size(), 2u) << "an addition after a read reads again";
  a = b;
  EXPECT_EQ(a.receipts().size(), 2u);
  ReceiptList c = std::move(a);
  EXPECT_EQ(c.receipts().size(), 2u);
  c.Clear();
  EXPECT_TRUE(c.empty());
  EXPECT_TRUE(c.receipts().empty());
}

TEST(ReceiptList, ThreadsReadingFirstAtOnceSeeOneList) {
  ReceiptList list;
  for (ReceiptRung rung : {ReceiptRung::kReceived, ReceiptRung::kValidated}) {
    ASSERT_TRUE(list.AddText(ReceiptToJson(GroupSigned(rung, "threads"))).ok());
  }
  ASSERT_TRUE(list.AddText(ReceiptToJson(Retained("threads"))).ok());
  std::vector<const std::vector<Receipt>*> seen(8);
  std::vector<std::thread> readers;
  for (size_t t = 0; t < seen.size(); ++t) {
    readers.emplace_back([&, t] { seen[t] = &list.receipts(); });
  }
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(std::set<const std::vector<Receipt>*>(seen.begin(), seen.end()).size(), 1u);
  ASSERT_EQ(seen[0]->size(), 3u);
  EXPECT_EQ((*seen[0])[2], Retained("threads"));
}

}  // namespace
}  // namespace writ
