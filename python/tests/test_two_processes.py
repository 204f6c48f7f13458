"""Exposed targets across two processes: a receiving program of its own exposes a paged
array (exposing_receiver.py); this process sends blocks into scattered pages of it and a
range at an offset, each validated where it landed, and the receiving program's array holds
them afterwards, and nothing elsewhere."""

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
            at_offset = rng.integers(0, 256, PAGE + PAGE // 2, dtype=np.uint8)  # page 20 on
            handles.append(tx.submit(at_offset, id="at-offset", target="kv",
                                     target_offset=20 * PAGE))
            outcomes = [h.result(timeout=30) for h in handles]
            with pytest.raises(writ.RefusedError, match="page 63 of target kv is listed twice"):
                tx.send(bytes(2 * PAGE), id="twice", target="kv", target_pages=[63, 63])
        told = sorted(child.stdout.readline().split()[1:] for _ in range(len(blocks) + 1))
        assert told == [["at-offset", "ok"]] + [[i, "ok"] for i in sorted(blocks)]
        child.stdin.close()
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    for outcome in outcomes:
        assert outcome.reached["rung"] == "validated"
        assert outcome.context["provider"].startswith(provider), outcome.context
    expected = np.zeros((PAGES, PAGE), dtype=np.uint8)
    for block, pages in blocks.values():
        for k, page in enumerate(pages):
            expected[page] = block[k * PAGE:(k + 1) * PAGE]
    expected.reshape(-1)[20 * PAGE:20 * PAGE + at_offset.size] = at_offset
    cache = np.load(out)
    differ = np.flatnonzero(cache.reshape(-1) != expected.reshape(-1))
    assert differ.size == 0, "the array differs from byte %d (page %d)" % (
        differ[0], differ[0] // PAGE)
