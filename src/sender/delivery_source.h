// The bytes of one delivery: a file, standard input spooled to an unlinked temporary
// file first (chunks are read at the offsets the receiver grants), or caller memory.
// A regular file can be mapped read-only so that its pages are the writes' source.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/io_buffer.h"
#include "sender/region_source.h"
#include "vocabulary/digest.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ::sender {

// What identifies one version of a regular file for the digest cache: any write, truncation,
// rename over it or touch changes one of these.
struct FileKey {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileKey&) const = default;
};

class DeliverySource {
 public:
  // "-" reads standard input.
  static Result<DeliverySource> Open(const std::string& path);
  // Caller memory, which must outlive the source; it counts as mapped.
  static DeliverySource FromBytes(std::span<const uint8_t> bytes, std::string name);
  // Scatter-gather: the concatenation of caller regions, which must outlive the source.
  // Never mapped: chunks are gathered into staging (docs/architecture.md says why).
  static DeliverySource FromRegions(RegionList regions, std::string name);
  DeliverySource(DeliverySource&& other) noexcept;
  DeliverySource& operator=(DeliverySource&&) = delete;
  ~DeliverySource();

  uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // A regular file (not spooled standard input): Map() may succeed.
  bool mappable() const { return regular_file_ && fd_ >= 0; }
  // Maps the whole file read-only, as the source of the transport's writes. Fold digests the
  // mapping under a SIGBUS guard (mapping_guard.h); Digest and Read use pread. Either way a
  // file truncated meanwhile is an error, not a crash; docs/architecture.md says what the
  // transport does then.
  Status Map();
  // The mapped bytes; empty when not mapped.
  std::span<const uint8_t> mapped() const { return mapped_; }
  // Drops this process's page mappings of the whole pages inside [offset, offset+length)
  // of a file mapping (the page cache keeps them; the next read faults them back in), so
  // that sending a file never makes it resident in the sender. No-op for caller memory.
  void Release(uint64_t offset, uint64_t length) const;

  // The whole source's digest, in bounded memory (a delivery digests with Fold instead).
  Result<std::vector<uint8_t>> Digest(Rule rule) const;
  Status Read(uint64_t offset, std::span<uint8_t> out) const;
  // Feeds [offset, offset + length) to `digester`: caller memory and a mapped file directly
  // (the mapping under a SIGBUS guard), any other file through pread into a cache-sized block.
  Status Fold(vocabulary::Digester& digester, uint64_t offset, uint64_t length);

  // The region lengths of a scatter-gather source, in order; empty otherwise.
  const std::vector<uint64_t>& region_lengths() const;
  bool scatter_gather() const { return regions_ != nullptr; }
  const RegionList* regions() const { return regions_.get(); }

  // A regular file's key as opened; nullopt for standard input and caller memory.
  const std::optional<FileKey>& file_key() const { return file_key_; }
  // The file's key now (fstat of the open descriptor).
  Result<FileKey> CurrentKey() const;

 private:
  Status DigestSerial(vocabulary::Digester& digester) const;
  Status DigestPipelined(vocabulary::Digester& digester) const;
  DeliverySource(int fd, uint64_t size, std::string name, bool regular_file)
      : fd_(fd), size_(size), name_(std::move(name)), regular_file_(regular_file) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string name_;
  bool regular_file_ = false;
  bool owns_mapping_ = false;
  std::span<const uint8_t> mapped_;
  std::optional<FileKey> file_key_;
  IoBuffer fold_block_;                        // allocated on the first Fold of a file
  std::shared_ptr<const RegionList> regions_;  // scatter-gather caller memory
};

}  // namespace writ::sender
