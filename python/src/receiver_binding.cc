// _writ.ReceiverHandle: a running writ::Receiver for Python. Start, stop and shutdown run
// with the GIL released: the receiver's threads take it to run a Python processing step.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "bindings.h"
#include "processing.h"
#include "writ/receiver.h"

namespace writ::python {
namespace {

class ReceiverHandle {
 public:
  explicit ReceiverHandle(std::unique_ptr<Receiver> receiver)
      : address_(receiver->listen_address()),
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

  py::tuple StopNow() {
    Status stopped;
    {
      py::gil_scoped_release nogil;
      stopped = Stop([](Receiver& r) { return r.Stop(); });
    }
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
    return Answer(stopped,
                  py::make_tuple(summary.drained, summary.aborted, summary.deadline_passed));
  }

 private:
  // Runs `how` once and destroys the receiver (its threads end); later calls do nothing.
  template <typename How>
  Status Stop(How how) {
    std::lock_guard lock(mutex_);
    if (!receiver_) return Status::Ok();
    Status stopped = how(*receiver_);
    receiver_.reset();
    return stopped;
  }

  const std::string address_, provider_, key_id_, public_key_;
  std::mutex mutex_;
  std::unique_ptr<Receiver> receiver_;  // null once stopped
};

struct StartArgs {
  std::string host;
  uint16_t port = 0;
  std::string provider, data, out, identity, allow, receiver_id;
  uint64_t max_delivery_bytes = 0, window_pool_bytes = 0, window_bytes = 0;
  uint64_t volatile_capacity_bytes = 0;
  py::object processing;
  std::string processing_name;
};

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
  if (!args.processing.is_none()) {
    options.processing = PythonStep(args.processing_name, args.processing);
  }
  Result<std::unique_ptr<Receiver>> receiver = [&] {
    py::gil_scoped_release nogil;
    return Receiver::Start(std::move(options));
  }();
  if (!receiver.ok()) return Answer(receiver.status());
  return Answer(Status::Ok(), py::cast(std::make_unique<ReceiverHandle>(std::move(*receiver))));
}

}  // namespace

void BindReceiver(py::module_& m) {
  BindDelivery(m);
  py::class_<ReceiverHandle>(m, "ReceiverHandle")
      .def_property_readonly("address", &ReceiverHandle::address)
      .def_property_readonly("provider", &ReceiverHandle::provider)
      .def_property_readonly("key_id", &ReceiverHandle::key_id)
      .def_property_readonly("public_key", &ReceiverHandle::public_key)
      .def("stop", &ReceiverHandle::StopNow)
      .def("shutdown", &ReceiverHandle::Shutdown, py::arg("drain"));
  m.def(
      "start_receiver",
      [](std::string host, uint16_t port, std::string provider, std::string data, std::string out,
         std::string identity, std::string allow, std::string receiver_id,
         uint64_t max_delivery_bytes, uint64_t window_pool_bytes, uint64_t window_bytes,
         uint64_t volatile_capacity_bytes, py::object processing, std::string processing_name) {
        return Start(StartArgs{host, port, provider, data, out, identity, allow, receiver_id,
                               max_delivery_bytes, window_pool_bytes, window_bytes,
                               volatile_capacity_bytes, processing, processing_name});
      },
      py::arg("host"), py::arg("port"), py::arg("provider"), py::arg("data"), py::arg("out"),
      py::arg("identity"), py::arg("allow"), py::arg("receiver_id"), py::arg("max_delivery_bytes"),
      py::arg("window_pool_bytes"), py::arg("window_bytes"), py::arg("volatile_capacity_bytes"),
      py::arg("processing"), py::arg("processing_name"));
}

}  // namespace writ::python
