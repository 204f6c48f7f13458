"""The PEP 517 build backend of `pip install .` for the Python package writ.

It builds the extension _writ with the project's CMake build (target writ_python) for the
interpreter that runs it, then writes the wheel itself: the standard library is all it
needs, so `pip install --no-build-isolation` works offline in a fresh venv of any CPython
3.11+ (a 3.12+ venv holds no setuptools, a 3.11 one no `wheel` package).

Where the extension is built:
  WRIT_BUILD_DIR=DIR   an existing, configured build directory (build/release after
                       `make demo`): only `cmake --build DIR --target writ_python` runs, so
                       objects already compiled are reused. Its extension must have been
                       built for an interpreter with this one's extension suffix.
  otherwise            build/python-<tag> in the source tree (configured on first use, with
                       ccache when it is installed); WRIT_JOBS sets the parallel jobs,
                       WRIT_CMAKE_ARGS (split on spaces) adds configure arguments.
"""

import base64
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "writ"


def _version():
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(writ VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError("writ: no project(writ VERSION ...) in CMakeLists.txt")
    return match.group(1)


def _tag():
    impl = "cp%d%d" % sys.version_info[:2]
    abi = impl + sys.abiflags
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return impl, abi, platform


def _run(command):
    print("writ: " + " ".join(str(c) for c in command), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in command], check=True, stdout=sys.stderr)


def _configure(build_dir):
    if (build_dir / "CMakeCache.txt").exists():
        return
    command = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
               "-DPython_EXECUTABLE=" + sys.executable, "-DWRIT_BENCH=OFF"]
    if shutil.which("ccache"):
        command += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
    _run(command + os.environ.get("WRIT_CMAKE_ARGS", "").split())


def _build_extension():
    """The path of _writ<EXT_SUFFIX>, built (or brought up to date) for this interpreter."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    given = os.environ.get("WRIT_BUILD_DIR")
    if given:
        build_dir = pathlib.Path(given).resolve()
        if not (build_dir / "CMakeCache.txt").exists():
            raise RuntimeError("writ: WRIT_BUILD_DIR=%s is not a configured build directory"
                               % given)
    else:
        build_dir = ROOT / "build" / ("python-" + sys.implementation.cache_tag + sys.abiflags)
        _configure(build_dir)
    jobs = os.environ.get("WRIT_JOBS", str(os.cpu_count() or 2))
    _run(["cmake", "--build", build_dir, "--target", "writ_python", "-j", jobs])
    built = build_dir / "python" / "writ" / ("_writ" + suffix)
    if not built.exists():
        found = sorted(p.name for p in (build_dir / "python" / "writ").glob("_writ*"))
        raise RuntimeError("writ: %s has no _writ%s for %s (it holds %s): build it for this "
                           "interpreter (unset WRIT_BUILD_DIR)" % (build_dir, suffix,
                                                                sys.executable, found or "none"))
    return built


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: writ\nVersion: %s\nRequires-Python: >=3.11\n"
            "Summary: One-sided RDMA deliveries (libfabric) with a signed receipt per rung\n"
            % version)


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (name, digest, len(data))


def _package_files(extension):
    files = {"writ/" + p.name: p for p in sorted(PACKAGE.iterdir())
             if p.suffix in (".py", ".pyi") or p.name == "py.typed"}
    files["writ/" + extension.name] = extension
    return files


# PEP 517 hooks -------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def _wheel_file(impl, abi, platform):
    return ("Wheel-Version: 1.0\nGenerator: writ_build_backend\nRoot-Is-Purelib: false\n"
            "Tag: %s-%s-%s\n" % (impl, abi, platform))


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    # Without this hook pip would build the whole wheel just to read its metadata.
    info = "writ-%s.dist-info" % _version()
    path = pathlib.Path(metadata_directory) / info
    path.mkdir(parents=True, exist_ok=True)
    (path / "METADATA").write_text(_metadata(_version()))
    (path / "WHEEL").write_text(_wheel_file(*_tag()))
    (path / "top_level.txt").write_text("writ\n")
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    impl, abi, platform = _tag()
    extension = _build_extension()
    name = "writ-%s-%s-%s-%s.whl" % (version, impl, abi, platform)
    info = "writ-%s.dist-info/" % version
    entries = {path: src.read_bytes() for path, src in _package_files(extension).items()}
    entries[info + "METADATA"] = _metadata(version).encode()
    entries[info + "WHEEL"] = _wheel_file(impl, abi, platform).encode()
    entries[info + "top_level.txt"] = b"writ\n"
    record = "".join(_record_line(path, data) for path, data in entries.items())
    record += info + "RECORD,,\n"
    entries[info + "RECORD"] = record.encode()
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / name, "w",
                         zipfile.ZIP_DEFLATED) as wheel:
        for path, data in entries.items():
            mode = 0o755 if path.endswith(".so") else 0o644
            item = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            item.external_attr = (0o100000 | mode) << 16
            # The extension (tens of MB with debug info) is stored: deflating it costs more
            # time than the copy it saves.
            item.compress_type = zipfile.ZIP_STORED if path.endswith(".so") else zipfile.ZIP_DEFLATED
            wheel.writestr(item, data)
    return name
