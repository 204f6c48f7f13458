#include "receiver/reservation.h"

#include <utility>

#include "receiver/receiver_core.h"

namespace writ::receiver {

std::optional<Reservation> Reservation::Take(ReceiverCore& core, std::string sender,
                                             SenderUsage what) {
  if (!core.Reserve(sender, what)) return std::nullopt;
  return Reservation(core, std::move(sender), what);
}

Reservation::Reservation(ReceiverCore& core, std::string sender, SenderUsage what)
    : core_(&core), sender_(std::move(sender)), what_(what) {}

Reservation::Reservation(Reservation&& other) noexcept
    : core_(std::exchange(other.core_, nullptr)),
      sender_(std::move(other.sender_)),
      what_(other.what_) {}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    GiveBack();
    core_ = std::exchange(other.core_, nullptr);
    sender_ = std::move(other.sender_);
    what_ = other.what_;
  }
  return *this;
}

Reservation::~Reservation() { GiveBack(); }

void Reservation::GiveBack() {
  if (core_ != nullptr) core_->Unreserve(sender_, what_);
  core_ = nullptr;
}

std::optional<IdClaim> IdClaim::Take(ReceiverCore& core, std::string id) {
  if (!core.ClaimId(id)) return std::nullopt;
  return IdClaim(core, std::move(id));
}

IdClaim::IdClaim(ReceiverCore& core, std::string id) : core_(&core), id_(std::move(id)) {}

IdClaim::IdClaim(IdClaim&& other) noexcept
    : core_(std::exchange(other.core_, nullptr)), id_(std::move(other.id_)) {}

IdClaim::~IdClaim() {
  if (core_ != nullptr) core_->ReleaseId(id_);
}

}  // namespace writ::receiver
