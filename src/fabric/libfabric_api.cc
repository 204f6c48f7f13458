#include "fabric/libfabric_api.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <cstring>
#include <string>

#include "fabric/psm_stand_ins.h"

namespace writ::fabric {
namespace {

constexpr const char* kLibrary = "libfabric.so.1";

struct Loaded {
  LibfabricApi api;
  std::string error;  // empty when every symbol resolved
};

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn& out, std::string& error) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (out == nullptr) error = std::string(kLibrary) + ": no symbol " + name;
  return out != nullptr;
}

Loaded Load() {
  Loaded loaded;
  // Off before libfabric reads its parameters: libfabric's registration cache (verbs, efa,
  // and others through its MR cache) keeps a closed registration, and so its key, alive
  // for reuse. writ revokes a window by closing its registration, and memory granted again
  // would get the same key back: a revoked key must reach nothing (docs/security.md).
  // Measured in the Soft-RoCE guest: with the cache a 32 MiB registration and its close
  // took 59 us (a cache hit), without it 2.4 ms (pinning 8,192 pages, under emulation).
  ::setenv("FI_MR_CACHE_MAX_COUNT", "0", 1);
  // With the PSM stand-ins only in a program that enabled them (psm_stand_ins.h); when
  // libfabric does not load with them, it loads as built. Never closed: libfabric keeps
  // providers loaded for the life of the process.
  const LoadedLibrary library = LoadWithPsmStandIns(kLibrary);
  void* handle = library.handle;
  if (handle == nullptr) {
    loaded.error = std::string("cannot load ") + kLibrary + ": " + library.error;
    return loaded;
  }
  LibfabricApi& api = loaded.api;
  std::string& error = loaded.error;
  (void)(Resolve(handle, "fi_getinfo", api.getinfo, error) &&
         Resolve(handle, "fi_freeinfo", api.freeinfo, error) &&
         Resolve(handle, "fi_dupinfo", api.dupinfo, error) &&
         Resolve(handle, "fi_fabric", api.fabric, error) &&
         Resolve(handle, "fi_strerror", api.strerror, error) &&
         Resolve(handle, "fi_version", api.version, error));
  return loaded;
}

}  // namespace

Result<const LibfabricApi*> Libfabric() {
  static const Loaded loaded = Load();  // C++11 guarantees one thread-safe initialisation
  if (!loaded.error.empty()) return Status::Unsupported(loaded.error);
  return &loaded.api;
}

const char* LibfabricStrerror(int err) {
  auto api = Libfabric();
  return api.ok() ? (*api)->strerror(err) : std::strerror(err);
}

}  // namespace writ::fabric
