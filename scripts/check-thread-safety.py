#!/usr/bin/env python3
"""Runs clang's -Wthread-safety over every src/ and tools/ translation unit of a clang build.

Usage: check-thread-safety.py BUILD_DIR

The analysis is part of clang's semantic checks, so each unit is compiled with
-fsyntax-only: the fuzz build gets the check for every file without generating
instrumented code for the ones no fuzzer links (most of src/ and tools/); a unit the
build has already compiled from its current sources (the fuzzers' libraries) was checked
then and is skipped. Reads the build's compile_commands.json; fails, printing clang's
output, when any unit does.
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


def compiled_up_to_date(entry):
    """True when the build already compiled this unit (with -Wthread-safety and -Werror, as
    every unit of this clang build) from the sources as they are: its object is newer than
    every file its dependency list names. The fuzz targets' libraries are such units."""
    args = shlex.split(entry["command"])
    if "-o" not in args:
        return False
    obj = os.path.join(entry["directory"], args[args.index("-o") + 1])
    try:
        built = os.stat(obj).st_mtime
        with open(obj + ".d") as f:
            deps = f.read().replace("\\\n", " ").split()
    except OSError:
        return False
    deps = [d for d in deps[1:] if not d.endswith(":")]
    try:
        return bool(deps) and all(os.stat(d).st_mtime <= built for d in deps)
    except OSError:
        return False


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
    compiled = [e for e in units if compiled_up_to_date(e)]
    units = [e for e in units if e not in compiled]
    jobs = int(os.environ.get("JOBS", "2"))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, rc, out in pool.map(syntax_only, units):
            if rc != 0:
                failed += 1
                print(f"--- {name}\n{out}", file=sys.stderr)
    print(f"check-thread-safety: {len(units)} units checked, {failed} failed; "
          f"{len(compiled)} more already compiled by this build with the check")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
