// The per-rule Digester implementations behind Digester::Create.
#pragma once

#include <memory>

#include "vocabulary/digest.h"

namespace writ::vocabulary {

Result<std::unique_ptr<Digester>> MakeXxh3Digester();
Result<std::unique_ptr<Digester>> MakeCrc32cDigester();
Result<std::unique_ptr<Digester>> MakeSha256Digester();
Result<std::unique_ptr<Digester>> MakeTreeDigester(Rule tree_rule);

}  // namespace writ::vocabulary
