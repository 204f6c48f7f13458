# Sourced by the bench scripts: wait for a process's log line as it is written (tail -F
# follows the file by inotify), not by polling it on a timer.
# wait_line FILE PATTERN [COUNT] [SECONDS]: succeeds once FILE holds COUNT lines matching
# the extended regex PATTERN (default 1), fails after SECONDS (default 10).
wait_line() {
  local file=$1 pattern=$2 count=${3:-1} secs=${4:-10} dir tail_pid found
  dir=$(mktemp -d)
  mkfifo "$dir/lines"
  timeout "$secs" tail -n +1 -F "$file" 2>/dev/null > "$dir/lines" &
  tail_pid=$!
  # grep -m stops at the COUNTth match; it acts on each read, where mawk would wait for a
  # full buffer.
  found=$(grep -E -c -m "$count" -- "$pattern" < "$dir/lines" || true)
  kill "$tail_pid" 2>/dev/null || true
  wait "$tail_pid" 2>/dev/null || true
  rm -rf "$dir"
  [[ $found -ge $count ]]
}
