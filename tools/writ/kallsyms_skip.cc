// libfabric's verbs and efa providers scan /proc/kallsyms line by line when they
// initialise, looking for the kernel's peer-memory and dma-buf symbols (GPU memory
// registration); on a kernel without them each scan reads all of it, about 80 ms apiece
// here, on every process's first fabric use. writ registers host memory only, so the
// answer cannot matter to it: this executable's fopen (exported to the libraries it
// dlopens, tools/writ/CMakeLists.txt) says the file is not there, and passes every other
// call to the C library's. Only the `writ` program does this; a program using the
// library pays the scans once per process. docs/architecture.md, "The fabric layer".
#include <dlfcn.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

extern "C" FILE* fopen(const char* path, const char* mode) {
  if (path != nullptr && std::strcmp(path, "/proc/kallsyms") == 0) {
    errno = ENOENT;
    return nullptr;
  }
  using Fopen = FILE* (*)(const char*, const char*);
  static const Fopen next = reinterpret_cast<Fopen>(dlsym(RTLD_NEXT, "fopen"));
  if (next == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  return next(path, mode);
}
