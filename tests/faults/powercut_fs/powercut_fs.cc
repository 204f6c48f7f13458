// powercut_fs: a FUSE file system for the power-cut tests. It passes through
// to files in a state directory but keeps every write and every directory
// change that was not made durable -- by fsync/fdatasync of the file, and by
// fsync of the parent directory for creates, renames and unlinks -- in a
// volatile layer. "Cutting power" throws that layer away: the daemon exits on
// the spot, and the next daemon started on the same state directory sees only
// what was durable. This is the conservative model of a power cut (RocksDB's
// FaultInjectionTestFS idea, done for real under a real process).
//
//   powercut_fs --state=DIR [--capacity=BYTES] MOUNTPOINT [-o FUSE options]
//
// Runs in the foreground, single-threaded. Prints "powercut_fs: mounted" on
// stdout once the kernel has connected. Commands, one per line on stdin:
//   cut     print "cut: discarded ..." and exit at once (no flush): power is gone
//   sync    make everything durable (like sync(1)); prints "synced"
//   stats   print "stats: fsyncs=N dirsyncs=M ..."
// After a cut, the mount is dead ("Transport endpoint is not connected"):
// unmount it (umount -l) and start a new daemon on the same --state.
// A clean unmount (fusermount3 -u, SIGTERM) syncs everything first, as umount does.
//
// The model, per object:
//  - a file's durable content is its content at its last fsync/fdatasync
//    (empty if never synced); both calls persist data and size;
//  - a directory's durable entries are its entries at its last fsync
//    (none if never synced): a new file's name, a rename and an unlink are
//    durable only once the directory holding the name was fsynced;
//  - a durable name whose file was never synced names an empty file.
// State directory: objects/<id> (durable contents), namespace (durable
// directory entries, replaced atomically), live/<id> (the volatile layer's
// file contents, copied on first write; wiped at start).
// Not modelled: torn writes within a sync (syncs are atomic here), reordering
// of writes within one file before a sync, xattrs, symlinks and hard links.
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <fcntl.h>
#include <fuse.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

constexpr uint64_t kRoot = 1;
constexpr uint64_t kNoTrunc = UINT64_MAX;

struct Node {
  uint64_t id = 0;
  bool dir = false;
  mode_t mode = 0;
  std::map<std::string, uint64_t> entries;  // a directory's live entries
  bool has_live = false;                    // live/<id> holds this file's current content
  uint64_t size = 0;                        // current (live) size
  std::map<uint64_t, uint64_t> dirty;       // written since the last sync: start -> end
  uint64_t min_trunc = kNoTrunc;            // smallest size truncated to since the last sync
  uint32_t links = 0;                       // live names
  uint32_t opens = 0;
  timespec atime{}, mtime{}, ctime{};
};

struct DurableEntry {
  uint64_t child = 0;
  bool dir = false;
  mode_t mode = 0;
};

struct Options {
  char* state = nullptr;
  unsigned long capacity = 0;
};

std::mutex g_mu;
std::string g_state;
uint64_t g_capacity = 0;  // 0: no limit but the backing file system's
uint64_t g_next_id = 2;
std::unordered_map<uint64_t, std::unique_ptr<Node>> g_nodes;
std::map<uint64_t, std::map<std::string, DurableEntry>> g_durable;  // dir id -> durable entries
uint64_t g_fsyncs = 0, g_dirsyncs = 0;

std::string ObjectPath(uint64_t id) { return g_state + "/objects/" + std::to_string(id); }
std::string LivePath(uint64_t id) { return g_state + "/live/" + std::to_string(id); }

timespec Now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// Copies [start, end) of `from` into `to` (both open); -errno on failure.
int CopyRange(int from, int to, uint64_t start, uint64_t end) {
  std::vector<char> buf(1 << 20);
  while (start < end) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - start));
    const ssize_t n = ::pread(from, buf.data(), want, static_cast<off_t>(start));
    if (n < 0) return -errno;
    if (n == 0) break;  // past the source's end: nothing more to copy
    if (::pwrite(to, buf.data(), static_cast<size_t>(n), static_cast<off_t>(start)) != n)
      return -EIO;
    start += static_cast<uint64_t>(n);
  }
  return 0;
}

uint64_t UsedBytes() {
  uint64_t used = 0;
  for (const auto& [id, node] : g_nodes) {
    if (!node->dir) used += node->size;
  }
  return used;
}

Node* NodeOf(uint64_t id) {
  auto it = g_nodes.find(id);
  return it == g_nodes.end() ? nullptr : it->second.get();
}

// Walks the live tree. *err is -ENOENT / -ENOTDIR when it returns nullptr.
Node* Resolve(const char* path, int* err) {
  Node* node = NodeOf(kRoot);
  std::string p = path ? path : "";
  size_t pos = 0;
  while (pos < p.size()) {
    while (pos < p.size() && p[pos] == '/') ++pos;
    if (pos >= p.size()) break;
    size_t end = p.find('/', pos);
    if (end == std::string::npos) end = p.size();
    const std::string name = p.substr(pos, end - pos);
    pos = end;
    if (!node->dir) {
      *err = -ENOTDIR;
      return nullptr;
    }
    auto it = node->entries.find(name);
    if (it == node->entries.end()) {
      *err = -ENOENT;
      return nullptr;
    }
    node = NodeOf(it->second);
    if (node == nullptr) {
      *err = -EIO;
      return nullptr;
    }
  }
  return node;
}

// The parent directory of `path` and the last name.
Node* ResolveParent(const char* path, std::string* name, int* err) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.find_last_of('/');
  *name = p.substr(slash + 1);
  const std::string parent = slash == 0 ? "/" : p.substr(0, slash);
  Node* dir = Resolve(parent.c_str(), err);
  if (dir != nullptr && !dir->dir) {
    *err = -ENOTDIR;
    return nullptr;
  }
  return dir;
}

Node* FromFi(const char* path, fuse_file_info* fi, int* err) {
  if (fi != nullptr && fi->fh != 0) {
    Node* n = NodeOf(fi->fh);
    if (n == nullptr) *err = -EBADF;
    return n;
  }
  return Resolve(path, err);
}

void MaybeFree(Node* node) {
  if (node->links > 0 || node->opens > 0 || node->id == kRoot) return;
  if (!node->dir && node->has_live) ::unlink(LivePath(node->id).c_str());
  g_nodes.erase(node->id);
}

// Gives a file its own live copy before the first change since the last start.
int EnsureLive(Node* node) {
  if (node->has_live) return 0;
  const int to = ::open(LivePath(node->id).c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
  if (to < 0) return -errno;
  int rc = 0;
  const int from = ::open(ObjectPath(node->id).c_str(), O_RDONLY | O_CLOEXEC);
  if (from >= 0) {
    rc = CopyRange(from, to, 0, FileSize(ObjectPath(node->id)));
    ::close(from);
  }
  ::close(to);
  if (rc == 0) node->has_live = true;
  return rc;
}

Node* NewNode(bool dir, mode_t mode) {
  auto node = std::make_unique<Node>();
  node->id = g_next_id++;
  node->dir = dir;
  node->mode = (mode & 07777) | (dir ? S_IFDIR : S_IFREG);
  node->atime = node->mtime = node->ctime = Now();
  Node* raw = node.get();
  g_nodes[raw->id] = std::move(node);
  return raw;
}

int WriteNamespace() {
  const std::string tmp = g_state + "/namespace.tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return -errno;
  std::fprintf(f, "powercut-ns 1 %llu\n", static_cast<unsigned long long>(g_next_id));
  for (const auto& [dir, entries] : g_durable) {
    for (const auto& [name, e] : entries) {
      std::string hex;
      char b[3];
      for (unsigned char c : name) {
        std::snprintf(b, sizeof b, "%02x", c);
        hex += b;
      }
      std::fprintf(f, "E %llu %llu %c %o %s\n", static_cast<unsigned long long>(dir),
                   static_cast<unsigned long long>(e.child), e.dir ? 'd' : 'f',
                   static_cast<unsigned>(e.mode), hex.c_str());
    }
  }
  const bool ok = std::fflush(f) == 0 && !std::ferror(f);
  std::fclose(f);
  if (!ok) return -EIO;
  // The state directory's own file system is not the thing being cut; rename is enough.
  if (std::rename(tmp.c_str(), (g_state + "/namespace").c_str()) != 0) return -errno;
  return 0;
}

// Makes a file's current content durable.
int SyncFile(Node* node) {
  ++g_fsyncs;
  if (node->dir || !node->has_live) return 0;  // nothing changed since it was last durable
  const int obj = ::open(ObjectPath(node->id).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (obj < 0) return -errno;
  const int live = ::open(LivePath(node->id).c_str(), O_RDONLY | O_CLOEXEC);
  if (live < 0) {
    const int err = -errno;
    ::close(obj);
    return err;
  }
  int rc = 0;
  if (node->min_trunc != kNoTrunc && ::ftruncate(obj, static_cast<off_t>(node->min_trunc)) != 0)
    rc = -errno;
  for (const auto& [start, end] : node->dirty) {
    if (rc == 0) rc = CopyRange(live, obj, start, end);
  }
  if (rc == 0 && ::ftruncate(obj, static_cast<off_t>(node->size)) != 0) rc = -errno;
  ::close(live);
  ::close(obj);
  if (rc == 0) {
    node->dirty.clear();
    node->min_trunc = kNoTrunc;
  }
  return rc;
}

// Makes a directory's current entries durable.
int SyncDir(Node* dir) {
  ++g_dirsyncs;
  auto& durable = g_durable[dir->id];
  durable.clear();
  for (const auto& [name, child] : dir->entries) {
    const Node* c = NodeOf(child);
    if (c != nullptr) durable[name] = DurableEntry{child, c->dir, c->mode & 07777};
  }
  return WriteNamespace();
}

void AddDirty(Node* node, uint64_t start, uint64_t end) {
  if (start >= end) return;
  auto it = node->dirty.upper_bound(start);
  if (it != node->dirty.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= start) {
      start = prev->first;
      end = std::max(end, prev->second);
      it = node->dirty.erase(prev);
    }
  }
  while (it != node->dirty.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = node->dirty.erase(it);
  }
  node->dirty[start] = end;
}

void ClipDirty(Node* node, uint64_t size) {
  for (auto it = node->dirty.begin(); it != node->dirty.end();) {
    if (it->first >= size) {
      it = node->dirty.erase(it);
    } else {
      it->second = std::min(it->second, size);
      ++it;
    }
  }
}

// ---- start: the durable state becomes the live view -----------------------------------------

int Load() {
  ::mkdir((g_state + "/objects").c_str(), 0700);
  // The volatile layer of an earlier run is gone: that is the point.
  const std::string live = g_state + "/live";
  if (DIR* d = ::opendir(live.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        ::unlink((live + "/" + e->d_name).c_str());
      }
    }
    ::closedir(d);
  }
  ::mkdir(live.c_str(), 0700);

  uint64_t persisted_next = 2;
  std::map<uint64_t, std::map<std::string, DurableEntry>> durable;
  if (FILE* f = std::fopen((g_state + "/namespace").c_str(), "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, f)) {
      unsigned long long a = 0, b = 0;
      char type = 0;
      unsigned mode = 0;
      char hex[2 * 1024 + 1] = {0};
      if (std::sscanf(line, "powercut-ns 1 %llu", &a) == 1) {
        persisted_next = a;
      } else if (std::sscanf(line, "E %llu %llu %c %o %2048s", &a, &b, &type, &mode, hex) == 5) {
        std::string name;
        for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) {
          const char pair[3] = {hex[i], hex[i + 1], 0};
          name.push_back(static_cast<char>(std::strtoul(pair, nullptr, 16)));
        }
        durable[a][name] = DurableEntry{b, type == 'd', static_cast<mode_t>(mode)};
      }
    }
    std::fclose(f);
  }

  // Rebuild the live tree from what is reachable from the root.
  g_nodes.clear();
  g_durable.clear();
  uint64_t max_id = kRoot;
  auto root = std::make_unique<Node>();
  root->id = kRoot;
  root->dir = true;
  root->mode = S_IFDIR | 0755;
  root->links = 1;
  root->atime = root->mtime = root->ctime = Now();
  g_nodes[kRoot] = std::move(root);
  std::vector<uint64_t> todo = {kRoot};
  while (!todo.empty()) {
    const uint64_t dir = todo.back();
    todo.pop_back();
    auto it = durable.find(dir);
    if (it == durable.end()) continue;
    g_durable[dir] = it->second;
    for (const auto& [name, e] : it->second) {
      Node* parent = NodeOf(dir);
      Node* child = NodeOf(e.child);
      if (child == nullptr) {
        auto n = std::make_unique<Node>();
        n->id = e.child;
        n->dir = e.dir;
        n->mode = (e.mode & 07777) | (e.dir ? S_IFDIR : S_IFREG);
        n->size = e.dir ? 0 : FileSize(ObjectPath(e.child));
        n->atime = n->mtime = n->ctime = Now();
        child = n.get();
        g_nodes[e.child] = std::move(n);
        max_id = std::max(max_id, e.child);
        if (e.dir) todo.push_back(e.child);
      }
      ++child->links;
      parent->entries[name] = e.child;
    }
  }
  // Durable contents nobody can reach are gone for good.
  const std::string objects = g_state + "/objects";
  if (DIR* d = ::opendir(objects.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const uint64_t id = std::strtoull(e->d_name, nullptr, 10);
      max_id = std::max(max_id, id);
      Node* n = NodeOf(id);
      if (n == nullptr || n->dir) ::unlink((objects + "/" + e->d_name).c_str());
    }
    ::closedir(d);
  }
  g_next_id = std::max(persisted_next, max_id + 1);
  return WriteNamespace();
}

// ---- FUSE operations ------------------------------------------------------------------------

void FillStat(const Node* n, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = n->id;
  st->st_mode = n->mode;
  st->st_nlink = n->dir ? 2 : n->links;
  st->st_uid = getuid();
  st->st_gid = getgid();
  st->st_size = static_cast<off_t>(n->size);
  st->st_blksize = 4096;
  st->st_blocks = static_cast<blkcnt_t>((n->size + 511) / 512);
  st->st_atim = n->atime;
  st->st_mtim = n->mtime;
  st->st_ctim = n->ctime;
}

void* OpInit(fuse_conn_info* conn, fuse_config* cfg) {
  cfg->use_ino = 1;
  cfg->nullpath_ok = 1;
  cfg->hard_remove = 1;
  cfg->kernel_cache = 0;
  cfg->auto_cache = 0;
  // Writes go straight to the daemon: the kernel holds no dirty file data of ours.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  std::printf("powercut_fs: mounted\n");
  std::fflush(stdout);
  return nullptr;
}

void OpDestroy(void*) {
  // A clean unmount flushes everything, as umount(8) does.
  std::lock_guard lock(g_mu);
  for (auto& [id, node] : g_nodes) {
    if (node->dir)
      SyncDir(node.get());
    else
      SyncFile(node.get());
  }
}

int OpGetattr(const char* path, struct stat* st, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* n = FromFi(path, fi, &err);
  if (n == nullptr) return err;
  FillStat(n, st);
  return 0;
}

int OpAccess(const char* path, int) {
  std::lock_guard lock(g_mu);
  int err = 0;
  return Resolve(path, &err) ? 0 : err;
}

int OpReaddir(const char* path, void* buf, fuse_fill_dir_t filler, off_t, fuse_file_info* fi,
              fuse_readdir_flags) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* dir = FromFi(path, fi, &err);
  if (dir == nullptr) return err;
  if (!dir->dir) return -ENOTDIR;
  filler(buf, ".", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  filler(buf, "..", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  for (const auto& [name, child] : dir->entries) {
    struct stat st {};
    if (const Node* c = NodeOf(child)) FillStat(c, &st);
    if (filler(buf, name.c_str(), &st, 0, static_cast<fuse_fill_dir_flags>(0))) break;
  }
  return 0;
}

int OpOpendir(const char* path, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* n = Resolve(path, &err);
  if (n == nullptr) return err;
  if (!n->dir) return -ENOTDIR;
  ++n->opens;
  fi->fh = n->id;
  return 0;
}

int OpMkdir(const char* path, mode_t mode) {
  std::lock_guard lock(g_mu);
  int err = 0;
  std::string name;
  Node* parent = ResolveParent(path, &name, &err);
  if (parent == nullptr) return err;
  if (parent->entries.contains(name)) return -EEXIST;
  Node* n = NewNode(true, mode);
  n->links = 1;
  parent->entries[name] = n->id;
  parent->mtime = parent->ctime = Now();
  return 0;
}

int OpUnlink(const char* path) {
  std::lock_guard lock(g_mu);
  int err = 0;
  std::string name;
  Node* parent = ResolveParent(path, &name, &err);
  if (parent == nullptr) return err;
  auto it = parent->entries.find(name);
  if (it == parent->entries.end()) return -ENOENT;
  Node* n = NodeOf(it->second);
  if (n != nullptr && n->dir) return -EISDIR;
  parent->entries.erase(it);
  parent->mtime = parent->ctime = Now();
  if (n != nullptr) {
    --n->links;
    MaybeFree(n);
  }
  return 0;
}

int OpRmdir(const char* path) {
  std::lock_guard lock(g_mu);
  int err = 0;
  std::string name;
  Node* parent = ResolveParent(path, &name, &err);
  if (parent == nullptr) return err;
  auto it = parent->entries.find(name);
  if (it == parent->entries.end()) return -ENOENT;
  Node* n = NodeOf(it->second);
  if (n != nullptr && !n->dir) return -ENOTDIR;
  if (n != nullptr && !n->entries.empty()) return -ENOTEMPTY;
  parent->entries.erase(it);
  if (n != nullptr) {
    --n->links;
    MaybeFree(n);
  }
  return 0;
}

int OpRename(const char* from, const char* to, unsigned int flags) {
  std::lock_guard lock(g_mu);
  if (flags & ~static_cast<unsigned>(RENAME_NOREPLACE)) return -EINVAL;
  int err = 0;
  std::string src_name, dst_name;
  Node* src_dir = ResolveParent(from, &src_name, &err);
  if (src_dir == nullptr) return err;
  Node* dst_dir = ResolveParent(to, &dst_name, &err);
  if (dst_dir == nullptr) return err;
  auto src = src_dir->entries.find(src_name);
  if (src == src_dir->entries.end()) return -ENOENT;
  Node* moving = NodeOf(src->second);
  if (moving == nullptr) return -EIO;
  auto dst = dst_dir->entries.find(dst_name);
  if (dst != dst_dir->entries.end()) {
    if (dst->second == moving->id) return 0;
    if (flags & RENAME_NOREPLACE) return -EEXIST;
    Node* replaced = NodeOf(dst->second);
    if (replaced != nullptr) {
      if (replaced->dir && !moving->dir) return -EISDIR;
      if (!replaced->dir && moving->dir) return -ENOTDIR;
      if (replaced->dir && !replaced->entries.empty()) return -ENOTEMPTY;
    }
    dst_dir->entries.erase(dst);
    if (replaced != nullptr) {
      --replaced->links;
      MaybeFree(replaced);
    }
  }
  src_dir->entries.erase(src_name);
  dst_dir->entries[dst_name] = moving->id;
  src_dir->mtime = dst_dir->mtime = moving->ctime = Now();
  return 0;
}

int OpChmod(const char* path, mode_t mode, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* n = FromFi(path, fi, &err);
  if (n == nullptr) return err;
  n->mode = (n->mode & S_IFMT) | (mode & 07777);
  n->ctime = Now();
  return 0;
}

int OpChown(const char* path, uid_t, gid_t, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  return FromFi(path, fi, &err) ? 0 : err;  // ownership is not modelled
}

int Truncate(Node* n, uint64_t size) {
  if (n->dir) return -EISDIR;
  if (g_capacity && size > n->size && UsedBytes() + (size - n->size) > g_capacity) return -ENOSPC;
  if (int rc = EnsureLive(n)) return rc;
  if (::truncate(LivePath(n->id).c_str(), static_cast<off_t>(size)) != 0) return -errno;
  if (size < n->size) {
    n->min_trunc = std::min(n->min_trunc, size);
    ClipDirty(n, size);
  } else if (size > n->size) {
    // The zeros of an extension are data like any other.
    AddDirty(n, n->size, size);
  }
  n->size = size;
  n->mtime = n->ctime = Now();
  return 0;
}

int OpTruncate(const char* path, off_t size, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* n = FromFi(path, fi, &err);
  if (n == nullptr) return err;
  return Truncate(n, static_cast<uint64_t>(size));
}

int OpUtimens(const char* path, const timespec tv[2], fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* n = FromFi(path, fi, &err);
  if (n == nullptr) return err;
  const timespec now = Now();
  if (tv == nullptr) {
    n->atime = n->mtime = now;
  } else {
    if (tv[0].tv_nsec != UTIME_OMIT) n->atime = tv[0].tv_nsec == UTIME_NOW ? now : tv[0];
    if (tv[1].tv_nsec != UTIME_OMIT) n->mtime = tv[1].tv_nsec == UTIME_NOW ? now : tv[1];
  }
  return 0;
}

int OpCreate(const char* path, mode_t mode, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  std::string name;
  Node* parent = ResolveParent(path, &name, &err);
  if (parent == nullptr) return err;
  Node* n = nullptr;
  auto it = parent->entries.find(name);
  if (it != parent->entries.end()) {
    if (fi->flags & O_EXCL) return -EEXIST;
    n = NodeOf(it->second);
    if (n == nullptr) return -EIO;
    if (n->dir) return -EISDIR;
    if (fi->flags & O_TRUNC) {
      if (int rc = Truncate(n, 0)) return rc;
    }
  } else {
    n = NewNode(false, mode);
    const int fd = ::open(LivePath(n->id).c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
      const int e = -errno;
      g_nodes.erase(n->id);
      return e;
    }
    ::close(fd);
    n->has_live = true;
    n->links = 1;
    parent->entries[name] = n->id;
    parent->mtime = parent->ctime = Now();
  }
  ++n->opens;
  fi->fh = n->id;
  fi->keep_cache = 0;
  return 0;
}

int OpOpen(const char* path, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* n = Resolve(path, &err);
  if (n == nullptr) return err;
  if (n->dir && (fi->flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
  if ((fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY) {
    if (int rc = Truncate(n, 0)) return rc;
  }
  ++n->opens;
  fi->fh = n->id;
  fi->keep_cache = 0;
  return 0;
}

int OpRead(const char* path, char* buf, size_t size, off_t off, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* n = FromFi(path, fi, &err);
  if (n == nullptr) return err;
  if (n->dir) return -EISDIR;
  const uint64_t offset = static_cast<uint64_t>(off);
  if (offset >= n->size) return 0;
  size = static_cast<size_t>(std::min<uint64_t>(size, n->size - offset));
  const std::string source = n->has_live ? LivePath(n->id) : ObjectPath(n->id);
  const int fd = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) return -errno;
    std::memset(buf, 0, size);  // never synced and never written since start: empty
    return 0;
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t r = ::pread(fd, buf + done, size - done, off + static_cast<off_t>(done));
    if (r < 0) {
      const int e = -errno;
      ::close(fd);
      return e;
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  ::close(fd);
  std::memset(buf + done, 0, size - done);  // a hole at the end (after an extending truncate)
  return static_cast<int>(size);
}

int OpWrite(const char* path, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* n = FromFi(path, fi, &err);
  if (n == nullptr) return err;
  if (n->dir) return -EISDIR;
  const uint64_t end = static_cast<uint64_t>(off) + size;
  if (g_capacity && end > n->size && UsedBytes() + (end - n->size) > g_capacity) return -ENOSPC;
  if (int rc = EnsureLive(n)) return rc;
  const int fd = ::open(LivePath(n->id).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::pwrite(fd, buf + done, size - done, off + static_cast<off_t>(done));
    if (w <= 0) {
      const int e = w < 0 ? -errno : -EIO;
      ::close(fd);
      return e;
    }
    done += static_cast<size_t>(w);
  }
  ::close(fd);
  AddDirty(n, static_cast<uint64_t>(off), end);
  n->size = std::max(n->size, end);
  n->mtime = n->ctime = Now();
  return static_cast<int>(size);
}

int OpFlush(const char*, fuse_file_info*) { return 0; }

// Directories and files alike: releasedir and fsyncdir use these too.
int OpRelease(const char*, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  if (Node* n = NodeOf(fi->fh)) {
    if (n->opens > 0) --n->opens;
    MaybeFree(n);
  }
  return 0;
}

int OpFsync(const char* path, int, fuse_file_info* fi) {
  std::lock_guard lock(g_mu);
  int err = 0;
  Node* n = FromFi(path, fi, &err);
  if (n == nullptr) return err;
  return n->dir ? SyncDir(n) : SyncFile(n);
}

int OpStatfs(const char*, struct statvfs* st) {
  std::lock_guard lock(g_mu);
  if (::statvfs(g_state.c_str(), st) != 0) return -errno;
  if (g_capacity) {
    const uint64_t used = UsedBytes();
    st->f_bsize = st->f_frsize = 4096;
    st->f_blocks = g_capacity / 4096;
    st->f_bfree = st->f_bavail = used >= g_capacity ? 0 : (g_capacity - used) / 4096;
  }
  return 0;
}

// What a cut throws away, for the test's report.
std::string DiscardSummary() {
  uint64_t bytes = 0, files = 0, dirs = 0;
  for (const auto& [id, n] : g_nodes) {
    if (n->dir) {
      auto it = g_durable.find(id);
      std::map<std::string, uint64_t> durable;
      if (it != g_durable.end()) {
        for (const auto& [name, e] : it->second) durable[name] = e.child;
      }
      if (durable != n->entries) ++dirs;
    } else if (!n->dirty.empty() || n->min_trunc != kNoTrunc) {
      ++files;
      for (const auto& [s, e] : n->dirty) bytes += e - s;
    }
  }
  return "discarded " + std::to_string(bytes) + " unsynced bytes in " + std::to_string(files) +
         " files and unsynced entries of " + std::to_string(dirs) + " directories";
}

void ControlLoop() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "cut") {
      g_mu.lock();  // held until exit: no operation runs after the cut
      std::printf("cut: %s\n", DiscardSummary().c_str());
      std::fflush(stdout);
      _exit(0);
    } else if (line == "sync") {
      std::lock_guard lock(g_mu);
      for (auto& [id, node] : g_nodes) {
        if (node->dir)
          SyncDir(node.get());
        else
          SyncFile(node.get());
      }
      std::printf("synced\n");
      std::fflush(stdout);
    } else if (line == "stats") {
      std::lock_guard lock(g_mu);
      std::printf("stats: fsyncs=%llu dirsyncs=%llu nodes=%zu used=%llu\n",
                  static_cast<unsigned long long>(g_fsyncs),
                  static_cast<unsigned long long>(g_dirsyncs), g_nodes.size(),
                  static_cast<unsigned long long>(UsedBytes()));
      std::fflush(stdout);
    } else if (!line.empty()) {
      std::printf("unknown command: %s\n", line.c_str());
      std::fflush(stdout);
    }
  }
}

const fuse_opt kOptions[] = {
    {"--state=%s", offsetof(Options, state), 0},
    {"--capacity=%lu", offsetof(Options, capacity), 0},
    FUSE_OPT_END,
};

}  // namespace

int main(int argc, char** argv) {
  fuse_args args = FUSE_ARGS_INIT(argc, argv);
  Options options;
  if (fuse_opt_parse(&args, &options, kOptions, nullptr) != 0) return 2;
  if (options.state == nullptr) {
    std::fprintf(stderr, "usage: powercut_fs --state=DIR [--capacity=BYTES] MOUNTPOINT\n");
    return 2;
  }
  char real[PATH_MAX];
  if (::mkdir(options.state, 0700) != 0 && errno != EEXIST) {
    std::perror("powercut_fs: --state");
    return 2;
  }
  if (::realpath(options.state, real) == nullptr) {
    std::perror("powercut_fs: --state");
    return 2;
  }
  g_state = real;
  g_capacity = options.capacity;
  if (int rc = Load(); rc != 0) {
    std::fprintf(stderr, "powercut_fs: cannot load %s: %s\n", real, std::strerror(-rc));
    return 1;
  }
  // Foreground, single-threaded: one operation at a time, in order.
  fuse_opt_add_arg(&args, "-f");
  fuse_opt_add_arg(&args, "-s");

  fuse_operations ops{};
  ops.init = OpInit;
  ops.destroy = OpDestroy;
  ops.getattr = OpGetattr;
  ops.access = OpAccess;
  ops.readdir = OpReaddir;
  ops.opendir = OpOpendir;
  ops.releasedir = OpRelease;
  ops.fsyncdir = OpFsync;
  ops.mkdir = OpMkdir;
  ops.unlink = OpUnlink;
  ops.rmdir = OpRmdir;
  ops.rename = OpRename;
  ops.chmod = OpChmod;
  ops.chown = OpChown;
  ops.truncate = OpTruncate;
  ops.utimens = OpUtimens;
  ops.create = OpCreate;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.write = OpWrite;
  ops.flush = OpFlush;
  ops.release = OpRelease;
  ops.fsync = OpFsync;
  ops.statfs = OpStatfs;

  std::thread(ControlLoop).detach();
  const int rc = fuse_main(args.argc, args.argv, &ops, nullptr);
  fuse_opt_free_args(&args);
  return rc;
}
