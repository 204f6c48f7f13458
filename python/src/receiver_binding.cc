// _writ.ReceiverHandle: a running writ::Receiver for Python. Start, stop, shutdown and reads
// run with the GIL released: the receiver's threads take it to run a Python processing step.
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <shared_mutex>
#include <string>

#include "arrivals.h"
#include "bindings.h"
#include "exported_buffer.h"
#include "exposures.h"
#include "processing.h"
#include "writ/receiver.h"
#include "writ/vocabulary.h"

namespace writ::python {
namespace {

// A retained delivery's bytes in place (ReceiverHandle.view): a read-only buffer that keeps
// them while it, or a memoryview or NumPy array made from it, lives.
struct HeldBuffer {
  HeldBytes held;
};

py::buffer_info HeldBufferInfo(HeldBuffer& b) {
  static uint8_t empty = 0;  // a zero-length buffer still needs an address
  const uint8_t* data = b.held.bytes.empty() ? &empty : b.held.bytes.data();
  return py::buffer_info(const_cast<uint8_t*>(data), 1, py::format_descriptor<uint8_t>::format(), 1,
                         {static_cast<py::ssize_t>(b.held.bytes.size())}, {py::ssize_t{1}},
                         /*readonly=*/true);
}

class ReceiverHandle {
 public:
  ReceiverHandle(std::unique_ptr<Receiver> receiver, std::shared_ptr<Arrivals> arrivals)
      : arrivals_(std::move(arrivals)),
        address_(receiver->listen_address()),
        provider_(receiver->provider()),
        key_id_(receiver->key_id()),
        public_key_(receiver->public_key_hex()),
        receiver_(std::move(receiver)) {}
  ~ReceiverHandle() {
    py::gil_scoped_release nogil;
    (void)Stop([](Receiver& r) { return r.Stop(); });
  }

  // Readable after the receiver stopped too.
  const std::string& address() const { return address_; }
  const std::string& provider() const { return provider_; }
  const std::string& key_id() const { return key_id_; }
  const std::string& public_key() const { return public_key_; }

  // (code, message, (id, bytes, retention, rule, digest, region lengths, receipts JSON,
  // held until)).
  py::tuple Held(const std::string& id) {
    Result<StoredDelivery> held = Status::Ok();
    {
      py::gil_scoped_release nogil;
      std::shared_lock lock(mutex_);
      held = receiver_ ? receiver_->Held(id) : Result<StoredDelivery>(Stopped());
    }
    if (!held.ok()) return Answer(held.status());
    return Answer(Status::Ok(),
                  py::make_tuple(held->id, held->bytes, std::string(RetentionName(held->retention)),
                                 held->rule, held->digest_hex, held->region_lengths, held->receipts,
                                 held->held_until));
  }

  // (code, message, count): fills a writable C-contiguous buffer from `offset` of `id`.
  py::tuple ReadInto(const std::string& id, uint64_t offset, const py::object& target) {
    ExportedBuffer buffer(target, ExportedBuffer::Access::kWrite);
    if (!buffer.ok()) return Answer(Status::InvalidArgument("read: out: " + buffer.error()));
    Status read;
    {
      py::gil_scoped_release nogil;
      std::shared_lock lock(mutex_);
      read = receiver_ ? receiver_->Read(id, offset, buffer.bytes()) : Stopped();
    }
    return Answer(read, py::int_(buffer.bytes().size()));
  }

  // (code, message, HeldBytes): `length` bytes of `id` from `offset`, in place.
  py::tuple View(const std::string& id, uint64_t offset, uint64_t length) {
    Result<HeldBytes> held = Status::Ok();
    {
      py::gil_scoped_release nogil;
      std::shared_lock lock(mutex_);
      held = receiver_ ? receiver_->View(id, offset, length) : Result<HeldBytes>(Stopped());
    }
    if (!held.ok()) return Answer(held.status());
    return Answer(Status::Ok(), py::cast(HeldBuffer{std::move(*held)}));
  }

  // (code, message, (id, retention, bytes, held until, promise broken)).
  py::tuple Remove(const std::string& id, bool force) {
    Result<RemovedDelivery> removed = Status::Ok();
    {
      py::gil_scoped_release nogil;
      std::shared_lock lock(mutex_);
      removed = receiver_ ? receiver_->Remove(id, force) : Result<RemovedDelivery>(Stopped());
    }
    if (!removed.ok()) return Answer(removed.status());
    return Answer(Status::Ok(),
                  py::make_tuple(removed->id, std::string(RetentionName(removed->retention)),
                                 removed->bytes, removed->held_until, removed->promise_broken));
  }

  // (code, message, None): `array` exposed as target `name` (Receiver::Expose).
  py::tuple Expose(const std::string& name, const py::object& array, uint64_t page_size,
                   const py::object& on_delivery) {
    std::shared_lock lock = LockWithoutTheGil();
    if (!receiver_) return Answer(Stopped());
    return exposures_.Expose(*receiver_, name, array, page_size, on_delivery);
  }
  py::tuple Revoke(const std::string& name) {
    std::shared_lock lock = LockWithoutTheGil();
    if (!receiver_) return Answer(Stopped());
    return exposures_.Revoke(*receiver_, name);
  }

  // (id, bytes, rung, retention) of the next delivery retained, or None after `timeout_s`.
  py::object NextArrival(double timeout_s) {
    std::optional<Arrival> next;
    {
      py::gil_scoped_release nogil;
      next = arrivals_->Next(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    }
    if (!next) return py::none();
    return py::make_tuple(next->id, next->bytes, next->rung, next->retention);
  }
  uint64_t arrivals_dropped() { return arrivals_->dropped(); }

  py::tuple StopNow() {
    Status stopped;
    {
      py::gil_scoped_release nogil;
      stopped = Stop([](Receiver& r) { return r.Stop(); });
    }
    exposures_.Clear();
    return Answer(stopped);
  }

  // (code, message, (drained ids, aborted ids, deadline passed)).
  py::tuple Shutdown(double drain_s) {
    ShutdownSummary summary;
    Status stopped;
    {
      py::gil_scoped_release nogil;
      stopped = Stop([&](Receiver& r) {
        auto done = r.Shutdown(std::chrono::milliseconds(static_cast<int64_t>(drain_s * 1000)));
        if (!done.ok()) return done.status();
        summary = std::move(*done);
        return Status::Ok();
      });
    }
    exposures_.Clear();
    return Answer(stopped,
                  py::make_tuple(summary.drained, summary.aborted, summary.deadline_passed));
  }

 private:
  // Runs `how` once and destroys the receiver (its threads end); later calls do nothing.
  template <typename How>
  Status Stop(How how) {
    std::unique_lock lock(mutex_);
    if (!receiver_) return Status::Ok();
    Status stopped = how(*receiver_);
    receiver_.reset();
    arrivals_->Close();
    return stopped;
  }

  static Status Stopped() { return Status::InvalidArgument("this Receiver is closed"); }
  // A shared hold of the receiver, taken without the GIL (a stop holding it alone may be
  // waiting for a receiver thread that needs the GIL), returned with the GIL held again.
  std::shared_lock<std::shared_mutex> LockWithoutTheGil() {
    std::shared_lock lock(mutex_, std::defer_lock);
    py::gil_scoped_release nogil;
    lock.lock();
    return lock;
  }

  std::shared_ptr<Arrivals> arrivals_;
  const std::string address_, provider_, key_id_, public_key_;
  std::shared_mutex mutex_;             // reads share it; stopping takes it alone
  std::unique_ptr<Receiver> receiver_;  // null once stopped
  Exposures exposures_;                 // with the GIL held; emptied once stopped
};

struct StartArgs {
  std::string host;
  uint16_t port = 0;
  std::string provider, data, out, identity, allow, receiver_id;
  uint64_t max_delivery_bytes = 0, window_pool_bytes = 0, window_bytes = 0;
  uint64_t volatile_capacity_bytes = 0;
  py::object processing;
  std::string processing_name;
  py::dict limits;  // ring_slots, ring_slot_size, max_deliveries_per_sender, arrivals
};

// The limits given as a dict of the ReceiverOptions field names (absent: the default).
Status ApplyLimits(const py::dict& limits, ReceiverOptions& options, size_t& arrivals) {
  for (auto item : limits) {
    const std::string name = py::str(item.first);
    const uint64_t value = item.second.cast<uint64_t>();
    if (name == "ring_slots") {
      if (value > 65536) return Status::InvalidArgument("ring_slots: at most 65536");
      options.ring_slots = static_cast<uint32_t>(value);
    } else if (name == "ring_slot_size") {
      options.ring_slot_size = value;
    } else if (name == "max_deliveries_per_sender") {
      options.max_deliveries_per_sender = static_cast<uint32_t>(value);
    } else if (name == "max_deliveries_per_connection") {
      options.max_deliveries_per_connection = static_cast<uint32_t>(value);
    } else if (name == "arrivals") {
      arrivals = static_cast<size_t>(value);
    } else {
      return Status::InvalidArgument("unknown receiver limit " + name);
    }
  }
  return Status::Ok();
}

py::tuple Start(const StartArgs& args) {
  ReceiverOptions options;
  options.listen_host = args.host;
  options.listen_port = args.port;
  options.provider = args.provider;
  options.data_dir = args.data;
  options.out_dir = args.out;
  options.identity_dir = args.identity;
  options.allow_file = args.allow;
  options.receiver_id = args.receiver_id;
  if (args.max_delivery_bytes) options.max_delivery_bytes = args.max_delivery_bytes;
  if (args.window_pool_bytes) options.window_pool_bytes = args.window_pool_bytes;
  if (args.window_bytes) options.window_bytes = args.window_bytes;
  options.volatile_capacity_bytes = args.volatile_capacity_bytes;
  size_t arrivals_capacity = 4096;
  if (Status s = ApplyLimits(args.limits, options, arrivals_capacity); !s.ok()) return Answer(s);
  auto arrivals = std::make_shared<Arrivals>(arrivals_capacity);
  options.on_event = [arrivals](const LogEvent& event) { arrivals->OnEvent(event); };
  // Arrivals are read from each retained delivery's own event, which the receiver emits
  // only when asked to (by default it counts them in one line a second).
  options.log_each_delivery = true;
  if (!args.processing.is_none()) {
    options.processing = PythonStep(args.processing_name, args.processing);
  }
  Result<std::unique_ptr<Receiver>> receiver = [&] {
    py::gil_scoped_release nogil;
    return Receiver::Start(std::move(options));
  }();
  if (!receiver.ok()) return Answer(receiver.status());
  return Answer(Status::Ok(), py::cast(std::make_unique<ReceiverHandle>(std::move(*receiver),
                                                                        std::move(arrivals))));
}

}  // namespace

void BindReceiver(py::module_& m) {
  BindDelivery(m);
  py::class_<HeldBuffer>(m, "HeldBytes", py::buffer_protocol())
      .def_buffer(&HeldBufferInfo)
      .def("__len__", [](const HeldBuffer& b) { return b.held.bytes.size(); });
  py::class_<ReceiverHandle>(m, "ReceiverHandle")
      .def_property_readonly("address", &ReceiverHandle::address)
      .def_property_readonly("provider", &ReceiverHandle::provider)
      .def_property_readonly("key_id", &ReceiverHandle::key_id)
      .def_property_readonly("public_key", &ReceiverHandle::public_key)
      .def("held", &ReceiverHandle::Held, py::arg("id"))
      .def("read_into", &ReceiverHandle::ReadInto, py::arg("id"), py::arg("offset"),
           py::arg("target"))
      .def("view", &ReceiverHandle::View, py::arg("id"), py::arg("offset"), py::arg("length"))
      .def("remove", &ReceiverHandle::Remove, py::arg("id"), py::arg("force"))
      .def("next_arrival", &ReceiverHandle::NextArrival, py::arg("timeout"))
      .def_property_readonly("arrivals_dropped", &ReceiverHandle::arrivals_dropped)
      .def("expose", &ReceiverHandle::Expose, py::arg("name"), py::arg("array"),
           py::arg("page_size"), py::arg("on_delivery"))
      .def("revoke", &ReceiverHandle::Revoke, py::arg("name"))
      .def("stop", &ReceiverHandle::StopNow)
      .def("shutdown", &ReceiverHandle::Shutdown, py::arg("drain"));
  m.def(
      "start_receiver",
      [](std::string host, uint16_t port, std::string provider, std::string data, std::string out,
         std::string identity, std::string allow, std::string receiver_id,
         uint64_t max_delivery_bytes, uint64_t window_pool_bytes, uint64_t window_bytes,
         uint64_t volatile_capacity_bytes, py::object processing, std::string processing_name,
         py::dict limits) {
        return Start(StartArgs{host, port, provider, data, out, identity, allow, receiver_id,
                               max_delivery_bytes, window_pool_bytes, window_bytes,
                               volatile_capacity_bytes, processing, processing_name, limits});
      },
      py::arg("host"), py::arg("port"), py::arg("provider"), py::arg("data"), py::arg("out"),
      py::arg("identity"), py::arg("allow"), py::arg("receiver_id"), py::arg("max_delivery_bytes"),
      py::arg("window_pool_bytes"), py::arg("window_bytes"), py::arg("volatile_capacity_bytes"),
      py::arg("processing"), py::arg("processing_name"), py::arg("limits"));
}

}  // namespace writ::python
