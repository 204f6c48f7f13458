// WRIT_EXPORT marks the public API: libwrit.so is built with hidden visibility, so only
// what carries it (the classes and functions declared in include/writ/) is exported.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define WRIT_EXPORT [[gnu::visibility("default")]]
#else
#define WRIT_EXPORT
#endif
