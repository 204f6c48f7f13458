// A delivery's receipts as a sender holds them (DeliveryOutcome::receipts).
#pragma once

#include <atomic>
#include <cstddef>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "writ/export.h"
#include "writ/receipt.h"
#include "writ/status.h"

namespace writ {
namespace sender {
class DeliveryRun;
}

// In rung order, retained last. A receipt the receiver sent is kept as the text it sent,
// read strictly when it arrived (ReadReceiptFacts), and becomes a `Receipt` only when the
// list is first read as receipts: an application that needs only the rungs, or the texts to
// keep or pass on, pays for no second reading and no string per field. Reading is safe from
// any number of threads; adding is not, and happens before the list is shared.
class WRIT_EXPORT ReceiptList {
 public:
  ReceiptList() = default;
  ReceiptList(std::initializer_list<Receipt> receipts);
  ReceiptList(const ReceiptList& other);
  ReceiptList(ReceiptList&& other) noexcept;
  ReceiptList& operator=(const ReceiptList& other);
  ReceiptList& operator=(ReceiptList&& other) noexcept;
  ~ReceiptList();

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  ReceiptRung rung(size_t i) const { return entries_[i].rung; }
  // Receipt i's JSON: the text it arrived as, or the canonical JSON of one made here.
  std::string Text(size_t i) const;
  void AppendText(size_t i, std::string& out) const;

  // Every receipt, read from its text on the first call, the same objects after it.
  const std::vector<Receipt>& receipts() const;
  const Receipt& operator[](size_t i) const { return receipts()[i]; }
  const Receipt& front() const { return receipts().front(); }
  const Receipt& back() const { return receipts().back(); }
  std::vector<Receipt>::const_iterator begin() const { return receipts().begin(); }
  std::vector<Receipt>::const_iterator end() const { return receipts().end(); }

  // Each inserted at its rung's place, whatever order they come in.
  void Add(Receipt receipt);
  // Read strictly first (ReadReceiptFacts); a text it refuses is not added.
  Status AddText(std::string text);
  void Clear();

 private:
  friend class sender::DeliveryRun;
  struct Entry {
    ReceiptRung rung = ReceiptRung::kTransport;
    std::string text;             // as received; empty for one made here
    std::optional<Receipt> made;  // one made here
  };
  // `text` was accepted by ReadReceiptFacts, which read `rung` from it.
  void AddChecked(ReceiptRung rung, std::string text);
  void Insert(Entry entry);
  void Forget() const;

  std::vector<Entry> entries_;
  mutable std::mutex read_mu_;
  mutable std::atomic<bool> read_{false};
  mutable std::vector<Receipt> receipts_;  // written once under read_mu_, then read_ set
};

}  // namespace writ
