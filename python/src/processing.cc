#include "processing.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "exported_buffer.h"

namespace writ::python {
namespace {

// What the callable is shown. Its id, size and digest stay readable afterwards; its bytes
// only while the step runs (the receiver's view of them ends with the step).
class Delivery {
 public:
  explicit Delivery(const DeliveryView& view)
      : id_(view.id), digest_(view.digest_hex), bytes_(view.bytes), view_(&view) {}
  void Expire() { view_ = nullptr; }

  const std::string& id() const { return id_; }
  const std::string& digest() const { return digest_; }
  uint64_t bytes() const { return bytes_; }
  bool stop_requested() const { return view_ != nullptr && view_->stop_requested(); }

  // (code, message, bytes): `size` bytes from `offset` (negative: to the end).
  py::tuple Read(uint64_t offset, int64_t size) {
    if (Status s = Readable(offset); !s.ok()) return Answer(s);
    const uint64_t left = bytes_ - offset;
    const uint64_t n = size < 0 ? left : std::min<uint64_t>(static_cast<uint64_t>(size), left);
    auto out = py::reinterpret_steal<py::bytes>(
        PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n)));
    if (!out) throw py::error_already_set();
    auto* data = reinterpret_cast<uint8_t*>(PyBytes_AS_STRING(out.ptr()));
    return Answer(Fill(offset, std::span<uint8_t>(data, n)), out);
  }

  // (code, message, count): fills a writable buffer (a NumPy array...) from `offset`.
  py::tuple ReadInto(const py::object& target, uint64_t offset) {
    if (Status s = Readable(offset); !s.ok()) return Answer(s);
    ExportedBuffer buffer(target, ExportedBuffer::Access::kWrite);
    if (!buffer.ok()) return Answer(Status::InvalidArgument("readinto: " + buffer.error()));
    const uint64_t n = std::min<uint64_t>(buffer.bytes().size(), bytes_ - offset);
    return Answer(Fill(offset, buffer.bytes().first(n)), py::int_(n));
  }

 private:
  Status Readable(uint64_t offset) const {
    if (view_ == nullptr) {
      return Status::InvalidArgument(
          "the delivery's bytes can be read only while the processing step runs");
    }
    if (offset > bytes_) return Status::InvalidArgument("offset past the delivery's end");
    return Status::Ok();
  }

  Status Fill(uint64_t offset, std::span<uint8_t> out) {
    py::gil_scoped_release nogil;
    return view_->read(offset, out);
  }

  std::string id_;
  std::string digest_;
  uint64_t bytes_ = 0;
  const DeliveryView* view_;  // null once the step returned
};

// "ValueError: bad shape" for the exception being handled.
std::string Describe(const py::error_already_set& e) {
  try {
    return std::string(py::str(e.type().attr("__name__"))) + ": " + std::string(py::str(e.value()));
  } catch (...) {
    return "an exception that cannot be shown";
  }
}

// With the GIL held: the callable's verdict on `view`. No exception leaves.
Status Call(const py::object& callable, const DeliveryView& view) {
  auto delivery = std::make_shared<Delivery>(view);
  Status verdict;
  try {
    callable(delivery);
  } catch (py::error_already_set& e) {
    verdict = Status::Refused(Describe(e));
  } catch (const std::exception& e) {
    verdict = Status::Internal(e.what());
  } catch (...) {
    verdict = Status::Internal("the processing step threw");
  }
  delivery->Expire();
  return verdict;
}

// The callable, shared by the receiver's copies of the step; the last owner drops its
// reference with the GIL (it may be a receiver thread, or a close() that released it).
std::shared_ptr<py::object> Held(py::object callable) {
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

ProcessingStep PythonStep(std::string name, py::object callable) {
  std::shared_ptr<py::object> held = Held(std::move(callable));
  return ProcessingStep{std::move(name), [held](const DeliveryView& view) {
                          py::gil_scoped_acquire gil;
                          return Call(*held, view);
                        }};
}

void BindDelivery(py::module_& m) {
  py::class_<Delivery, std::shared_ptr<Delivery>>(m, "Delivery")
      .def_property_readonly("id", &Delivery::id)
      .def_property_readonly("digest", &Delivery::digest)
      .def_property_readonly("bytes", &Delivery::bytes)
      .def_property_readonly("stop_requested", &Delivery::stop_requested)
      .def("read", &Delivery::Read, py::arg("offset"), py::arg("size"))
      .def("readinto", &Delivery::ReadInto, py::arg("target"), py::arg("offset"));
}

}  // namespace writ::python
