// Its own library (writ_version_string): the git revision changes with every commit, and
// only libwrit and the writ binary, not every test, should relink for it.
#include "writ/version.h"
#include "writ_build_info.h"

namespace writ {

std::string_view VersionString() { return WRIT_VERSION_STRING; }

}  // namespace writ
