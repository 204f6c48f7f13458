#!/usr/bin/env python3
"""Runs clang's -Wthread-safety over every src/ and tools/ translation unit of a clang build.

Usage: check-thread-safety.py BUILD_DIR

The analysis is part of clang's semantic checks, so each unit is compiled with
-fsyntax-only: the fuzz build gets the check for every file without generating
instrumented code for the ones no fuzzer links (most of src/ and tools/). Reads the
build's compile_commands.json; fails, printing clang's output, when any unit does.
"""
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys


def syntax_only(entry):
    args = shlex.split(entry["command"])
    if os.path.basename(args[0]) == "ccache":
        args = args[1:]
    if "-o" in args:
        i = args.index("-o")
        del args[i : i + 2]
    args = [a for a in args if a != "-c"] + ["-fsyntax-only", "-Wthread-safety"]
    run = subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True)
    return entry["file"], run.returncode, run.stdout + run.stderr


def main():
    build = sys.argv[1]
    source = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)

    def ours(e):
        # Unity batches live in the build tree; they stand for the src/ and tools/ files
        # they include.
        path = os.path.realpath(e["file"])
        if "/Unity/" in path:
            with open(path) as f:
                text = f.read()
            return any(f'"{source}/{d}/' in text for d in ("src", "tools"))
        return path.startswith((f"{source}/src/", f"{source}/tools/"))

    units = [e for e in entries if ours(e)]
    if not units:
        print(f"check-thread-safety: no src/ or tools/ units in {build}", file=sys.stderr)
        return 1
    jobs = int(os.environ.get("JOBS", "2"))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, rc, out in pool.map(syntax_only, units):
            if rc != 0:
                failed += 1
                print(f"--- {name}\n{out}", file=sys.stderr)
    print(f"check-thread-safety: {len(units)} units, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
