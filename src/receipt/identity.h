// Ed25519 identities (OpenSSL 3): a receiver signs its receipts, a sender its
// announces. The key id is the first 16 hex digits of SHA-256(public key).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "writ/status.h"

namespace writ::receipt {

using PublicKey = std::array<uint8_t, 32>;
using Signature = std::array<uint8_t, 64>;

std::string KeyId(const PublicKey& key);
std::string PublicKeyHex(const PublicKey& key);
Result<PublicKey> ParsePublicKeyHex(std::string_view hex);

bool VerifySignature(const PublicKey& key, std::span<const uint8_t> message,
                     const Signature& signature);
// Ed25519 verifications this process made so far, by any thread (for tests and benches).
uint64_t VerificationsMade();

class Identity {
 public:
  // Loads DIR/identity.key, or creates it (mode 0600, DIR created 0700) on first use.
  static Result<Identity> LoadOrCreate(const std::string& dir);
  static Result<Identity> Generate();

  Identity(Identity&&) noexcept;
  Identity& operator=(Identity&&) noexcept;
  ~Identity();

  const PublicKey& public_key() const { return public_key_; }
  std::string key_id() const { return KeyId(public_key_); }
  Result<Signature> Sign(std::span<const uint8_t> message) const;
  // Ed25519 signatures made with this identity so far (for tests and benches).
  uint64_t signatures_made() const;

 private:
  Identity() = default;
  struct Key;
  std::unique_ptr<Key> key_;
  PublicKey public_key_{};
};

}  // namespace writ::receipt
