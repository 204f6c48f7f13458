#!/usr/bin/env python3
"""Every subcommand's error paths against docs/cli.md's exit-code table.

For each subcommand `writ help` lists (at any depth; a new one fails this test until it
has a case here), the error paths that need no running serve are run once: the exit code
must be the one docs/cli.md's table gives for that kind of failure, stderr must start
with `writ: ` and name the problem in plain words (no C++ exception or stream text), and a
usage error prints nothing on stdout. The table's codes are read from docs/cli.md, so a
renumbered table fails here too.
Usage: cli_exit_codes_test.py WRIT_BINARY DOCS_CLI_MD
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_reference_test import binary_commands  # noqa: E402

# The meaning each case relies on, as the table's row begins (docs/cli.md, "Exit codes").
MEANINGS = {
    "not_found": "asked about something that does not exist",
    "usage": "usage error or malformed input",
    "refused": "the receiver refused",
    "transport": "transport failure",
    "invalid": "validation failed",
    "retention": "the requested retention class could not be reached",
}
NOISE = re.compile(r"basic_(ios|filebuf|string)|std::|what\(\)|iostream error|terminate called")
UNREACHABLE = "127.0.0.1:1"  # nothing listens on port 1


def table_codes(doc_path):
    codes = {}
    with open(doc_path, encoding="utf-8") as doc:
        for line in doc:
            m = re.match(r"^\| (\d) \| (.*) \|$", line.rstrip("\n"))
            if not m:
                continue
            for kind, meaning in MEANINGS.items():
                if m.group(2).startswith(meaning):
                    codes[kind] = int(m.group(1))
    missing = set(MEANINGS) - set(codes)
    if missing:
        raise SystemExit(f"cli_exit_codes_test: docs/cli.md's table lacks {sorted(missing)}")
    return codes


def cases(tmp):
    """(subcommand path, argv after `writ`, kind of failure) for every subcommand."""
    missing = os.path.join(tmp, "missing")
    not_a_dir = os.path.join(tmp, "file")
    with open(not_a_dir, "w") as f:
        f.write("not a bundle, not a receipt\n")
    return [
        (("serve",), ["serve", "--listen", "no-port"], "usage"),
        (("serve",), ["serve", "--listen", "127.0.0.1:0", "--provider", "no-such"], "usage"),
        (("serve",), ["serve", "--listen", "127.0.0.1:0", "--admin-key", "zz"], "usage"),
        (("send",), ["send", missing, "--to", UNREACHABLE], "usage"),
        (("send",), ["send", "-", "--to", UNREACHABLE], "usage"),
        (("send",), ["send", not_a_dir, "--to", UNREACHABLE], "transport"),
        (("query",), ["query", "x", "--to", "no-port"], "usage"),
        (("query",), ["query", "x", "--to", UNREACHABLE], "transport"),
        (("rm",), ["rm", "x", "--to", UNREACHABLE], "usage"),
        (("rm",), ["rm", "x", "--to", UNREACHABLE, "--identity", os.path.join(tmp, "id")],
         "transport"),
        (("store",), ["store"], "usage"),
        (("store", "ls"), ["store", "ls", "--data", missing], "usage"),
        (("store", "cat"), ["store", "cat", "x", "--data", missing], "usage"),
        (("store", "check"), ["store", "check", "--data", missing], "usage"),
        (("store", "rm"), ["store", "rm", "x", "--data", tmp], "usage"),
        (("store", "quarantine"), ["store", "quarantine"], "usage"),
        (("store", "quarantine", "ls"), ["store", "quarantine", "ls", "--data", missing], "usage"),
        (("store", "quarantine", "purge"), ["store", "quarantine", "purge", "--data", missing],
         "usage"),
        (("demo",), ["demo", "--bogus"], "usage"),
        (("audit",), ["audit", tmp], "usage"),
        (("audit",), ["audit", missing], "usage"),
        (("audit",), ["audit", not_a_dir], "usage"),
        (("verify",), ["verify", missing], "usage"),
        (("verify",), ["verify", not_a_dir], "invalid"),  # readable, not a receipt
        (("providers",), ["providers", "--bogus"], "usage"),
        (("key",), ["key"], "usage"),
        (("key", "show"), ["key", "show", "--identity", os.path.join(not_a_dir, "sub")], "usage"),
        (("help",), ["help", "sevre"], "usage"),
        (("cluster",), ["cluster"], "usage"),
        (("cluster", "ls"), ["cluster", "ls"], "usage"),
        (("cluster", "ls"), ["cluster", "ls", "--cluster", "http://" + UNREACHABLE], "transport"),
        (("repair",), ["repair"], "usage"),
        (("capture",), ["capture"], "usage"),
        (("capture",), ["capture", "--evidence", os.path.join(tmp, "e.json")], "usage"),
    ]


def main():
    writ, doc = sys.argv[1], sys.argv[2]
    codes = table_codes(doc)
    problems, ran = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        all_cases = cases(tmp)
        covered = {path for path, _, _ in all_cases}
        for path in sorted(binary_commands(writ)):
            if path not in covered:
                problems.append(f"writ {' '.join(path)}: no error-path case in this test")
        for path, argv, kind in all_cases:
            ran += 1
            run = subprocess.run([writ, *argv], capture_output=True, text=True, timeout=60,
                                 stdin=subprocess.DEVNULL)
            shown = "writ " + " ".join(argv)
            if run.returncode != codes[kind]:
                problems.append(f"{shown}: exit {run.returncode}, docs/cli.md gives "
                                f"{codes[kind]} ({MEANINGS[kind]}); stderr: {run.stderr.strip()}")
            if not run.stderr.startswith("writ: "):
                problems.append(f"{shown}: stderr does not start with 'writ: ': {run.stderr!r}")
            if NOISE.search(run.stderr):
                problems.append(f"{shown}: C++ library text on stderr: {run.stderr.strip()}")
            if kind == "usage" and run.stdout:
                problems.append(f"{shown}: a usage error printed on stdout: {run.stdout!r}")
    for p in problems:
        print("cli_exit_codes_test: " + p)
    print(f"cli_exit_codes_test: {ran} error paths run, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
