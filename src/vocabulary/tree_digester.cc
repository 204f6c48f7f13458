// The tree rules: a streaming Digester that cuts 1 MiB leaves itself, and the leaf and
// root functions a receiver uses to digest leaves on several threads.
#include <algorithm>
#include <string>

#include "vocabulary/digesters.h"
#include "writ/vocabulary.h"

namespace writ::vocabulary {
namespace {

Status Failed(Rule rule) {
  return Status::Internal("digest: " + std::string(RuleName(rule)) + " computation failed");
}

class TreeDigester final : public Digester {
 public:
  TreeDigester(Rule rule, std::unique_ptr<Digester> leaf) : rule_(rule), leaf_(std::move(leaf)) {}

  Rule rule() const override { return rule_; }

  void Update(std::span<const uint8_t> bytes) override {
    while (!bytes.empty()) {
      const uint64_t take = std::min<uint64_t>(bytes.size(), kTreeLeafBytes - leaf_fill_);
      leaf_->Update(bytes.first(take));
      bytes = bytes.subspan(take);
      leaf_fill_ += take;
      total_ += take;
      if (leaf_fill_ == kTreeLeafBytes) CutLeaf();
    }
  }

  std::vector<uint8_t> Finish() override {
    if (leaf_fill_ > 0) CutLeaf();
    auto root = TreeRoot(rule_, total_, leaves_);
    return root.ok() ? std::move(root).value() : std::vector<uint8_t>{};
  }

  void Reset() override {
    leaf_->Reset();
    leaves_.clear();
    leaf_fill_ = 0;
    total_ = 0;
  }

 private:
  void CutLeaf() {
    leaves_.push_back(leaf_->Finish());  // a failed leaf is empty: the root then fails
    leaf_->Reset();
    leaf_fill_ = 0;
  }

  Rule rule_;
  std::unique_ptr<Digester> leaf_;
  std::vector<std::vector<uint8_t>> leaves_;
  uint64_t leaf_fill_ = 0;
  uint64_t total_ = 0;
};

}  // namespace

std::optional<Rule> TreeBase(Rule rule) {
  switch (rule) {
    case Rule::kXxh3_128Tree1MiB: return Rule::kXxh3_128;
    case Rule::kSha256Tree1MiB: return Rule::kSha256;
    default: return std::nullopt;
  }
}

uint64_t TreeLeafCount(uint64_t total_bytes) {
  return (total_bytes + kTreeLeafBytes - 1) / kTreeLeafBytes;
}

Result<std::unique_ptr<Digester>> MakeTreeDigester(Rule tree_rule) {
  const std::optional<Rule> base = TreeBase(tree_rule);
  if (!base) return Status::InvalidArgument("digest: not a tree rule");
  WRIT_ASSIGN_OR_RETURN(auto leaf, Digester::Create(*base));
  return std::unique_ptr<Digester>(new TreeDigester(tree_rule, std::move(leaf)));
}

Result<std::vector<uint8_t>> TreeLeafDigest(Rule tree_rule, std::span<const uint8_t> leaf) {
  const std::optional<Rule> base = TreeBase(tree_rule);
  if (!base) return Status::InvalidArgument("digest: not a tree rule");
  return DigestOf(*base, leaf);
}

Result<std::vector<uint8_t>> TreeRoot(Rule tree_rule, uint64_t total_bytes,
                                      const std::vector<std::vector<uint8_t>>& leaves) {
  const std::optional<Rule> base = TreeBase(tree_rule);
  if (!base) return Status::InvalidArgument("digest: not a tree rule");
  if (leaves.size() != TreeLeafCount(total_bytes)) {
    return Status::Internal("digest: " + std::to_string(leaves.size()) + " leaf digests for " +
                            std::to_string(total_bytes) + " bytes");
  }
  WRIT_ASSIGN_OR_RETURN(auto root, Digester::Create(*base));
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(total_bytes >> (8 * i));
  root->Update(length);
  for (const auto& leaf : leaves) {
    if (leaf.size() != DigestSize(*base)) return Failed(tree_rule);
    root->Update(leaf);
  }
  std::vector<uint8_t> digest = root->Finish();
  if (digest.size() != DigestSize(tree_rule)) return Failed(tree_rule);
  return digest;
}

}  // namespace writ::vocabulary
