#include "exposures.h"

#include <pybind11/stl.h>

#include <utility>

namespace writ::python {
namespace {

// The callable, shared by the receiver's copy of the options; the last owner drops its
// reference with the GIL (a receiver thread, or a revoke that released it).
std::shared_ptr<py::object> HeldTargetCallback(py::object callable) {
  return std::shared_ptr<py::object>(new py::object(std::move(callable)), [](py::object* o) {
    if (!Py_IsInitialized()) {
      (void)o->release();  // the interpreter is gone: nothing left to decrement
      delete o;
    } else {
      py::gil_scoped_acquire gil;
      delete o;
    }
  });
}

}  // namespace

py::tuple Exposures::Expose(Receiver& receiver, const std::string& name, const py::object& array,
                            uint64_t page_size, const py::object& on_delivery) {
  auto buffer = std::make_unique<ExportedBuffer>(array, ExportedBuffer::Access::kWrite);
  if (!buffer->ok()) return Answer(Status::InvalidArgument("expose: " + buffer->error()));
  ExposeOptions options;
  if (page_size > 0) {
    options.pages = PageGeometry{page_size, buffer->bytes().size() / page_size};
  }
  if (!on_delivery.is_none()) {
    std::shared_ptr<py::object> held = HeldTargetCallback(on_delivery);
    options.on_delivery = [held](const TargetDelivery& d) {
      if (!Py_IsInitialized()) return;
      py::gil_scoped_acquire gil;
      try {
        (*held)(d.target, d.delivery_id, d.offset, d.bytes, d.ok, d.why, d.pages);
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("writ.Receiver.expose on_delivery");
      } catch (...) {  // nothing may leave into the receiver's thread
      }
    };
  }
  Status exposed = receiver.Expose(name, buffer->bytes(), std::move(options));
  if (exposed.ok()) exposed_[name] = std::move(buffer);
  return Answer(exposed);
}

py::tuple Exposures::Revoke(Receiver& receiver, const std::string& name) {
  Status revoked;
  {
    py::gil_scoped_release nogil;
    revoked = receiver.Revoke(name);
  }
  // No write into the buffer can land any more: its export may end.
  if (revoked.ok()) exposed_.erase(name);
  return Answer(revoked);
}

}  // namespace writ::python
