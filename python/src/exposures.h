// The buffers a Python program exposed on its receiver (writ.Receiver.expose; docs/python.md,
// "Receiving into your own arrays"): each stays exported (its memory can be neither resized
// nor freed) and its callback alive until it is revoked or the receiver stops. Every call
// is made with the GIL held; Revoke releases it while the receiver waits for the deliveries
// in flight (their callbacks take it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "bindings.h"
#include "exported_buffer.h"
#include "writ/receiver.h"

namespace writ::python {

class Exposures {
 public:
  // (code, message, None). `page_size` 0: no page geometry. `on_delivery` (None or a
  // callable) is called with (target, id, offset, bytes, ok, why, pages) on a receiver thread.
  py::tuple Expose(Receiver& receiver, const std::string& name, const py::object& array,
                   uint64_t page_size, const py::object& on_delivery);
  py::tuple Revoke(Receiver& receiver, const std::string& name);
  // After the receiver stopped (no callback can come any more).
  void Clear() { exposed_.clear(); }

 private:
  std::map<std::string, std::unique_ptr<ExportedBuffer>> exposed_;
};

}  // namespace writ::python
