#include "fabric/psm_stand_ins.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "writ/status.h"

// The stand-ins' images (psm_stub_images.cc).
extern "C" const uint8_t writ_psm_infinipath_image[], writ_psm_infinipath_image_end[];
extern "C" const uint8_t writ_psm2_image[], writ_psm2_image_end[];

namespace writ::fabric {
namespace {

struct Image {
  const char* soname;
  std::span<const uint8_t> bytes;
};

// A memory file holding `image`; its name shows in /proc/PID/maps.
Result<int> WriteToMemory(const Image& image) {
  const std::string name = std::string("writ-psm-stand-in:") + image.soname;
  const int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return Status::Io("memfd_create(" + name + ")", errno);
  for (std::span<const uint8_t> left = image.bytes; !left.empty();) {
    const ssize_t n = write(fd, left.data(), left.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      close(fd);
      return Status::Io("writing " + name, err);
    }
    left = left.subspan(static_cast<size_t>(n));
  }
  return fd;
}

std::atomic<bool> psm_stand_ins_enabled{false};

// Loaded through memory files, so that the stand-ins travel inside writ (a copy of the
// binary elsewhere needs nothing beside it). Every file stays open until all are loaded:
// the dynamic linker knows an object by its path, and a reused descriptor number would
// name the first one again. Their handles go to `handles` (closed again on a fallback).
Status LoadFromMemory(std::span<const Image> images, std::vector<void*>& handles) {
  std::vector<int> fds;
  Status status;
  for (const Image& image : images) {
    Result<int> fd = WriteToMemory(image);
    if (!fd.ok()) {
      status = fd.status();
      break;
    }
    fds.push_back(*fd);
    const std::string path = "/proc/self/fd/" + std::to_string(*fd);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      status = Status::Unsupported(std::string("cannot load a stand-in for ") + image.soname +
                                   ": " + (why ? why : "unknown error"));
      break;
    }
    handles.push_back(handle);
  }
  for (int fd : fds) close(fd);  // the mappings keep the memory
  return status;
}

void CloseAll(std::vector<void*>& handles) {
  for (auto it = handles.rbegin(); it != handles.rend(); ++it) dlclose(*it);
  handles.clear();
}

std::string LastDlError() {
  const char* why = dlerror();
  return why ? why : "unknown error";
}

}  // namespace

void EnablePsmStandIns() {
  const char* keep = std::getenv("WRIT_FABRIC_PSM");
  if (keep != nullptr && std::strcmp(keep, "1") == 0) return;
  psm_stand_ins_enabled.store(true);
}

LoadedLibrary LoadWithPsmStandIns(const char* library) {
  LoadedLibrary loaded;
  if (psm_stand_ins_enabled.load()) {
    const Image images[] = {
        {"libpsm_infinipath.so.1", {writ_psm_infinipath_image, writ_psm_infinipath_image_end}},
        {"libpsm2.so.2", {writ_psm2_image, writ_psm2_image_end}},
    };
    std::vector<void*> stand_ins;
    if (Status s = LoadFromMemory(images, stand_ins); !s.ok()) {
      loaded.note = s.message();
    } else if ((loaded.handle = dlopen(library, RTLD_NOW | RTLD_LOCAL)) != nullptr) {
      loaded.with_stand_ins = true;
      return loaded;  // the stand-ins stay, as long as the library
    } else {
      loaded.note = std::string(library) + " did not load with the PSM stand-ins (" +
                    LastDlError() + "); loaded with the real PSM libraries instead";
    }
    CloseAll(stand_ins);
  }
  loaded.handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (loaded.handle == nullptr) loaded.error = LastDlError();
  return loaded;
}

}  // namespace writ::fabric
