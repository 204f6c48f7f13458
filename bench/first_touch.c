// first_touch: what this machine charges for memory written for the first time, the cost
// the volatile store's arena is shaped around (docs/benchmarks.md, "Volatile memory on huge
// pages"). For 256 MiB in each of three kinds of memory: provisioned 1 MiB at a time with
// MADV_POPULATE_WRITE (as the arena provisions a slab), then written with memcpy in 4 KiB
// pieces twice (first touch, then warm). Prints microseconds per 4 KiB for each step.
//   cc -O2 -o /tmp/first_touch bench/first_touch.c && /tmp/first_touch
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

enum Kind { kMemfd, kAnonymous, kAnonymousHuge };

static char* Map(enum Kind kind, size_t length) {
  if (kind == kMemfd) {
    int fd = memfd_create("first-touch", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)length) != 0) return NULL;
    void* p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
  }
  const size_t huge = 2u << 20;
  char* p = mmap(NULL, length + huge, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return NULL;
  char* aligned = (char*)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
  if (kind == kAnonymousHuge) (void)madvise(aligned, length, MADV_HUGEPAGE);
  return aligned;
}

int main(void) {
  const size_t length = 256u << 20, piece = 4096, pieces = length / piece;
  static const char* names[] = {"memfd (shared)", "anonymous", "anonymous, MADV_HUGEPAGE"};
  static char source[4096];
  memset(source, 7, sizeof source);
  for (int kind = kMemfd; kind <= kAnonymousHuge; ++kind) {
    char* p = Map((enum Kind)kind, length);
    if (p == NULL) {
      perror(names[kind]);
      return 1;
    }
    const double t0 = Now();
    for (size_t at = 0; at < length; at += 1u << 20) {
      if (madvise(p + at, 1u << 20, MADV_POPULATE_WRITE) != 0) perror("MADV_POPULATE_WRITE");
    }
    const double t1 = Now();
    for (size_t at = 0; at < length; at += piece) memcpy(p + at, source, piece);
    const double t2 = Now();
    for (size_t at = 0; at < length; at += piece) memcpy(p + at, source, piece);
    const double t3 = Now();
    printf("%-26s populate %5.2f us, first write %5.2f us, warm write %5.2f us (per 4 KiB)\n",
           names[kind], (t1 - t0) / (double)pieces * 1e6, (t2 - t1) / (double)pieces * 1e6,
           (t3 - t2) / (double)pieces * 1e6);
  }
  return 0;
}
