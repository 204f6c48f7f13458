#include "store/store.h"

#include <algorithm>

#include "common/hex.h"
#include "common/io_buffer.h"
#include "vocabulary/digest.h"
#include "writ/vocabulary.h"

namespace writ::store {

Status VerifyHeldBytes(Store& store, const DeliveryMeta& meta) {
  constexpr uint64_t kBlock = 1 << 20;
  WRIT_ASSIGN_OR_RETURN(auto digester, vocabulary::Digester::Create(meta.rule));
  IoBuffer block(
      static_cast<size_t>(std::min<uint64_t>(kBlock, std::max<uint64_t>(meta.bytes, 1))));
  for (uint64_t done = 0; done < meta.bytes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), meta.bytes - done));
    const std::span<uint8_t> part(block.data(), n);
    WRIT_RETURN_IF_ERROR(store.Read(meta.id, done, part));
    digester->Update(part);
    done += n;
  }
  const std::vector<uint8_t> got = digester->Finish();
  if (got != meta.digest) {
    return Status::Validation(meta.id + ": its held bytes have " +
                              std::string(writ::RuleName(meta.rule)) + " " + writ::ToHex(got) +
                              ", not the recorded " + writ::ToHex(meta.digest));
  }
  return Status::Ok();
}

}  // namespace writ::store
