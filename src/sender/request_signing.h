// A sender's identity signs what it asks of one receiver: its announces (who may write)
// and its queries (who may read what is held). The receiver id is part of the signed
// bytes, so a signature is good for that receiver only; nonce and time stop replays.
#pragma once

#include <span>
#include <string>

#include "protocol/messages.h"
#include "receipt/identity.h"
#include "writ/status.h"

namespace writ::sender {

Status SignAnnounce(const receipt::Identity& identity, const std::string& receiver_id,
                    protocol::Announce& announce);
// An announce to be signed with others (SignAnnounces): its key, a fresh nonce and the
// time, its signature left empty.
Status PrepareAnnounceSignature(const receipt::Identity& identity, protocol::Announce& announce);
// Announces prepared above, signed together: one Ed25519 signature over the Merkle root of
// their signing bytes, each given its leaf's group form (protocol/announce_group.h); one
// alone is signed plainly.
Status SignAnnounces(const receipt::Identity& identity, const std::string& receiver_id,
                     std::span<protocol::Announce* const> announces);
Status SignQuery(const receipt::Identity& identity, const std::string& receiver_id,
                 protocol::Query& query);
Status SignRemove(const receipt::Identity& identity, const std::string& receiver_id,
                  protocol::Remove& remove);
// The commit of a signed announce, bound to it by the announce's nonce.
Status SignCommit(const receipt::Identity& identity, const std::string& receiver_id,
                  const std::vector<uint8_t>& announce_nonce, protocol::Commit& commit);

}  // namespace writ::sender
