#include "writ/version.h"

namespace writ {

// WRIT_RELEASE: CMake's project VERSION, defined for this file alone (CMakeLists.txt).
std::string_view Version() { return WRIT_RELEASE; }

}  // namespace writ
