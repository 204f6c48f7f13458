#!/bin/sh
# `pip install` of the source tree into a fresh venv, offline and without build isolation,
# as docs/python.md says; then the installed package (not the build tree's) sends a block
# list and a submitted array. WRIT_BUILD_DIR (set by CTest) makes it reuse the release
# build's objects instead of compiling the project again.
# Usage: pip_install_test.sh PYTHON SOURCE_DIR VENV_DIR
set -eu
python=$1
source_dir=$2
venv=$3
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --no-build-isolation --no-index --no-cache-dir \
  --disable-pip-version-check -q "$source_dir"
cd "$venv"  # away from the source tree: `import writ` must find the installed package
"$venv/bin/python" - "$venv" <<'PY'
import os
import sys

import numpy as np

import writ

venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(writ.__file__).startswith(venv), writ.__file__
assert os.path.exists(os.path.join(os.path.dirname(writ.__file__), "__init__.pyi"))
with writ.Receiver(provider="tcp", identity=os.path.join(venv, "rx-identity"),
                   window_pool_bytes=16 << 20, window_bytes=4 << 20) as rx, \
        writ.Sender(to=rx.address) as tx:
    handle = tx.submit(np.ones(1 << 18, np.float32), id="pip-array")
    listed = tx.send([b"header", np.arange(1000, dtype=np.int64)], id="pip-blocks")
    assert handle.result(30).reached["rung"] == "validated"
    assert bytes(rx.read("pip-blocks", region=0)) == b"header"
    assert listed.bytes == 6 + 8000
print("writ", writ.__version__, "installed in", os.path.dirname(writ.__file__))
PY
