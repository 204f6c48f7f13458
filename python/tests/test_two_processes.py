"""Exposed targets across two processes: a receiving program of its own exposes a paged
array (exposing_receiver.py); this process sends blocks into scattered pages of it, each
validated where it landed, and the receiving program's array holds them afterwards."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import writ

PAGE = 16 << 10
PAGES = 64


@pytest.mark.parametrize("provider", ["tcp", "shm"])
def test_blocks_land_in_the_pages_of_another_processs_array(tmp_path, provider):
    out = tmp_path / "cache.npy"
    child = subprocess.Popen(
        [sys.executable, str(pathlib.Path(__file__).with_name("exposing_receiver.py")), str(out),
         provider, str(tmp_path / "rx-identity"), str(PAGES), str(PAGE)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("listening on "), line
        address = line.split()[-1]
        rng = np.random.default_rng(11)
        blocks = {"blk-%d" % i: (rng.integers(0, 256, 4 * PAGE, dtype=np.uint8), pages)
                  for i, pages in enumerate([[7, 2, 40, 41], [0, 63, 5, 6], [30, 12, 13, 50]])}
        with writ.Sender(to=address, provider=provider, in_flight=8) as tx:
            handles = [tx.submit(block, id=i, target="kv", target_pages=pages)
                       for i, (block, pages) in blocks.items()]
            outcomes = [h.result(timeout=30) for h in handles]
            with pytest.raises(writ.RefusedError, match="page 63 of target kv is listed twice"):
                tx.send(bytes(2 * PAGE), id="twice", target="kv", target_pages=[63, 63])
        told = sorted(child.stdout.readline().split()[1:] for _ in blocks)
        assert told == [[i, "ok"] for i in sorted(blocks)]
        child.stdin.close()
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    for outcome in outcomes:
        assert outcome.reached["rung"] == "validated"
        assert outcome.context["provider"].startswith(provider), outcome.context
    cache = np.load(out)
    written = set()
    for block, pages in blocks.values():
        for k, page in enumerate(pages):
            assert np.array_equal(cache[page], block[k * PAGE:(k + 1) * PAGE]), page
            written.add(page)
    assert not cache[sorted(set(range(PAGES)) - written)].any(), "bytes outside the listed pages"
