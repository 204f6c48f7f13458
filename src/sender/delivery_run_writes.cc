// DeliveryRun's writes: posting each chunk's RDMA Write as windows and write slots allow,
// reading their completion records, retrying or failing a write, and waiting for those
// still in flight before the run gives its slots back.
#include <algorithm>
#include <thread>

#include "sender/delivery_run.h"

namespace writ::sender {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
// How long a finally failed write waits for the receiver's reason before it is reported
// as a transport failure.
constexpr std::chrono::milliseconds kRefusalGrace{200};

// What the outcome keeps of one completion record: on an error record only the request
// id, status, endpoint and provider error exist.
WorkCompletionRecord RecordOf(const fabric::WorkCompletion& record) {
  WorkCompletionRecord wc;
  wc.request_id = record.request_id();
  wc.ok = record.ok();
  wc.status = record.status().Name();
  wc.endpoint = record.endpoint();
  if (record.ok()) return wc;  // asking a success record for its error builds an error
  if (auto prov = record.provider_error(); prov.ok()) {
    wc.provider_errno = prov->prov_errno;
    wc.provider_error = prov->text;
  }
  return wc;
}

}  // namespace

bool DeliveryRun::CanPost() const {
  if (ready_next_ >= ready_.size()) return false;
  const auto& slots = link_.write_slots();
  return std::any_of(slots.begin(), slots.end(), [](const WriteSlot& s) { return !s.busy(); });
}

Status DeliveryRun::PostReady() {
  std::vector<WriteSlot>& slots = link_.write_slots();
  for (size_t i = 0; i < slots.size() && ready_next_ < ready_.size(); ++i) {
    WriteSlot& slot = slots[i];
    if (slot.busy()) continue;
    if (ring_slot_) {
      WRIT_RETURN_IF_ERROR(PostSlot(slot, i));
      continue;
    }
    const auto [chunk, window] = ready_[ready_next_++];
    slot.chunk = chunk;
    slot.window = window;
    slot.attempt = 0;
    slot.length = std::min(chunk_size_, out_.delivery.bytes - chunk * chunk_size_);
    const bool corrupt =
        prepared_.corrupt_chunk && *prepared_.corrupt_chunk == chunk && slot.length > 0;
    slot.gathered = !corrupt && gather_.Pieces(chunk * chunk_size_, slot.length,
                                               link_.node().provider().iov_limit(), slot.pieces);
    slot.staged = !slot.gathered && (!source_region_.open() || corrupt);
    const uint8_t* read = nullptr;
    if (slot.staged) {
      std::span<uint8_t> bytes(link_.staging_slot(i), slot.length);
      if (Status staged = Stage(chunk, bytes); !staged.ok()) return Fail(staged);
      read = bytes.data();
      if (corrupt) {
        if (Status folded = FoldThrough(chunk, read); !folded.ok()) return Fail(folded);
        bytes[slot.length / 2] ^= 0xFF;  // the delivery's digest no longer matches
      }
    }
    WRIT_RETURN_IF_ERROR(Post(slot, i));
    // After the post: the transport moves this chunk while this thread digests it.
    if (Status folded = FoldThrough(chunk, read); !folded.ok()) return Fail(folded);
  }
  if (ready_next_ == ready_.size()) {
    ready_.clear();
    ready_next_ = 0;
  }
  return Status::Ok();
}

Status DeliveryRun::Post(WriteSlot& slot, size_t index) {
  const Status posted = PostWrite(slot, index);
  if (!posted.ok()) return Broken(posted.Annotate("chunk " + std::to_string(slot.chunk)));
  return posted;
}

Status DeliveryRun::PostWrite(WriteSlot& slot, size_t index) {
  const protocol::Grant& grant = grants_.at(slot.window);
  const uint64_t in_window = slot.chunk - grant.first_chunk;
  fabric::WriteRequest req;
  req.request_id = link_.NextRequestId();
  req.peer = link_.peer();
  if (slot.staged) {
    req.local = &link_.staging_region();
    req.local_offset = link_.staging_offset(index);
  } else if (slot.gathered) {
    req.gather = slot.pieces;
  } else {
    req.local = &source_region_;
    req.local_offset = slot.chunk * chunk_size_;
  }
  if (ring_slot_) {  // the bytes wait in the ring's staging; the notification names the slot
    req.local = &link_.ring().region();
    req.local_offset = uint64_t{*ring_slot_} * link_.ring().ring().slot_size;
  }
  req.length = slot.length;
  req.remote = fabric::RegionDescriptor{grant.remote_address, grant.key, grant.length};
  req.remote_offset = in_window * chunk_size_;
  req.level = opt_.level;
  req.remote_data = (slot.window << 16) | (ring_slot_ ? *ring_slot_ : uint32_t(in_window));
  if (req.remote_offset + req.length > grant.length) {
    return Status::Malformed("does not fit window " + std::to_string(slot.window));
  }
  auto posted = link_.node().PostWrite(req);
  if (!posted.ok()) return posted.status();
  slot.owner = this;
  slot.request_id = req.request_id;
  ++slot.attempt;
  return Status::Ok();
}

Status DeliveryRun::PollCompletions() {
  records_.clear();
  auto polled = link_.node().Poll(records_, 64);
  if (!polled.ok()) return Broken(polled.status());
  idle_spins_ = records_.empty() ? idle_spins_ + 1 : 0;
  std::vector<WriteSlot>& slots = link_.write_slots();
  for (const auto& record : records_) {
    auto slot = std::find_if(slots.begin(), slots.end(), [&](const WriteSlot& s) {
      return s.owner == this && s.request_id == record.request_id();
    });
    if (slot == slots.end()) {
      WorkCompletionRecord wc = RecordOf(record);
      if (!wc.ok) saw_error_record_ = true;  // tcp drops the connection after an error
      wc.chunk = UINT64_MAX;                 // not one of ours: kept as evidence, never counted
      out_.work_completions.push_back(std::move(wc));
      continue;
    }
    // The receiver refuses (full disk, failed validation) before it revokes the delivery's
    // windows, so a write failing on a revoked window usually has its reason waiting on the
    // control connection: read it before retrying or reporting a transport failure.
    if (TakeRecord(*slot, record)) continue;
    WRIT_RETURN_IF_ERROR(ReadControl(slot->attempt < opt_.max_attempts ? 0ms : kRefusalGrace));
    WRIT_RETURN_IF_ERROR(RetryOrFail(*slot));
  }
  return Status::Ok();
}

Status DeliveryRun::OnRecord(WriteSlot& slot, const fabric::WorkCompletion& record) {
  if (TakeRecord(slot, record)) return Status::Ok();
  return RetryOrFail(slot);
}

bool DeliveryRun::TakeRecord(WriteSlot& slot, const fabric::WorkCompletion& record) {
  WorkCompletionRecord wc = RecordOf(record);
  if (!wc.ok) saw_error_record_ = true;  // tcp drops the connection after an error
  wc.chunk = slot.chunk;
  wc.attempt = slot.attempt;
  out_.work_completions.push_back(wc);
  last_progress_ = Clock::now();
  out_.portion_request_ids[slot.chunk] = slot.request_id;
  slot.owner = nullptr;
  if (record.ok()) {
    if (!slot.staged) prepared_.source->Release(slot.chunk * chunk_size_, slot.length);
    ++chunks_done_;
    bytes_done_ += slot.length;
    if (attests_writes_ && !ring_slot_) {
      written_.emplace_back(
          slot.window, static_cast<uint32_t>(slot.chunk - grants_.at(slot.window).first_chunk));
    }
    if (opt_.progress) opt_.progress(bytes_done_, out_.delivery.bytes);
    return true;
  }
  return false;  // the error record stays in the evidence either way
}

Status DeliveryRun::RetryOrFail(WriteSlot& slot) {
  Status retried = Status::Ok();
  if (slot.attempt < opt_.max_attempts) {
    retried = PostWrite(slot, static_cast<size_t>(&slot - link_.write_slots().data()));
    if (retried.ok()) return retried;
  }
  write_failed_ = true;
  const WorkCompletionRecord& wc = out_.work_completions.back();
  std::string why = "chunk " + std::to_string(slot.chunk) + " failed: " + wc.status + " (" +
                    wc.provider_error + ") after " + std::to_string(slot.attempt) + " attempt(s)";
  // A retry refused (tcp drops the connection after an error record, and its FI_SHUTDOWN may
  // be read first): the failure still names the chunk's own error record.
  if (!retried.ok()) return Broken(retried.Annotate(why + "; its retry could not be posted"));
  // A zero-copy write from a file truncated meanwhile fails in the transport (tcp: EFAULT).
  if (auto now = prepared_.source->CurrentKey(); now.ok() && now->size < out_.delivery.bytes) {
    why += "; the delivery's file shrank while it was being sent (now " +
           std::to_string(now->size) + " bytes)";
  }
  return Broken(Status::Transport(why));
}

Status DeliveryRun::Quiesce(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!WritesIdle()) {
    if (broken()) return Status::Transport("the fabric connection reported an error");
    if (Clock::now() > deadline) {
      broken_ = true;
      return Status::Timeout("writes still in flight after " + std::to_string(timeout.count()) +
                             " ms");
    }
    records_.clear();
    auto polled = link_.node().Poll(records_, 64);
    if (!polled.ok()) {
      broken_ = true;
      return polled.status();
    }
    for (const auto& record : records_) {
      for (WriteSlot& slot : link_.write_slots()) {
        if (slot.owner != this || slot.request_id != record.request_id()) continue;
        slot.owner = nullptr;
        WorkCompletionRecord wc = RecordOf(record);
        wc.chunk = slot.chunk;
        wc.attempt = slot.attempt;
        if (!wc.ok) saw_error_record_ = true;
        out_.work_completions.push_back(std::move(wc));
      }
    }
    if (records_.empty()) std::this_thread::sleep_for(50us);
  }
  return broken() ? Status::Transport("the fabric connection reported an error") : Status::Ok();
}

}  // namespace writ::sender
