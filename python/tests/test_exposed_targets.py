"""Deliveries into an array the receiver's program exposed (Receiver.expose): at an offset
and into a list of pages, validated in place; the callback says when the bytes are usable."""

import threading

import numpy as np
import pytest

import writ

PAGE = 16 << 10


class Told:
    """What the on_delivery callback heard."""

    def __init__(self):
        self.seen, self.cond = [], threading.Condition()

    def __call__(self, delivery):
        with self.cond:
            self.seen.append(delivery)
            self.cond.notify_all()

    def wait(self, n):
        with self.cond:
            self.cond.wait_for(lambda: len(self.seen) >= n, timeout=10)
            return list(self.seen)


def test_blocks_land_in_their_pages_and_are_told_usable_after_validation(receiver_factory):
    cache = np.zeros((64, PAGE), dtype=np.uint8)
    told = Told()
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        rx.expose("kv", cache, page_size=PAGE, on_delivery=told)
        block = np.random.default_rng(1).integers(0, 256, 3 * PAGE, dtype=np.uint8)
        outcome = tx.send(block, id="b-1", target="kv", target_pages=[9, 3, 40])
        at_offset = np.arange(4096, dtype=np.uint8)
        tx.send(at_offset, id="b-2", target="kv", target_offset=20 * PAGE)
        seen = told.wait(2)
        rx.revoke("kv")
    pages = block.reshape(3, PAGE)
    assert np.array_equal(cache[9], pages[0])
    assert np.array_equal(cache[3], pages[1])
    assert np.array_equal(cache[40], pages[2])
    assert np.array_equal(cache[20][:4096], at_offset)
    assert not cache[[0, 1, 2, 4, 8, 10, 39, 41]].any()
    validated = [r for r in outcome.receipts if r["rung"] == "validated"][0]
    assert "pages 9, 3, 40 of 16384 bytes" in validated["statement"]
    by_id = {d.id: d for d in seen}
    assert by_id["b-1"].ok and by_id["b-1"].pages == [9, 3, 40]
    assert by_id["b-2"].ok and (by_id["b-2"].offset, by_id["b-2"].bytes) == (20 * PAGE, 4096)


def test_a_page_listed_twice_is_refused_naming_it(receiver_factory):
    cache = np.zeros((8, PAGE), dtype=np.uint8)
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        rx.expose("kv", cache, page_size=PAGE)
        twice = r"\(target\).*page 2 of target kv is listed twice"
        with pytest.raises(writ.RefusedError, match=twice):
            tx.send(bytes(2 * PAGE), id="twice", target="kv", target_pages=[2, 2])
        with pytest.raises(writ.RefusedError, match="no target elsewhere is exposed"):
            tx.send(b"x" * 16, id="nowhere", target="elsewhere")
    assert not cache.any()


def test_expose_needs_a_writable_buffer_and_revoke_a_known_name(receiver_factory):
    with receiver_factory() as rx:
        with pytest.raises(writ.UsageError, match="writable"):
            rx.expose("ro", bytes(4096))
        with pytest.raises(writ.NotFoundError):
            rx.revoke("never")
