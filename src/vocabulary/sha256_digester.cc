#include <openssl/evp.h>

#include "vocabulary/digesters.h"

namespace writ::vocabulary {
namespace {

struct MdFree {
  void operator()(EVP_MD* md) const { EVP_MD_free(md); }
};
struct CtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdPtr = std::unique_ptr<EVP_MD, MdFree>;
using CtxPtr = std::unique_ptr<EVP_MD_CTX, CtxFree>;

constexpr size_t kSha256Bytes = 32;

class Sha256Digester final : public Digester {
 public:
  Sha256Digester(MdPtr md, CtxPtr ctx) : md_(std::move(md)), ctx_(std::move(ctx)) {}

  Rule rule() const override { return Rule::kSha256; }

  void Update(std::span<const uint8_t> bytes) override {
    if (failed_ || bytes.empty()) return;
    if (EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1) failed_ = true;
  }

  std::vector<uint8_t> Finish() override {
    if (failed_) return {};
    std::vector<uint8_t> out(kSha256Bytes);
    unsigned int size = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), out.data(), &size) != 1 || size != kSha256Bytes) {
      failed_ = true;
      return {};
    }
    return out;
  }

  void Reset() override { failed_ = EVP_DigestInit_ex(ctx_.get(), md_.get(), nullptr) != 1; }

  bool failed() const { return failed_; }

 private:
  MdPtr md_;
  CtxPtr ctx_;
  bool failed_ = false;
};

}  // namespace

Result<std::unique_ptr<Digester>> MakeSha256Digester() {
  // Fetched once so Reset() does not look the algorithm up again.
  MdPtr md(EVP_MD_fetch(nullptr, "SHA2-256", nullptr));
  if (!md) return Status::Internal("digest: OpenSSL has no SHA2-256");
  CtxPtr ctx(EVP_MD_CTX_new());
  if (!ctx) return Status::Internal("digest: EVP_MD_CTX_new failed");
  auto digester = std::make_unique<Sha256Digester>(std::move(md), std::move(ctx));
  digester->Reset();
  if (digester->failed()) return Status::Internal("digest: EVP_DigestInit_ex(sha256) failed");
  return std::unique_ptr<Digester>(std::move(digester));
}

}  // namespace writ::vocabulary
