#include "fabric/psm_stand_ins.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

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

// Loaded through memory files, so that the stand-ins travel inside writ (a copy of the
// binary elsewhere needs nothing beside it). Every file stays open until all are loaded:
// the dynamic linker knows an object by its path, and a reused descriptor number would
// name the first one again.
Status LoadFromMemory(std::span<const Image> images) {
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
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {  // never closed
      const char* why = dlerror();
      status = Status::Unsupported(std::string("cannot load a stand-in for ") + image.soname +
                                   ": " + (why ? why : "unknown error"));
      break;
    }
  }
  for (int fd : fds) close(fd);  // the mappings keep the memory
  return status;
}

}  // namespace

Status LoadPsmStandIns() {
  const char* keep = std::getenv("WRIT_FABRIC_PSM");
  if (keep != nullptr && std::strcmp(keep, "1") == 0) return Status::Ok();
  const Image images[] = {
      {"libpsm_infinipath.so.1", {writ_psm_infinipath_image, writ_psm_infinipath_image_end}},
      {"libpsm2.so.2", {writ_psm2_image, writ_psm2_image_end}},
  };
  return LoadFromMemory(images);
}

}  // namespace writ::fabric
