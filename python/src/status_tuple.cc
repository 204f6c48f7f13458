#include <string>

#include "bindings.h"

namespace writ::python {

py::tuple Answer(const Status& status, py::object value) {
  if (!status.ok()) value = py::none();
  return py::make_tuple(std::string(ErrorCodeName(status.code())), status.message(), value);
}

}  // namespace writ::python
