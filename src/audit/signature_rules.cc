// Revision 3 (docs/audit.md): claims against the receipts a bundle embeds, as a layer that
// verifies signatures checked them.
#include <algorithm>
#include <map>

#include "audit/replicated_rules.h"
#include "audit/sentences.h"
#include "writ/audit.h"

namespace writ::audit {
namespace {

using internal::Quoted;
using Entry = SignatureReport::Entry;
using State = ReceiptCheck::State;

constexpr Survives kSignedDurableFloor{Survives::Class::kProcessRestart, 0};

// The rung of the receipt a claim of this kind is drawn from; "" when no receipt attests it.
std::string_view BackingRung(ClaimKind kind) {
  switch (kind) {
    case ClaimKind::kWorkRequestsSucceeded:
    case ClaimKind::kDeliveriesTransferred: return "transport";
    case ClaimKind::kPlaced:
    case ClaimKind::kNotified: return "received";
    case ClaimKind::kValidated: return "validated";
    case ClaimKind::kProcessed: return "processed";
    case ClaimKind::kDurable: return "retained";
    default: return "";
  }
}

std::string Named(const Entry& e) {
  return e.check.where + " (" + e.check.rung + " receipt" +
         (e.check.key_id.empty() ? "" : ", key " + e.check.key_id) + ")";
}

void AddKey(std::vector<std::string>& keys, const std::string& key) {
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
}

void Unsupport(ClaimVerdict& c, std::string reason, std::string question) {
  c.verdict = Verdict::kNotSupported;
  c.reason = std::move(reason);
  c.question = std::move(question);
  c.signed_by.clear();
}

class SignedClaimJudge {
 public:
  SignedClaimJudge(const SignatureReport& sig, const std::vector<DeliveryReport>& deliveries)
      : sig_(sig) {
    for (const DeliveryReport& d : deliveries) bytes_.emplace(d.id, d.bytes);
  }

  void Judge(ClaimVerdict& c) const {
    if (c.verdict != Verdict::kSupported) return;
    if (auto k = internal::ReplicasNeeded(c); k && c.delivery)
      return internal::JudgeReplicatedClaim(c, *k, bytes_.at(*c.delivery), sig_);
    const std::string_view rung = BackingRung(c.claim_kind);
    if (rung.empty()) return;
    if (c.delivery) {
      JudgeAboutDelivery(c, rung);
    } else {
      JudgeCount(c);
    }
  }

 private:
  bool Backs(const Entry& e, std::string_view rung) const {
    return e.attributed && e.check.rung == rung;
  }

  // A verified receipt about the delivery that gives it another size contradicts every claim
  // about it; a retained one promising less contradicts a durable claim.
  void JudgeAboutDelivery(ClaimVerdict& c, std::string_view rung) const {
    const std::string& id = *c.delivery;
    const uint64_t bytes = bytes_.at(id);
    const Survives needed =
        c.survives ? std::max(*c.survives, kSignedDurableFloor) : kSignedDurableFloor;
    const Entry* weaker = nullptr;
    const Entry* invalid = nullptr;
    std::vector<std::string> keys;
    for (const Entry& e : sig_.receipts) {
      if (!e.attributed || e.check.delivery != id) continue;
      if (e.check.state == State::kVerified && e.check.bytes != bytes) {
        return Unsupport(c,
                         "The signed " + Named(e) + " says " + Quoted(id) + " is " +
                             std::to_string(e.check.bytes) + " bytes; the bundle says " +
                             std::to_string(bytes) + ".",
                         "Which size of delivery " + Quoted(id) +
                             " is true, and why does the "
                             "signed receipt disagree with the bundle?");
      }
      if (!Backs(e, rung)) continue;
      if (e.check.state == State::kInvalid) invalid = invalid ? invalid : &e;
      if (e.check.state != State::kVerified) continue;
      if (c.claim_kind == ClaimKind::kDurable &&
          !(e.check.survives && *e.check.survives >= needed)) {
        weaker = weaker ? weaker : &e;
        continue;
      }
      AddKey(keys, e.check.key_id);
    }
    if (keys.empty() && weaker) {
      return Unsupport(c,
                       "The signed " + Named(*weaker) + " promises only that " + Quoted(id) +
                           " survives " +
                           (weaker->check.survives ? weaker->check.survives->ToString()
                                                   : std::string("nothing stated")) +
                           "; the claim needs " + needed.ToString() + ".",
                       "Which failure does delivery " + Quoted(id) +
                           " survive: the signed receipt or the bundle's promise?");
    }
    if (keys.empty() && invalid) {
      return Unsupport(c,
                       "The embedded " + Named(*invalid) +
                           " it is drawn from does not verify: " + invalid->check.problem + ".",
                       "Who altered the " + invalid->check.rung + " receipt for delivery " +
                           Quoted(id) + ", and where is the receipt as it was signed?");
    }
    c.signed_by = std::move(keys);
  }

  // Counts: the verified transport receipts of this bundle's deliveries attest them.
  void JudgeCount(ClaimVerdict& c) const {
    if (!c.count) return;
    uint64_t deliveries = 0, chunks = 0;
    std::vector<std::string> keys, seen;
    for (const Entry& e : sig_.receipts) {
      if (!Backs(e, "transport") || e.check.state != State::kVerified) continue;
      AddKey(keys, e.check.key_id);
      if (std::find(seen.begin(), seen.end(), e.check.delivery) == seen.end()) {
        seen.push_back(e.check.delivery);
        ++deliveries;
      }
      chunks += e.check.observed_chunks.value_or(0);
    }
    const uint64_t attested =
        c.claim_kind == ClaimKind::kDeliveriesTransferred ? deliveries : chunks;
    if (attested >= *c.count) c.signed_by = std::move(keys);
  }

  const SignatureReport& sig_;
  std::map<std::string, uint64_t> bytes_;
};

}  // namespace

std::string_view ToString(ReceiptCheck::State value) {
  switch (value) {
    case State::kVerified: return "verified";
    case State::kInvalid: return "invalid";
    case State::kNotSigned: return "not_signed";
    case State::kUnpinned: return "unpinned";
  }
  return "invalid";
}

void ApplyReceiptChecks(AuditReport& report, const std::vector<ReceiptCheck>& checks, bool pinned) {
  ApplyReceiptChecks(report, checks, pinned, std::nullopt);
}

void ApplyReceiptChecks(AuditReport& report, const std::vector<ReceiptCheck>& checks, bool pinned,
                        const std::optional<CertificateCheck>& certificate) {
  SignatureReport sig;
  sig.pinned = pinned;
  sig.certificate = certificate;
  for (const ReceiptCheck& check : checks) {
    Entry e{check, false};
    for (const DeliveryReport& d : report.deliveries) e.attributed |= d.id == check.delivery;
    if (e.attributed && check.state == State::kVerified) {
      ++sig.verified;
      AddKey(sig.keys, check.key_id);
    }
    sig.receipts.push_back(std::move(e));
  }
  const SignedClaimJudge judge(sig, report.deliveries);
  for (ClaimVerdict& c : report.claims) {
    const bool was_supported = c.verdict == Verdict::kSupported;
    judge.Judge(c);
    const bool added = was_supported && c.verdict == Verdict::kNotSupported &&
                       std::find(report.questions.begin(), report.questions.end(), c.question) ==
                           report.questions.end();
    if (added) report.questions.push_back(c.question);
  }
  report.signatures = std::move(sig);
}

}  // namespace writ::audit
