/* The capture journal: one JSON line per observation, written into a shared file mapping
 * (DIR/PID.jsonl) so that what was observed survives the process however it ends, with
 * no system call per record. `writ capture` turns the journals into a bundle. */
#ifndef WRIT_CAPTURE_JOURNAL_H
#define WRIT_CAPTURE_JOURNAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens this process's journal when WRIT_CAPTURE_DIR is set; a no-op otherwise. */
void writ_journal_open(void);
/* Appends one line (printf format, without the newline). Thread-safe. */
void writ_journal_printf(const char* format, ...) __attribute__((format(printf, 1, 2)));
/* A line built without printf, for the records of every posted request and completion
 * (a ping-pong's critical path): each append stops at the end of `text`, which then ends
 * the line short rather than overflow. */
struct writ_line {
  char text[512];
  unsigned long n;
};
void writ_line_str(struct writ_line* line, const char* text);
void writ_line_u64(struct writ_line* line, unsigned long long value);
void writ_line_i64(struct writ_line* line, long long value);
/* As printf's %p: "(nil)", or 0x and lowercase hex digits. */
void writ_line_ptr(struct writ_line* line, const void* pointer);
/* Appends the line (with its newline) to the journal. Thread-safe. */
void writ_journal_line(struct writ_line* line);
/* Nanoseconds since the epoch (CLOCK_REALTIME). */
uint64_t writ_journal_now_ns(void);
/* Escapes `text` for a JSON string into `out` (always terminated). */
void writ_journal_escape(const char* text, char* out, unsigned long size);

#ifdef __cplusplus
}
#endif

#endif
