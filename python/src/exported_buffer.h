// A Python object's bytes, exported (PyObject_GetBuffer) while an ExportedBuffer lives: the
// object can be neither resized nor freed meanwhile, so C++ may read (or fill) them with
// the GIL released. Created and destroyed with the GIL held.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "bindings.h"

namespace writ::python {

class ExportedBuffer {
 public:
  enum class Access { kRead, kWrite };

  // C-contiguous required; read-only is fine for kRead.
  ExportedBuffer(const py::object& obj, Access access) {
    const int flags = PyBUF_C_CONTIGUOUS | (access == Access::kWrite ? PyBUF_WRITABLE : 0);
    exported_ = PyObject_GetBuffer(obj.ptr(), &view_, flags) == 0;
    if (!exported_) {
      py::error_already_set why;  // takes (and clears) the Python error
      error_ = std::string(access == Access::kWrite ? "a writable" : "a") +
               " C-contiguous buffer is needed (" + std::string(py::str(why.value())) + ")";
    }
  }
  ~ExportedBuffer() {
    if (exported_) PyBuffer_Release(&view_);
  }
  ExportedBuffer(const ExportedBuffer&) = delete;
  ExportedBuffer& operator=(const ExportedBuffer&) = delete;

  bool ok() const { return exported_; }
  // The interpreter is finalizing: the export is dropped without releasing it.
  void Abandon() { exported_ = false; }
  const std::string& error() const { return error_; }
  std::span<uint8_t> bytes() const {
    return {static_cast<uint8_t*>(view_.buf), static_cast<size_t>(view_.len)};
  }

 private:
  Py_buffer view_{};
  bool exported_ = false;
  std::string error_;
};

}  // namespace writ::python
