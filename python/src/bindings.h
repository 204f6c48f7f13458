// The pieces of the _writ extension. Every call that can fail in the library answers
// (code, message, value) instead of raising: writ/_errors.py turns a code other than "ok"
// into the exception of its CLI exit-code category, so that mapping lives in one place.
#pragma once

#include <pybind11/pybind11.h>

#include "writ/status.h"

namespace writ::python {

namespace py = pybind11;

// (ErrorCodeName(status), message, value); value is None on an error.
py::tuple Answer(const Status& status, py::object value = py::none());

void BindSender(py::module_& m);
void BindReceiver(py::module_& m);
void BindEvidence(py::module_& m);
void BindReplicated(py::module_& m);

}  // namespace writ::python
