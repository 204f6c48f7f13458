"""The receiver's side from Python: deliveries as they arrive, reads, removals, retention."""

import threading

import numpy as np
import pytest

import writ


def test_deliveries_arrive_with_their_receipts_and_read_back_into_numpy(receiver_factory):
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        array = np.arange(1 << 16, dtype=np.float32)
        tx.send(array, id="w-1", until="retained")
        tx.send(b"second", id="w-2")
        first = rx.next_delivery(timeout=10)
        second = rx.next_delivery(timeout=10)
        assert rx.next_delivery(timeout=0.1) is None
    # closed: what was held is no longer readable, the arrivals still say what came
    assert (first.id, first.bytes, first.retention) == ("w-1", array.nbytes, "volatile")
    assert second.id == "w-2"


def test_an_arrival_holds_receipts_regions_and_reads_without_a_copy_in_between(
        receiver_factory):
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        array = np.arange(1 << 16, dtype=np.float32)
        outcome = tx.send(array, id="w-1", until="retained")
        arrival = rx.next_delivery(timeout=10)
        assert [r["rung"] for r in arrival.receipts] == [r["rung"] for r in outcome.receipts
                                                         if r["rung"] != "transport"]
        assert arrival.receipts[-1]["rung"] == "retained"
        assert arrival.regions == [array.nbytes]
        assert arrival.digest == outcome.digest
        out = np.empty_like(array)
        assert arrival.read(out=out) is out
        assert np.array_equal(out, array)
        view = np.frombuffer(rx.read("w-1"), dtype=np.float32)
        assert np.array_equal(view, array)


def test_on_delivery_is_called_for_each_retained_delivery_in_order(receiver_factory):
    seen, done = [], threading.Event()

    def on_delivery(arrival):
        seen.append((arrival.id, bytes(arrival.read())))
        if len(seen) == 3:
            done.set()

    with receiver_factory(on_delivery=on_delivery) as rx, writ.Sender(to=rx.address) as tx:
        for i in range(3):
            tx.send(b"block %d" % i, id="cb-%d" % i)
        assert done.wait(10)
    assert seen == [("cb-%d" % i, b"block %d" % i) for i in range(3)]


def test_remove_takes_a_delivery_out_and_a_second_remove_is_not_found(receiver_factory):
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        tx.send(b"x" * 1000, id="gone")
        removed = rx.remove("gone")
        assert removed["id"] == "gone" and removed["bytes"] == 1000
        with pytest.raises(writ.NotFoundError):
            rx.remove("gone")
        with pytest.raises(writ.NotFoundError):
            rx.held("gone")


@pytest.mark.parametrize("retention", ["volatile", "process-restart", "power-loss"])
def test_until_retained_reaches_every_retention_class(receiver_factory, tmp_path, retention):
    with receiver_factory(data=tmp_path / "data") as rx, writ.Sender(to=rx.address) as tx:
        outcome = tx.send(b"k" * 5000, id="r-" + retention, until="retained",
                          retention=retention)
        assert outcome.reached["retention"] == retention
        assert outcome.receipt("retained") is not None
        held = rx.held("r-" + retention)
        assert held.retention == retention
        assert held.receipts[-1]["rung"] == "retained"


def test_blocks_of_256_kib_use_standing_windows_of_that_slot_size(receiver_factory):
    block = np.ones(256 << 10, np.uint8)
    with receiver_factory(ring_slot_size=256 << 10, ring_slots=8,
                          window_pool_bytes=64 << 20) as rx, writ.Sender(to=rx.address) as tx:
        tx.send(block, id="first")  # the ring is granted with the first retained delivery
        rings = [tx.submit(block, id="ring-%d" % i).result(30).document["ring"]
                 for i in range(4)]
    assert rings == [True] * 4
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:  # 64 KiB slots
        tx.send(block, id="first")
        assert tx.send(block, id="too-big-for-a-slot").document["ring"] is False
