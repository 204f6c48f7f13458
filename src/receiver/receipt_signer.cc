#include "receiver/receipt_signer.h"

#include "receipt/signing.h"

namespace writ::receiver {

ReceiptSigner::ReceiptSigner(const receipt::Identity& identity, BeforeSign before_sign)
    : identity_(identity), before_sign_(std::move(before_sign)) {}

size_t ReceiptSigner::queued() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const Request* r : queue_) n += r->receipts.size();
  return n;
}

Result<std::vector<std::string>> ReceiptSigner::Sign(std::span<receipt::UnsignedReceipt> receipts) {
  if (receipts.empty()) return std::vector<std::string>{};
  Request request{receipts};
  MutexLock lock(mu_);
  queue_.push_back(&request);
  while (!request.done) {
    if (signing_) {
      lock.Wait(signed_);
      continue;
    }
    // Nobody is signing: this caller signs everything queued, its own request included.
    signing_ = true;
    group_.swap(queue_);
    lock.Unlock();
    SignGroup(group_);
    lock.Lock();
    signing_ = false;
    for (Request* r : group_) r->done = true;
    group_.clear();
    signed_.notify_all();
  }
  return std::move(request.result);
}

Result<std::string> ReceiptSigner::SignOne(const Receipt& receipt) {
  receipt::UnsignedReceipt one = receipt::Unsigned(receipt);
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> json, Sign(std::span(&one, 1)));
  return std::move(json.front());
}

void ReceiptSigner::SignGroup(const std::vector<Request*>& group) {
  size_t count = 0;
  for (const Request* r : group) count += r->receipts.size();
  if (before_sign_) before_sign_(count);
  std::span<receipt::UnsignedReceipt> all = group.front()->receipts;
  if (group.size() > 1) {
    all_.clear();
    all_.reserve(count);
    for (Request* r : group) {
      for (receipt::UnsignedReceipt& text : r->receipts) all_.push_back(std::move(text));
    }
    all = all_;
  }
  auto signed_json = receipt::SignUnsignedJsonOnly(all, identity_);
  if (signed_json.ok()) {
    signatures_.fetch_add(1);
    receipts_signed_.fetch_add(count);
  }
  if (!signed_json.ok()) {
    for (Request* r : group) r->result = signed_json.status();
    return;
  }
  if (group.size() == 1) {
    group.front()->result = std::move(signed_json);
    return;
  }
  size_t next = 0;
  for (Request* r : group) {
    std::vector<std::string> own;
    own.reserve(r->receipts.size());
    for (size_t i = 0; i < r->receipts.size(); ++i)
      own.push_back(std::move((*signed_json)[next++]));
    r->result = std::move(own);
  }
}

}  // namespace writ::receiver
