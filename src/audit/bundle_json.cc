// BundleToJson: an EvidenceBundle written as the writ.evidence/1 document that
// ParseBundle reads back. writ's own evidence (writ send --evidence) goes
// through here, so what writ states is what its audit reads.
#include <nlohmann/json.hpp>

#include "writ/audit.h"

namespace writ::audit {
namespace {

using ordered = nlohmann::ordered_json;

template <typename T>
ordered OrNull(const std::optional<T>& value) {
  return value ? ordered(*value) : ordered();
}

template <typename Enum>
ordered NameOrNull(const std::optional<Enum>& value) {
  return value ? ordered(ToString(*value)) : ordered();
}

// Sets `key` only when the field is stated.
template <typename T>
void SetStated(ordered& object, const char* key, const std::optional<T>& value) {
  if (value) object[key] = *value;
}

std::string_view AckResultName(AckResult result) {
  switch (result) {
    case AckResult::kValidated: return "validated";
    case AckResult::kProcessed: return "processed";
    case AckResult::kFailed: return "failed";
  }
  return "failed";
}

ordered ContextJson(const Context& c) {
  return ordered{{"operation", NameOrNull(c.operation)},
                 {"transport", NameOrNull(c.transport)},
                 {"device", OrNull(c.device)},
                 {"memory_type", NameOrNull(c.memory_type)},
                 {"software_release", OrNull(c.software_release)},
                 {"completion_level", NameOrNull(c.completion_level)}};
}

ordered DeliveryJson(const Delivery& d) {
  ordered portions = ordered::array();
  for (const Portion& p : d.portions) {
    ordered portion{{"wr_id", p.wr_id}};
    SetStated(portion, "offset", p.offset);
    portion["bytes"] = p.bytes;
    portions.push_back(std::move(portion));
  }
  return ordered{{"id", d.id}, {"bytes", d.bytes}, {"portions", std::move(portions)}};
}

ordered RecordJson(const WorkCompletion& r) {
  ordered record{{"wr_id", r.wr_id}, {"status", r.status}};
  if (r.success_detail) {  // rule 2: an error record has nothing else to say
    SetStated(record, "opcode", r.success_detail->opcode);
    record["byte_len"] = OrNull(r.success_detail->byte_len);
  }
  record["qp_num"] = OrNull(r.qp_num);
  record["vendor_err"] = OrNull(r.vendor_err);
  return record;
}

ordered NotificationJson(const Notification& n) {
  ordered out{{"delivery", OrNull(n.delivery)}, {"kind", OrNull(n.kind)}, {"imm", OrNull(n.imm)}};
  SetStated(out, "portion", n.portion);
  return out;
}

ordered AckJson(const Acknowledgement& a) {
  return ordered{{"label", OrNull(a.label)},
                 {"delivery", OrNull(a.delivery)},
                 {"bytes", OrNull(a.bytes)},
                 {"result", a.result ? ordered(AckResultName(*a.result)) : ordered()},
                 {"rule", OrNull(a.rule)}};
}

ordered PromiseJson(const RetentionPromise& p) {
  ordered out{{"delivery", OrNull(p.delivery)},
              {"acknowledged_point", OrNull(p.acknowledged_point)},
              {"survives", p.survives ? ordered(p.survives->ToString()) : ordered()},
              {"promise_after_failure", OrNull(p.promise_after_failure)},
              {"evidence", OrNull(p.evidence)}};
  if (p.medium) out["medium"] = ToString(*p.medium);
  return out;
}

ordered ClaimJson(const Claim& c) {
  ordered out{{"id", c.id}, {"kind", c.kind_name}};
  SetStated(out, "count", c.count);
  SetStated(out, "delivery", c.delivery);
  if (c.survives) out["survives"] = c.survives->ToString();
  SetStated(out, "text", c.text);
  return out;
}

template <typename T, typename Write>
ordered ListJson(const std::vector<T>& items, Write write) {
  ordered out = ordered::array();
  for (const T& item : items) out.push_back(write(item));
  return out;
}

}  // namespace

std::string BundleToJson(const EvidenceBundle& b) {
  ordered doc{{"schema", kEvidenceSchema}, {"context", ContextJson(b.context)}};
  doc["deliveries"] = ListJson(b.deliveries, DeliveryJson);
  doc["work_completions"] = ListJson(b.work_completions, RecordJson);
  doc["placement"] = ListJson(b.placement, [](const PlacementEntry& e) {
    return ordered{{"delivery", e.delivery},
                   {"basis", e.basis == PlacementBasis::kObserved ? "observed" : "stipulated"}};
  });
  doc["notifications"] = ListJson(b.notifications, NotificationJson);
  doc["acknowledgements"] = ListJson(b.acknowledgements, AckJson);
  doc["retention_promises"] = ListJson(b.retention_promises, PromiseJson);
  doc["claims"] = ListJson(b.claims, ClaimJson);
  return doc.dump(2, ' ', false, ordered::error_handler_t::replace) + "\n";
}

}  // namespace writ::audit
