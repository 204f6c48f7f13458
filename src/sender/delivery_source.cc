#include "sender/delivery_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/unlinked_file.h"
#include "protocol/digest.h"

namespace writ::sender {
namespace {

constexpr size_t kBlock = 4 << 20;

Status IoError(const std::string& what) {
  return Status::Io(what + ": " + std::strerror(errno), errno);
}

}  // namespace

Result<DeliverySource> DeliverySource::Open(const std::string& path) {
  if (path == "-") {
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = tmp && *tmp ? tmp : "/tmp";
    int fd = OpenUnlinkedFile(dir);
    if (fd < 0) return IoError("cannot spool standard input in " + dir);
    std::vector<uint8_t> block(kBlock);
    uint64_t total = 0;
    for (;;) {
      const ssize_t n = read(STDIN_FILENO, block.data(), block.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        close(fd);
        return IoError("reading standard input");
      }
      if (n == 0) break;
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = pwrite(fd, block.data() + done, n - done, static_cast<off_t>(total + done));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
          close(fd);
          return IoError("spooling standard input");
        }
        done += w;
      }
      total += static_cast<uint64_t>(n);
    }
    return DeliverySource(fd, total, "stdin");
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::InvalidArgument("cannot open " + path + ": " + std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Status::InvalidArgument(path + " is not a regular file (use - for standard input)");
  }
  const size_t slash = path.find_last_of('/');
  return DeliverySource(fd, static_cast<uint64_t>(st.st_size),
                        slash == std::string::npos ? path : path.substr(slash + 1));
}

DeliverySource::DeliverySource(DeliverySource&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), name_(std::move(other.name_)) {}

DeliverySource::~DeliverySource() {
  if (fd_ >= 0) close(fd_);
}

Status DeliverySource::Read(uint64_t offset, std::span<uint8_t> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError("reading the delivery");
    if (n == 0) return Status::Io("the delivery's file shrank while it was being sent");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> DeliverySource::Digest(Rule rule) const {
  WRIT_ASSIGN_OR_RETURN(auto digester, protocol::Digester::Create(rule));
  std::vector<uint8_t> block(kBlock);
  for (uint64_t offset = 0; offset < size_;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), size_ - offset));
    WRIT_RETURN_IF_ERROR(Read(offset, std::span(block.data(), n)));
    digester->Update(std::span<const uint8_t>(block.data(), n));
    offset += n;
  }
  return digester->Finish();
}

}  // namespace writ::sender
