// _writ: the compiled half of the Python package writ (python/writ/ is the other half).
#include "bindings.h"
#include "writ/version.h"

PYBIND11_MODULE(_writ, m) {
  m.doc() = "writ's C++ API for the Python package writ; use `import writ`, not this module.";
  m.attr("version") = writ::kVersion;
  writ::python::BindSender(m);
  writ::python::BindReceiver(m);
  writ::python::BindEvidence(m);
}
