// Keeps the PSM libraries out of the `writ` program. Debian's libfabric names
// libpsm_infinipath.so.1 (-> libinfinipath.so.4) and libpsm2.so.2 as dependencies; their
// constructors pin the thread to one CPU and sleep ~0.1 s each calibrating a clock, at load
// time, whatever provider is asked for. Stand-ins with the same SONAMEs (psm_stubs/, built
// with writ and embedded in it) are loaded from memory first: the dynamic linker then
// counts those dependencies as met and never maps the real libraries. Every stand-in call
// fails, so the psm and psm2 providers find no device; tcp, shm and verbs never call them.
//
// Only a program that opts in (EnablePsmStandIns: the `writ` executable) gets them. The
// dynamic linker matches a SONAME for every library of the process, so in a process that
// embeds writ (libwrit, the Python module) they would also stand in for the PSM libraries
// of anything else loaded later (an MPI library): there, libfabric loads as built.
#pragma once

#include <string>

namespace writ::fabric {

// The process's owner says the stand-ins may be loaded before libfabric (call before the
// first fabric use); ignored when the environment sets WRIT_FABRIC_PSM=1 (a host that
// really has a PSM fabric).
void EnablePsmStandIns();

struct LoadedLibrary {
  void* handle = nullptr;       // dlopen's handle, never closed; null when it failed
  bool with_stand_ins = false;  // the PSM dependencies were met by the stand-ins
  std::string error;            // dlerror() of the last attempt, when handle is null
  std::string note;             // why the stand-ins were not used, when they were enabled
};

// dlopen(library, RTLD_NOW | RTLD_LOCAL), first with the stand-ins when enabled. When that
// load fails (a libfabric built against a newer PSM imports a function the stand-ins lack,
// and binds every symbol at load), the stand-ins are closed again and the library is
// loaded as built, with the real PSM libraries: slower to start, not wrong.
LoadedLibrary LoadWithPsmStandIns(const char* library);

}  // namespace writ::fabric
