// A Python callable as the receiver's processing step. The receiver runs it on one of its
// own threads: the step takes the GIL, hands the callable a _writ.Delivery readable only
// during the call, and turns an exception into a failed step that names it (the receiver
// then refuses the delivery with that text).
#pragma once

#include <string>

#include "bindings.h"
#include "writ/receiver.h"

namespace writ::python {

ProcessingStep PythonStep(std::string name, py::object callable);
void BindDelivery(py::module_& m);

}  // namespace writ::python
