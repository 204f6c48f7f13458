// The release this library was built as. `writ --version` prints the same text.
#pragma once

#include <string_view>

#include "writ/export.h"

namespace writ {

// The release number, "MAJOR.MINOR.PATCH" (CMake's project VERSION), e.g. "0.1.0".
WRIT_EXPORT std::string_view Version();

// The release number, then the git revision when built from a checkout
// (`git describe --always --dirty`), e.g. "0.1.0 (git c272225-dirty)"; the number alone
// when built from a source tree without git.
WRIT_EXPORT std::string_view VersionString();

}  // namespace writ
