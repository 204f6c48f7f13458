// A real receiver (Receiver, Connection, ProgressLoop) and a real sender session (Link,
// DeliveryRun) in one process, each over a FaultInjectingFabric wrapping a FabricNode:
// what a test programs into either decorator is what the delivery meets.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/pattern.h"
#include "fabric/fault_fabric.h"
#include "receiver/receiver_start.h"
#include "requirement.h"
#include "sender/delivery_run.h"
#include "sender/delivery_source.h"
#include "sender/link.h"
#include "sender/session.h"
#include "writ/receiver.h"
#include "writ/sender.h"

namespace writ::seam {

inline std::vector<uint8_t> Pattern(uint64_t stream, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  FillPattern(stream, 0, out.data(), out.size());
  return out;
}

inline std::vector<std::string> RungsOf(const DeliveryOutcome& out) {
  std::vector<std::string> rungs;
  for (const Receipt& r : out.receipts) rungs.emplace_back(ReceiptRungName(r.rung));
  return rungs;
}

class SeamRig {
 public:
  explicit SeamRig(std::string provider) : provider_(std::move(provider)) {
    char dir[] = "/tmp/writ-seam-XXXXXX";
    if (mkdtemp(dir) != nullptr) dir_ = dir;
  }
  ~SeamRig() {
    link_.reset();
    if (receiver_) (void)receiver_->Stop();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  // Starts the receiver (tests skip when the provider cannot open here).
  Status Start(ReceiverOptions options = {},
               std::chrono::milliseconds progress_stuck_after = receiver::kProgressStuckAfter) {
    options.provider = provider_;
    options.listen_host = "127.0.0.1";
    options.identity_dir = dir_ + "/identity";
    options.window_pool_bytes = 64ull << 20;
    options.window_bytes = 32ull << 20;
    auto started = receiver::StartReceiver(
        std::move(options),
        fabric::FaultInjectingFabric::Wrapping(fabric::OpenFabricNode,
                                               [this](fabric::FaultInjectingFabric& f) {
                                                 target_ = &f;
                                                 if (hide_wait_objects_) f.HideWaitObjects();
                                               }),
        "", progress_stuck_after);
    if (!started.ok()) return started.status();
    receiver_ = std::move(started).value();
    return Status::Ok();
  }

  // The receiver's fabric says it has no wait objects (as shm): its progress loop naps, and
  // its thread alone polls. Before Start.
  void HideWaitObjects() { hide_wait_objects_ = true; }

  Status Connect(uint32_t depth) {
    SessionOptions options;
    options.to = receiver_->listen_address();
    options.depth = depth;
    auto link = sender::Link::Open(
        options,
        fabric::FaultInjectingFabric::Wrapping(
            fabric::OpenFabricNode, [this](fabric::FaultInjectingFabric& f) { initiator_ = &f; }));
    if (!link.ok()) return link.status();
    link_ = std::move(link).value();
    return Status::Ok();
  }

  // One delivery of `bytes` over the session, as Sender::Impl runs it: a broken session
  // closes its fabric before the source goes away.
  DeliveryOutcome Deliver(std::span<const uint8_t> bytes, const DeliveryOptions& options) {
    return Deliver(sender::DeliverySource::FromBytes(bytes, options.id), options);
  }
  DeliveryOutcome Deliver(sender::DeliverySource source, const DeliveryOptions& options) {
    DeliveryOutcome out;
    out.status = sender::CheckDeliveryOptions(options);
    if (!out.status.ok()) return out;
    sender::PreparedDelivery prepared;
    out.status = sender::Prepare(std::move(source), options, nullptr, out, prepared);
    if (!out.status.ok()) return out;
    sender::DeliveryRun run(*link_, nullptr, options, prepared, out, last_id_);
    out.status = run.Run();
    if (run.announced()) last_id_ = out.delivery.id;
    broken_ = run.broken();
    if (broken_) (void)link_->Close();
    return out;
  }

  // A sender session (its own thread, as Sender runs it) over the link Connect opened.
  Result<std::unique_ptr<sender::Session>> OpenSession(uint32_t max_in_flight) {
    auto session =
        std::make_unique<sender::Session>(std::move(link_), nullptr, nullptr, max_in_flight);
    WRIT_RETURN_IF_ERROR(session->Start());
    return session;
  }

  // Queues a delivery of `bytes` on `session`, as Sender::SubmitBytes does.
  static DeliveryHandle Submit(sender::Session& session, std::span<const uint8_t> bytes,
                               const DeliveryOptions& options) {
    auto sub = std::make_unique<sender::Submission>();
    sub->options = options;
    sub->out.status = sender::Prepare(sender::DeliverySource::FromBytes(bytes, options.id),
                                      sub->options, nullptr, sub->out, sub->prepared);
    DeliveryHandle handle(sub->state);
    if (!sub->out.status.ok()) {
      sub->state->Set(std::move(sub->out));
      return handle;
    }
    session.Submit(std::move(sub));
    return handle;
  }

  // Stops the receiver: its progress thread has read every record it will read.
  Status StopReceiver() { return receiver_->Stop(); }

  Receiver& receiver() { return *receiver_; }
  fabric::FaultInjectingFabric& initiator() { return *initiator_; }
  fabric::FaultInjectingFabric& target() { return *target_; }
  bool broken() const { return broken_; }
  const std::string& provider() const { return provider_; }

 private:
  std::string provider_;
  std::string dir_;
  std::unique_ptr<Receiver> receiver_;
  std::unique_ptr<sender::Link> link_;
  fabric::FaultInjectingFabric* target_ = nullptr;
  fabric::FaultInjectingFabric* initiator_ = nullptr;
  std::string last_id_;
  bool broken_ = false;
  bool hide_wait_objects_ = false;
};

// The options every delivery here starts from: small chunks, so a delivery has several
// writes, and every rung and the volatile retention awaited.
inline DeliveryOptions SmallChunks(const std::string& id, uint64_t chunk_size = 64 << 10) {
  DeliveryOptions options;
  options.id = id;
  options.chunk_size = chunk_size;
  options.until = Rung::kValidated;
  return options;
}

}  // namespace writ::seam

// Starts `rig` (a SeamRig) or fails the test naming why (tcp, tcp;ofi_rxm and shm are
// expected wherever these run; see tests/support/requirement.h).
#define SEAM_START(rig, ...)                                                                     \
  do {                                                                                           \
    ::writ::Status started_ = (rig).Start(__VA_ARGS__);                                          \
    REQUIRE_OR_FAIL(started_.ok(), "the " << (rig).provider() << " provider cannot serve here: " \
                                          << started_.ToString());                               \
  } while (0)
