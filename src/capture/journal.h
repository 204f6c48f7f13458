/* The capture journal: one JSON line per observation, written into a shared file mapping
 * (DIR/PID.jsonl) so that what was observed survives the process however it ends, with
 * no system call per record. `writ capture` turns the journals into a bundle. */
#ifndef WRIT_CAPTURE_JOURNAL_H
#define WRIT_CAPTURE_JOURNAL_H

#include <stdint.h>

/* Opens this process's journal when WRIT_CAPTURE_DIR is set; a no-op otherwise. */
void writ_journal_open(void);
/* Appends one line (printf format, without the newline). Thread-safe. */
void writ_journal_printf(const char* format, ...) __attribute__((format(printf, 1, 2)));
/* Nanoseconds since the epoch (CLOCK_REALTIME). */
uint64_t writ_journal_now_ns(void);
/* Escapes `text` for a JSON string into `out` (always terminated). */
void writ_journal_escape(const char* text, char* out, unsigned long size);

#endif
