#include "writ/receipt_list.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace writ {
namespace {

// Rung order, retained last (the enum's order): a receiver's `received` can overtake the
// sender's own `transport` (sent as soon as the last chunk is seen, while the sender may
// still be polling that chunk's completion).
int Order(ReceiptRung rung) { return static_cast<int>(rung); }

}  // namespace

ReceiptList::ReceiptList(std::initializer_list<Receipt> receipts) {
  for (const Receipt& r : receipts) Add(r);
}

ReceiptList::ReceiptList(const ReceiptList& other) : entries_(other.entries_) {}

ReceiptList::ReceiptList(ReceiptList&& other) noexcept : entries_(std::move(other.entries_)) {
  other.Forget();
}

ReceiptList& ReceiptList::operator=(const ReceiptList& other) {
  if (this != &other) {
    entries_ = other.entries_;
    Forget();
  }
  return *this;
}

ReceiptList& ReceiptList::operator=(ReceiptList&& other) noexcept {
  if (this != &other) {
    entries_ = std::move(other.entries_);
    Forget();
    other.Forget();
  }
  return *this;
}

ReceiptList::~ReceiptList() = default;

void ReceiptList::Forget() const {
  receipts_.clear();
  read_.store(false, std::memory_order_relaxed);
}

std::string ReceiptList::Text(size_t i) const {
  std::string out;
  AppendText(i, out);
  return out;
}

void ReceiptList::AppendText(size_t i, std::string& out) const {
  const Entry& e = entries_[i];
  out += e.made ? ReceiptToJson(*e.made) : e.text;
}

const std::vector<Receipt>& ReceiptList::receipts() const {
  if (read_.load(std::memory_order_acquire)) return receipts_;
  std::lock_guard lock(read_mu_);
  if (read_.load(std::memory_order_relaxed)) return receipts_;
  receipts_.reserve(entries_.size());
  for (const Entry& e : entries_) {
    if (e.made) {
      receipts_.push_back(*e.made);
      continue;
    }
    auto read = ReceiptFromJson(e.text);
    if (!read.ok()) {
      // Only AddText and AddChecked add texts, both after ReadReceiptFacts accepted them,
      // and ReceiptFromJson accepts exactly what that does: this is a broken invariant.
      std::fprintf(stderr, "writ: a kept receipt no longer reads: %s\n",
                   read.status().message().c_str());
      std::abort();
    }
    receipts_.push_back(std::move(read).value());
  }
  read_.store(true, std::memory_order_release);
  return receipts_;
}

void ReceiptList::Add(Receipt receipt) {
  const ReceiptRung rung = receipt.rung;
  Insert(Entry{rung, {}, std::move(receipt)});
}

Status ReceiptList::AddText(std::string text) {
  WRIT_ASSIGN_OR_RETURN(ReceiptFacts facts, ReadReceiptFacts(text));
  AddChecked(facts.rung, std::move(text));
  return Status::Ok();
}

void ReceiptList::AddChecked(ReceiptRung rung, std::string text) {
  Insert(Entry{rung, std::move(text), std::nullopt});
}

void ReceiptList::Insert(Entry entry) {
  Forget();
  // transport, received, validated, processed, retained: one allocation for all of them.
  if (entries_.capacity() == 0) entries_.reserve(5);
  auto at = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return Order(e.rung) > Order(entry.rung); });
  entries_.insert(at, std::move(entry));
}

void ReceiptList::Clear() {
  entries_.clear();
  Forget();
}

}  // namespace writ
