#!/usr/bin/env python3
"""docs/cli.md against the binary: every subcommand `writ help` lists (at any depth) has
a section, every flag its `--help` shows is in that section's table, and every flag or
section documented exists.

What this reads in docs/cli.md (the format a new flag or subcommand follows):
  * A section per subcommand: a heading `## `writ SUB`` or `### `writ SUB ...``, the
    subcommand path in backticks (`writ store quarantine ls`); words after the path
    that start with an upper-case letter or `[` (FILE, ID, [NAME...]) are ignored.
    The section runs to the next heading of level 2 or 3.
  * In it, a flag is documented by a table row whose first cell begins with the flag in
    backticks: | `--chunk-size SIZE` | 8MiB | ... |
Usage: cli_reference_test.py WRIT_BINARY DOCS_CLI_MD
"""
import re
import subprocess
import sys

HEADING = re.compile(r"^#{2,3} `writ ([a-z][a-z -]*?)((?: [A-Z\[].*)?)`\s*$")
ROW_FLAG = re.compile(r"^\|\s*`(--[a-z0-9][a-z0-9-]*)")
HELP_FLAG = re.compile(r"^  (?:-[a-zA-Z],)?(--[a-z0-9][a-z0-9-]*)")


def help_of(writ, path):
    run = subprocess.run([writ, *path, "--help"], capture_output=True, text=True, timeout=30)
    if run.returncode != 0:
        raise LookupError(f"`writ {' '.join(path)} --help` exited {run.returncode}: {run.stderr}")
    return run.stdout


def parse_help(text):
    """(flags, subcommands) of one --help page."""
    flags, subs, part = set(), [], None
    for line in text.splitlines():
        if line in ("Options:", "Subcommands:", "Positionals:"):
            part = line
            continue
        if not line.strip():
            continue
        if part == "Options:":
            m = HELP_FLAG.match(line)
            if m and m.group(1) != "--help":
                flags.add(m.group(1))
        elif part == "Subcommands:" and line.startswith("  ") and not line.startswith("    "):
            subs.append(line.split()[0])
    return flags, subs


def binary_commands(writ, path=()):
    """{path tuple: flags} for every subcommand below `path`."""
    found = {}
    flags, subs = parse_help(help_of(writ, list(path)) if path else help_of(writ, []))
    if path:
        found[path] = flags
    for sub in subs:
        found.update(binary_commands(writ, path + (sub,)))
    return found


def documented_commands(doc_path):
    """{path tuple: flags} of docs/cli.md's sections."""
    sections, current = {}, None
    with open(doc_path, encoding="utf-8") as doc:
        for line in doc:
            line = line.rstrip("\n")
            if re.match(r"^#{1,3} ", line):
                m = HEADING.match(line)
                current = tuple(m.group(1).split()) if m else None
                if current is not None:
                    sections.setdefault(current, set())
                continue
            m = ROW_FLAG.match(line)
            if current is not None and m:
                sections[current].add(m.group(1))
    return sections


def main():
    writ, doc = sys.argv[1], sys.argv[2]
    binary = binary_commands(writ)
    documented = documented_commands(doc)
    problems = []
    for path, flags in sorted(binary.items()):
        name = "writ " + " ".join(path)
        if path not in documented:
            problems.append(f"{name}: no section `## `{name}`` in docs/cli.md")
            continue
        for flag in sorted(flags - documented[path]):
            problems.append(f"{name} {flag}: in --help, not in docs/cli.md")
    for path, flags in sorted(documented.items()):
        name = "writ " + " ".join(path)
        if path not in binary:
            problems.append(f"{name}: documented in docs/cli.md, but no such subcommand")
            continue
        for flag in sorted(flags - binary[path]):
            problems.append(f"{name} {flag}: documented in docs/cli.md, not in --help")
    for p in problems:
        print("cli_reference_test: " + p)
    total = sum(len(f) for f in binary.values())
    print(f"cli_reference_test: {len(binary)} subcommands, {total} flags compared, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
