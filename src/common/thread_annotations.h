// Clang's thread-safety analysis attributes (checked with -Wthread-safety); empty under GCC.
// See https://clang.llvm.org/docs/ThreadSafetyAnalysis.html.
#pragma once

#if defined(__clang__)
#define WRIT_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define WRIT_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) WRIT_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY WRIT_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) WRIT_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) WRIT_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) WRIT_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) WRIT_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) WRIT_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define EXCLUDES(...) WRIT_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) WRIT_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS WRIT_THREAD_ANNOTATION(no_thread_safety_analysis)
