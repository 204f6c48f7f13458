#define _GNU_SOURCE
#include "journal.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Segments of the file are mapped one at a time; a line never spans two (the rest of a
 * segment stays NUL, which the reader drops). */
#define WRIT_SEGMENT (4u << 20)

static struct {
  pthread_mutex_t lock;
  int fd;
  char *segment;
  size_t segment_offset; /* in the file */
  size_t used;           /* in the segment */
} journal = {PTHREAD_MUTEX_INITIALIZER, -1, NULL, 0, 0};

static int map_segment(size_t offset) {
  if (ftruncate(journal.fd, (off_t)(offset + WRIT_SEGMENT)) != 0) return -1;
  void *p = mmap(NULL, WRIT_SEGMENT, PROT_READ | PROT_WRITE, MAP_SHARED, journal.fd, (off_t)offset);
  if (p == MAP_FAILED) return -1;
  /* Its pages faulted in now, at once, not one by one on the records' path (a fault per
   * 4 KiB cost about as much as the record itself on a virtual machine). An advice: a
   * kernel without it (before 5.14) faults them as they are written. */
#ifdef MADV_POPULATE_WRITE
  (void)madvise(p, WRIT_SEGMENT, MADV_POPULATE_WRITE);
#endif
  journal.segment = p;
  journal.segment_offset = offset;
  journal.used = 0;
  return 0;
}

uint64_t writ_journal_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void writ_journal_escape(const char *text, char *out, unsigned long size) {
  unsigned long n = 0;
  for (; text && *text && n + 7 < size; ++text) {
    const unsigned char c = (unsigned char)*text;
    if (c == '"' || c == '\\') {
      out[n++] = '\\';
      out[n++] = (char)c;
    } else if (c < 0x20) {
      n += (unsigned long)snprintf(out + n, size - n, "\\u%04x", c);
    } else {
      out[n++] = (char)c;
    }
  }
  out[n] = '\0';
}

static void program_name(char *out, size_t size) {
  out[0] = '\0';
  FILE *f = fopen("/proc/self/cmdline", "re");
  if (!f) return;
  char raw[1024];
  size_t n = fread(raw, 1, sizeof raw - 1, f);
  fclose(f);
  raw[n] = '\0';
  for (size_t i = 0; i + 1 < n; ++i)
    if (raw[i] == '\0') raw[i] = ' ';
  writ_journal_escape(raw, out, size);
}

static void open_for_this_process(void) {
  const char *dir = getenv("WRIT_CAPTURE_DIR");
  if (!dir || !*dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%d.jsonl", dir, (int)getpid());
  journal.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (journal.fd < 0) return;
  if (map_segment(0) != 0) {
    close(journal.fd);
    journal.fd = -1;
    return;
  }
  char program[2048];
  program_name(program, sizeof program);
  writ_journal_printf("{\"t\":\"process\",\"pid\":%d,\"ppid\":%d,\"program\":\"%s\",\"ns\":%llu}",
                      (int)getpid(), (int)getppid(), program,
                      (unsigned long long)writ_journal_now_ns());
}

/* A forked child must not write into its parent's mapping: it gets a journal of its own. */
static void after_fork_in_child(void) {
  pthread_mutex_init(&journal.lock, NULL);
  if (journal.segment) munmap(journal.segment, WRIT_SEGMENT);
  if (journal.fd >= 0) close(journal.fd);
  journal.segment = NULL;
  journal.fd = -1;
  open_for_this_process();
}

void writ_journal_open(void) {
  static int opened;
  if (opened) return;
  opened = 1;
  pthread_atfork(NULL, NULL, after_fork_in_child);
  open_for_this_process();
}

static void append_locked(const char *line, size_t n) {
  pthread_mutex_lock(&journal.lock);
  if (journal.segment && journal.used + n > WRIT_SEGMENT) {
    munmap(journal.segment, WRIT_SEGMENT);
    journal.segment = NULL;
    if (map_segment(journal.segment_offset + WRIT_SEGMENT) != 0) journal.segment = NULL;
  }
  if (journal.segment) {
    memcpy(journal.segment + journal.used, line, n);
    journal.used += n;
  }
  pthread_mutex_unlock(&journal.lock);
}

void writ_journal_printf(const char *format, ...) {
  char line[1024];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(line, sizeof line - 1, format, args);
  va_end(args);
  if (n < 0) return;
  if ((size_t)n > sizeof line - 2) n = (int)(sizeof line - 2);
  line[n++] = '\n';
  append_locked(line, (size_t)n);
}

void writ_line_str(struct writ_line *line, const char *text) {
  const size_t room = sizeof line->text - 1 - line->n;
  size_t n = strlen(text);
  if (n > room) n = room;
  memcpy(line->text + line->n, text, n);
  line->n += n;
}

void writ_line_u64(struct writ_line *line, unsigned long long value) {
  char digits[20];
  int k = 0;
  do {
    digits[k++] = (char)('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (k > 0 && line->n < sizeof line->text - 1) line->text[line->n++] = digits[--k];
}

void writ_line_i64(struct writ_line *line, long long value) {
  if (value < 0) {
    writ_line_str(line, "-");
    writ_line_u64(line, 0ull - (unsigned long long)value);
  } else {
    writ_line_u64(line, (unsigned long long)value);
  }
}

void writ_line_ptr(struct writ_line *line, const void *pointer) {
  static const char hex[] = "0123456789abcdef";
  uintptr_t value = (uintptr_t)pointer;
  if (value == 0) {
    writ_line_str(line, "(nil)");
    return;
  }
  char digits[2 * sizeof value];
  int k = 0;
  for (; value != 0; value >>= 4) digits[k++] = hex[value & 15];
  writ_line_str(line, "0x");
  while (k > 0 && line->n < sizeof line->text - 1) line->text[line->n++] = digits[--k];
}

void writ_journal_line(struct writ_line *line) {
  line->text[line->n] = '\n'; /* appends stop one short of the end: room for it */
  append_locked(line->text, line->n + 1);
}
