// R3-7: counts the certificate's members that are K copies of one delivery, and says
// what K copies do not establish.
#include "audit/replicated_rules.h"

#include <algorithm>
#include <map>

#include "audit/sentences.h"

namespace writ::audit::internal {
namespace {

using State = ReceiptCheck::State;

constexpr const char* kReplicatedNotEstablished =
    " Not established: that failures inside one domain, or across domains with a common "
    "cause, are independent; that the domain labels are true (each receiver's operator names "
    "its own); that no receiver lied about holding the bytes; that the copies still exist now.";

std::string ReplicatedName(uint64_t k) { return "replicated:" + std::to_string(k); }

// Which members count: verified retained receipts of one delivery, one per key and domain.
class MemberCount {
 public:
  MemberCount(const CertificateCheck& cert, const std::string& id, uint64_t bytes)
      : id_(id), bytes_(bytes) {
    if (cert.delivery == id && !cert.digest.empty()) {
      rule_ = cert.rule;
      digest_ = cert.digest;
    }
  }

  // Empty when `m` counts; otherwise why not.
  std::string Add(const ReceiptCheck& m) {
    const std::string why = WhyNot(m);
    if (!why.empty()) return why;
    if (digest_.empty()) {
      rule_ = m.rule;
      digest_ = m.digest;
    }
    keys_.emplace(m.key_id, m.where);
    domains_.emplace(*m.failure_domain, m.where);
    counted_.push_back(&m);
    return "";
  }

  const std::vector<const ReceiptCheck*>& counted() const { return counted_; }

 private:
  std::string WhyNot(const ReceiptCheck& m) const {
    switch (m.state) {
      case State::kInvalid: return "does not verify: " + m.problem;
      case State::kNotSigned: return "is not signed";
      case State::kUnpinned: return m.problem;
      case State::kVerified: break;
    }
    if (m.rung != "retained") return "is a " + m.rung + " receipt, not a retained one";
    if (m.delivery != id_) return "names delivery " + Quoted(m.delivery) + ", not " + Quoted(id_);
    if (m.bytes != bytes_)
      return "gives it " + Grouped(m.bytes) + " bytes; the bundle says " + Grouped(bytes_);
    if (!digest_.empty() && (m.rule != rule_ || m.digest != digest_))
      return "names other bytes under that id (" + m.rule + " " + m.digest + ", not " + rule_ +
             " " + digest_ + "): a receipt of another delivery";
    if (!m.failure_domain || m.failure_domain->empty()) return "signs no failure domain";
    if (auto k = keys_.find(m.key_id); k != keys_.end())
      return "key " + m.key_id + " already counted (" + k->second + ")";
    if (auto d = domains_.find(*m.failure_domain); d != domains_.end())
      return "failure domain " + Quoted(*m.failure_domain) + " already counted (" + d->second + ")";
    return "";
  }

  std::string id_;
  uint64_t bytes_;
  std::string rule_, digest_;
  std::map<std::string, std::string> keys_, domains_;  // → where counted
  std::vector<const ReceiptCheck*> counted_;
};

void Refuse(ClaimVerdict& c, std::string reason, const std::string& id, uint64_t k) {
  c.verdict = Verdict::kNotSupported;
  c.reason = std::move(reason);
  c.question = "Which " + std::to_string(k) + " receivers in distinct failure domains retained " +
               "delivery " + Quoted(id) + ", and where are their signed retained receipts?";
  c.signed_by.clear();
}

std::string SupportedReason(const std::vector<const ReceiptCheck*>& counted, uint64_t k,
                            size_t members, const std::string& id) {
  std::vector<std::string> keys, domains;
  for (size_t i = 0; i < k; ++i) {
    keys.push_back(counted[i]->key_id);
    domains.push_back(Quoted(*counted[i]->failure_domain));
  }
  const std::string survives =
      counted[0]->survives ? counted[0]->survives->ToString() : std::string("a stated class");
  return Grouped(k) + " of the certificate's " + Grouped(members) +
         " members are verified retained receipts of " + Quoted(id) + " (the same bytes and " +
         "digest) from " + Grouped(k) + " distinct keys (" + Listed(keys, keys.size()) + ") in " +
         Grouped(k) + " distinct signed failure domains (" + Listed(domains, domains.size()) +
         "), the first retained as " + survives + ": " + Quoted(id) + " survives the loss of any " +
         Grouped(k - 1) +
         " of those receivers, by power cut or destruction, when their domains fail "
         "independently." +
         kReplicatedNotEstablished;
}

bool EmbedsReceiptsOf(const SignatureReport& sig, const std::string& id) {
  return std::any_of(sig.receipts.begin(), sig.receipts.end(),
                     [&](const SignatureReport::Entry& e) { return e.check.delivery == id; });
}

}  // namespace

std::optional<uint64_t> ReplicasNeeded(const ClaimVerdict& c) {
  if (c.claim_kind == ClaimKind::kCopies && c.count) return std::max<uint64_t>(*c.count, 1);
  if (c.claim_kind == ClaimKind::kDurable && c.survives &&
      c.survives->cls == Survives::Class::kReplicated)
    return c.survives->replicas;
  return std::nullopt;
}

void JudgeReplicatedClaim(ClaimVerdict& c, uint64_t k, uint64_t bytes, const SignatureReport& sig) {
  const std::string& id = *c.delivery;
  if (!sig.certificate) {
    // Another supplier's bundle without signed evidence stays stated, not signed (R3-4).
    if (EmbedsReceiptsOf(sig, id))
      Refuse(c,
             "The bundle embeds receipts of " + Quoted(id) +
                 " but no replicated certificate (writ.replicated/1): no member receipts show " +
                 ReplicatedName(k) + ".",
             id, k);
    return;
  }
  const CertificateCheck& cert = *sig.certificate;
  if (!cert.problem.empty())
    return Refuse(c, "The bundle's certificate cannot be read: " + cert.problem + ".", id, k);
  MemberCount count(cert, id, bytes);
  std::vector<std::string> why_not;
  for (const ReceiptCheck& m : cert.members) {
    const std::string why = count.Add(m);
    if (!why.empty()) why_not.push_back(m.where + " " + why);
  }
  const auto& counted = count.counted();
  std::string not_counted;
  for (const std::string& w : why_not) not_counted += (not_counted.empty() ? "" : "; ") + w;
  if (!not_counted.empty()) not_counted = " Not counted: " + not_counted + ".";
  if (counted.size() < k) {
    return Refuse(c,
                  "Only " + Grouped(counted.size()) + " of the certificate's " +
                      Grouped(cert.members.size()) + " members count toward " + ReplicatedName(k) +
                      " for " + Quoted(id) +
                      " (verified retained receipts of its bytes from distinct keys in distinct "
                      "signed failure domains)." +
                      not_counted,
                  id, k);
  }
  c.reason = SupportedReason(counted, k, cert.members.size(), id) + not_counted;
  c.signed_by.clear();
  for (size_t i = 0; i < k; ++i) c.signed_by.push_back(counted[i]->key_id);
}

}  // namespace writ::audit::internal
