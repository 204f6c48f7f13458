// _writ: the compiled half of the Python package writ (python/writ/ is the other half).
#include <string>

#include "bindings.h"
#include "writ/version.h"

namespace writ::python {

py::tuple Answer(const Status& status, py::object value) {
  if (!status.ok()) value = py::none();
  return py::make_tuple(std::string(ErrorCodeName(status.code())), status.message(), value);
}

}  // namespace writ::python

PYBIND11_MODULE(_writ, m) {
  m.doc() = "writ's C++ API for the Python package writ; use `import writ`, not this module.";
  m.attr("version") = std::string(writ::VersionString());
  writ::python::BindSender(m);
  writ::python::BindReceiver(m);
  writ::python::BindEvidence(m);
  writ::python::BindReplicated(m);
}
