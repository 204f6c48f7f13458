// The per-rule Digester implementations behind Digester::Create.
#pragma once

#include <memory>

#include "protocol/digest.h"

namespace writ::protocol {

Result<std::unique_ptr<Digester>> MakeXxh3Digester();
Result<std::unique_ptr<Digester>> MakeCrc32cDigester();
Result<std::unique_ptr<Digester>> MakeSha256Digester();

}  // namespace writ::protocol
