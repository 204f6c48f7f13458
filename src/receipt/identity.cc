#include "receipt/identity.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/mutex.h"

namespace writ::receipt {

struct Identity::Key {
  EVP_PKEY* pkey = nullptr;
  // A signing context initialised once and copied for each signature: initialising one
  // (OpenSSL 3 fetches the algorithm each time) cost 25 us of a 90 us signature here.
  Mutex template_mu;
  EVP_MD_CTX* sign_template GUARDED_BY(template_mu) = nullptr;  // made on first use
  std::atomic<uint64_t> signatures{0};
  ~Key() {
    EVP_MD_CTX_free(sign_template);
    EVP_PKEY_free(pkey);
  }
};

namespace {

struct CtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

std::string Hex(std::span<const uint8_t> bytes) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

Result<PublicKey> RawPublicKey(EVP_PKEY* pkey) {
  PublicKey key{};
  size_t len = key.size();
  if (EVP_PKEY_get_raw_public_key(pkey, key.data(), &len) != 1 || len != key.size()) {
    return Status::Internal("cannot read an Ed25519 public key");
  }
  return key;
}

// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/".
std::string ParentDirectory(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const size_t slash = trimmed.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : trimmed.substr(0, slash);
}

Status SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return Status::Io("cannot open directory " + dir + ": " + std::strerror(errno), errno);
  const int synced = fsync(fd);
  const int err = errno;
  close(fd);
  if (synced != 0)
    return Status::Io("cannot sync directory " + dir + ": " + std::strerror(err), err);
  return Status::Ok();
}

}  // namespace

std::string KeyId(const PublicKey& key) {
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(key.data(), key.size(), digest);
  return Hex(std::span<const uint8_t>(digest, 8));
}

std::string PublicKeyHex(const PublicKey& key) { return Hex(key); }

Result<PublicKey> ParsePublicKeyHex(std::string_view hex) {
  PublicKey key{};
  if (hex.size() != key.size() * 2) {
    return Status::Malformed("public key: expected 64 hex digits, got " +
                             std::to_string(hex.size()));
  }
  for (size_t i = 0; i < key.size(); ++i) {
    unsigned value = 0;
    for (char c : hex.substr(i * 2, 2)) {
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= c - '0';
      else if (c >= 'a' && c <= 'f')
        value |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        value |= c - 'A' + 10;
      else
        return Status::Malformed("public key: not hex");
    }
    key[i] = static_cast<uint8_t>(value);
  }
  return key;
}

namespace {
std::atomic<uint64_t> verifications{0};
}  // namespace

uint64_t VerificationsMade() { return verifications.load(std::memory_order_relaxed); }

bool VerifySignature(const PublicKey& key, std::span<const uint8_t> message,
                     const Signature& signature) {
  verifications.fetch_add(1, std::memory_order_relaxed);
  std::unique_ptr<EVP_PKEY, PkeyDeleter> pkey(
      EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, key.data(), key.size()));
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> ctx(EVP_MD_CTX_new());
  if (!pkey || !ctx) return false;
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) != 1) return false;
  return EVP_DigestVerify(ctx.get(), signature.data(), signature.size(), message.data(),
                          message.size()) == 1;
}

Identity::Identity(Identity&&) noexcept = default;
Identity& Identity::operator=(Identity&&) noexcept = default;
Identity::~Identity() = default;

Result<Identity> Identity::Generate() {
  Identity id;
  id.key_ = std::make_unique<Key>();
  id.key_->pkey = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (id.key_->pkey == nullptr) return Status::Internal("Ed25519 key generation failed");
  WRIT_ASSIGN_OR_RETURN(id.public_key_, RawPublicKey(id.key_->pkey));
  return id;
}

Result<Identity> Identity::LoadOrCreate(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) == 0) {
    // The new directory's name is durable only once its parent is synced.
    WRIT_RETURN_IF_ERROR(SyncDirectory(ParentDirectory(dir)).Annotate("identity directory"));
  } else if (errno != EEXIST) {
    return Status::Io("cannot create identity directory " + dir + ": " + std::strerror(errno),
                      errno);
  }
  const std::string path = dir + "/identity.key";
  if (FILE* raw = std::fopen(path.c_str(), "r")) {
    std::unique_ptr<FILE, FileCloser> file(raw);
    struct stat st {};
    if (fstat(fileno(raw), &st) == 0 && (st.st_mode & 077) != 0) {
      return Status::Refused(path + " is readable by others (mode " +
                             std::to_string(st.st_mode & 0777) + "); make it 0600");
    }
    Identity id;
    id.key_ = std::make_unique<Key>();
    id.key_->pkey = PEM_read_PrivateKey(raw, nullptr, nullptr, nullptr);
    if (id.key_->pkey == nullptr || EVP_PKEY_get_id(id.key_->pkey) != EVP_PKEY_ED25519) {
      return Status::Malformed(path + " does not hold an Ed25519 private key");
    }
    WRIT_ASSIGN_OR_RETURN(id.public_key_, RawPublicKey(id.key_->pkey));
    return id;
  }
  WRIT_ASSIGN_OR_RETURN(Identity id, Generate());
  const std::string tmp = path + ".tmp";
  // Left by a start that died before its rename: no receipt was ever signed with it.
  (void)unlink(tmp.c_str());
  const int fd = open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("cannot create " + tmp + ": " + std::strerror(errno), errno);
  std::unique_ptr<FILE, FileCloser> file(fdopen(fd, "w"));
  if (!file ||
      PEM_write_PrivateKey(file.get(), id.key_->pkey, nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
      std::fflush(file.get()) != 0 || fsync(fd) != 0) {
    unlink(tmp.c_str());
    return Status::Io("cannot write " + tmp);
  }
  file.reset();
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::Io("cannot rename " + tmp + ": " + std::strerror(errno), errno);
  }
  // The rename is durable only once the directory is synced: until then a power cut can
  // leave no key, and the next start would make another while receipts name this one.
  WRIT_RETURN_IF_ERROR(SyncDirectory(dir).Annotate("identity"));
  return id;
}

Result<Signature> Identity::Sign(std::span<const uint8_t> message) const {
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx) return Status::Internal("EVP_MD_CTX_new failed");
  {
    MutexLock lock(key_->template_mu);
    if (key_->sign_template == nullptr) {
      std::unique_ptr<EVP_MD_CTX, CtxDeleter> made(EVP_MD_CTX_new());
      if (!made || EVP_DigestSignInit(made.get(), nullptr, nullptr, nullptr, key_->pkey) != 1) {
        return Status::Internal("EVP_DigestSignInit failed");
      }
      key_->sign_template = made.release();
    }
    if (EVP_MD_CTX_copy_ex(ctx.get(), key_->sign_template) != 1) {
      return Status::Internal("EVP_MD_CTX_copy_ex of the signing context failed");
    }
  }
  Signature sig{};
  size_t len = sig.size();
  if (EVP_DigestSign(ctx.get(), sig.data(), &len, message.data(), message.size()) != 1 ||
      len != sig.size()) {
    return Status::Internal("Ed25519 signing failed");
  }
  key_->signatures.fetch_add(1, std::memory_order_relaxed);
  return sig;
}

uint64_t Identity::signatures_made() const {
  return key_->signatures.load(std::memory_order_relaxed);
}

}  // namespace writ::receipt
