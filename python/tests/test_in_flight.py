"""Many deliveries in flight on one Sender (submit, handles, asyncio) and block lists."""

import asyncio
import gc
import hashlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import writ

BLOCK = 256 << 10


def _blocks(n, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, BLOCK, dtype=np.uint8) for _ in range(n)]


def test_many_submitted_blocks_are_in_flight_together_and_all_retained(receiver_factory):
    blocks = _blocks(48)
    with receiver_factory(max_deliveries_per_sender=64) as rx, \
            writ.Sender(to=rx.address, in_flight=32) as tx:
        assert tx.max_in_flight == 32
        handles = [tx.submit(b, id="kv-%d" % i, until="retained") for i, b in enumerate(blocks)]
        outcomes = [h.result(timeout=60) for h in handles]
        assert all(h.done() for h in handles)
        for i, (b, outcome) in enumerate(zip(blocks, outcomes)):
            assert outcome.delivery["id"] == "kv-%d" % i
            assert outcome.reached == {"rung": "validated", "retention": "volatile"}
            assert np.array_equal(np.frombuffer(rx.read("kv-%d" % i), np.uint8), b)


def test_the_sender_keeps_at_most_what_the_receiver_allows_in_flight(receiver_factory):
    with receiver_factory(max_deliveries_per_sender=4) as rx, \
            writ.Sender(to=rx.address, in_flight=64) as tx:
        assert tx.max_in_flight == 4
        handles = [tx.submit(b, id="b%d" % i) for i, b in enumerate(_blocks(12))]
        assert [h.result(60).reached["rung"] for h in handles] == ["validated"] * 12


def test_handles_are_awaitable_from_asyncio(receiver_factory):
    blocks = _blocks(16, seed=2)

    async def send_all(tx):
        return await asyncio.gather(*(tx.submit(b, id="a%d" % i) for i, b in enumerate(blocks)))

    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        outcomes = asyncio.run(send_all(tx))
    assert [o.delivery["id"] for o in outcomes] == ["a%d" % i for i in range(16)]
    assert all(o.reached["rung"] == "validated" for o in outcomes)


def test_a_failed_submitted_delivery_raises_its_typed_error_from_result_and_await(
        receiver_factory):
    with receiver_factory(max_delivery_bytes=1 << 20) as rx, writ.Sender(to=rx.address) as tx:
        handle = tx.submit(np.zeros(2 << 20, np.uint8), id="too-big")
        with pytest.raises(writ.RefusedError) as refused:
            handle.result(30)
        assert "too-big" in str(refused.value) or refused.value.outcome is not None

        async def wait():
            return await tx.submit(np.zeros(2 << 20, np.uint8), id="too-big-2")
        with pytest.raises(writ.RefusedError):
            asyncio.run(wait())
        assert tx.send(b"still usable", id="after").reached["rung"] == "validated"


def test_result_with_a_timeout_raises_timeout_error_while_in_flight():
    handle = writ.Handle("never")
    assert not handle.done()
    with pytest.raises(TimeoutError):
        handle.result(timeout=0.05)


def test_a_block_list_is_one_delivery_with_one_receipt_set_read_back_block_by_block(
        receiver_factory):
    blocks = [np.arange(1000, dtype=np.float32), b"header", memoryview(bytes(300000)),
              np.full((64, 1024), 7, dtype=np.int16), b""]
    whole = b"".join(bytes(memoryview(b)) for b in blocks)
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        outcome = tx.send(blocks, id="layer-3", rule="sha256")
        assert outcome.digest == hashlib.sha256(whole).hexdigest()
        assert outcome.bytes == len(whole)
        assert [r["rung"] for r in outcome.receipts] == [
            "transport", "received", "validated", "retained"]
        held = rx.held("layer-3")
        assert held.regions == [memoryview(b).nbytes for b in blocks]
        for k, b in enumerate(blocks):
            assert bytes(rx.read("layer-3", region=k)) == bytes(memoryview(b))
        out = np.empty((64, 1024), dtype=np.int16)
        assert rx.read("layer-3", region=3, out=out) is out
        assert (out == 7).all()
        handle = tx.submit(blocks[:2], id="layer-4")
        assert handle.result(30).bytes == 4000 + 6


def test_bad_input_raises_typed_errors_at_once_and_nothing_is_copied(receiver_factory):
    strided = np.arange(1 << 16, dtype=np.float64)[::2]
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        with pytest.raises(writ.UsageError, match="contiguous"):
            tx.submit(strided, id="strided")
        with pytest.raises(writ.UsageError, match="block 1"):
            tx.send([b"ok", strided], id="mixed")
        with pytest.raises(writ.UsageError, match="id="):
            tx.submit(b"x")
        with pytest.raises(writ.UsageError):
            tx.send([b"x", 42], id="not-a-buffer")
        tx.send(b"abc", id="small")
        read_only = np.zeros(3, np.uint8)
        read_only.flags.writeable = False
        with pytest.raises(writ.UsageError, match="writable"):
            rx.read("small", out=read_only)
        with pytest.raises(writ.UsageError, match="holds 4 bytes"):
            rx.read("small", out=bytearray(4))
        with pytest.raises(writ.NotFoundError):
            rx.read("never-sent")
        tx.close()
        with pytest.raises(writ.UsageError, match="closed"):
            tx.submit(b"late", id="late")
        with pytest.raises(writ.UsageError, match="closed"):
            tx.send([b"late"], id="late")


def test_a_buffer_dropped_while_in_flight_is_kept_alive_by_its_handle(receiver_factory):
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        array = np.full(4 << 20, 3, dtype=np.uint8)
        expected = hashlib.sha256(array.tobytes()).hexdigest()
        handles = [tx.submit(array, id="dropped", rule="sha256")]
        del array
        gc.collect()
        assert handles[0].result(30).digest == expected
        handles = [tx.submit(np.full(BLOCK, i, np.uint8), id="temp-%d" % i) for i in range(8)]
        gc.collect()
        for i, h in enumerate(handles):
            h.result(30)
            assert bytes(rx.read("temp-%d" % i)) == bytes([i]) * BLOCK


def test_closing_fails_what_is_in_flight_with_a_typed_error(receiver_factory):
    with receiver_factory() as rx:
        tx = writ.Sender(to=rx.address, in_flight=2)
        handles = [tx.submit(np.zeros(4 << 20, np.uint8), id="c%d" % i, chunk_size=1 << 20)
                   for i in range(16)]
        tx.close()
        failed = 0
        for h in handles:
            assert h.done()  # close() told every handle before it returned
            try:
                assert h.result(0).reached["rung"] == "validated"  # finished before the close
            except writ.UsageError as e:  # the C++ session's "the session was closed"
                assert "closed" in str(e)
                failed += 1
        assert failed > 0


def test_the_interpreter_exits_cleanly_with_sends_in_flight(receiver_factory, source_dir):
    with receiver_factory() as rx:
        script = textwrap.dedent("""
            import numpy as np, writ
            tx = writ.Sender(to=%r, in_flight=4)
            hs = [tx.submit(np.zeros(4 << 20, np.uint8), id="exit-%%d" %% i) for i in range(32)]
            hs[0].add_done_callback(lambda h: None)
            print("submitted", flush=True)
        """ % rx.address)
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "submitted"
    assert "Fatal" not in run.stderr and "Traceback" not in run.stderr, run.stderr
