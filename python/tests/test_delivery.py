"""Deliveries from Python: buffers without a copy, paths, processing steps, refusals."""

import hashlib
import json
import threading

import numpy as np
import pytest

import writ

CHUNK = 1 << 20


def test_numpy_array_round_trip_with_its_sha256_checked(receiver_factory):
    # The step runs on a receiver thread that takes the GIL while send() waits for its
    # receipt: this also shows send() releases the GIL (holding it would never return).
    array = np.arange(3 * (1 << 18), dtype=np.float32)  # 3 MiB: three 1 MiB chunks
    seen = {}

    def keep(delivery):
        received = np.empty_like(array)
        assert delivery.readinto(received) == array.nbytes
        seen[delivery.id] = (received, delivery.digest)

    with receiver_factory(processing=keep) as rx, writ.Sender(to=rx.address) as tx:
        outcome = tx.send(array, id="tensor-1", until="processed", rule="sha256",
                          chunk_size=CHUNK)

    expected = hashlib.sha256(array.tobytes()).hexdigest()
    assert outcome.digest == expected
    assert outcome.delivery["chunks"] == 3
    assert outcome.reached == {"rung": "processed", "retention": "volatile"}
    assert [r["rung"] for r in outcome.receipts] == [
        "transport", "received", "validated", "processed", "retained"]
    assert all(r["delivery"]["digest"] == expected for r in outcome.receipts)
    assert outcome.receipt("processed")["step"] == "keep"
    assert outcome.source["path"] == "zero-copy"  # the array's own memory, no staging copy
    received, digest = seen["tensor-1"]
    assert digest == expected
    # The PSM stand-ins are the `writ` program's alone: this process loads libfabric as
    # built (src/fabric/psm_stand_ins.h), so another library's PSM is never a stand-in.
    with open("/proc/self/maps") as maps:
        assert "writ-psm-stand-in" not in maps.read()
    assert np.array_equal(received, array)


def test_bytes_memoryview_and_path_are_sent(receiver_factory, tmp_path):
    payload = bytes(range(256)) * 64
    path = tmp_path / "payload.bin"
    path.write_bytes(payload)
    digests = set()
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        digests.add(tx.send(payload, id="as-bytes", rule="sha256").digest)
        digests.add(tx.send(memoryview(payload)[::1], id="as-view", rule="sha256").digest)
        by_path = tx.send(path, rule="sha256")
        assert by_path.delivery["id"] == "payload.bin"
        digests.add(by_path.digest)
    assert digests == {hashlib.sha256(payload).hexdigest()}


def test_a_processing_step_that_raises_refuses_the_delivery(receiver_factory):
    def reject(delivery):
        if delivery.id.startswith("bad"):
            raise ValueError("shape does not match the model")

    with receiver_factory(processing=reject) as rx, writ.Sender(to=rx.address) as tx:
        with pytest.raises(writ.RefusedError) as refused:
            tx.send(b"x" * 4096, id="bad-tensor", until="processed")
        assert tx.usable  # a refusal is the delivery's own: the session goes on
        # The step runs only for a delivery that asks for processed.
        fine = tx.send(b"y" * 16, id="fine", until="validated")
        assert fine.reached["rung"] == "validated"
        assert fine.receipt("processed") is None
    error = refused.value
    assert "ValueError: shape does not match the model" in str(error)
    assert (error.category, error.exit_code) == ("refused", 3)
    assert error.outcome.reached["rung"] == "validated"  # validated, never processed
    assert error.outcome.receipt("processed") is None


def test_an_oversize_delivery_is_refused(receiver_factory):
    with receiver_factory(max_delivery_bytes=1024) as rx, writ.Sender(to=rx.address) as tx:
        with pytest.raises(writ.RefusedError) as refused:
            tx.send(bytes(4096), id="too-big")
    assert refused.value.exit_code == 3
    assert "(oversize)" in str(refused.value) and "1024 bytes" in str(refused.value)


def test_processed_is_refused_by_a_receiver_without_a_step(receiver_factory):
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        with pytest.raises(writ.RefusedError) as refused:
            tx.send(b"abc", id="wants-processing", until="processed")
        assert "no processing step" in str(refused.value)


def test_usage_errors_raise_before_anything_moves(receiver_factory):
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        with pytest.raises(writ.UsageError):
            tx.send(b"abc", id="x", rule="md5")
        with pytest.raises(writ.UsageError):
            tx.send(b"abc")  # a buffer needs an id
        with pytest.raises(writ.UsageError) as strided:
            tx.send(np.arange(16, dtype=np.int64)[::2], id="strided")
        assert "C-contiguous" in str(strided.value)
        assert isinstance(strided.value, ValueError)


def test_senders_on_several_threads_deliver_at_once(receiver_factory):
    arrays = [np.full(1 << 18, i, dtype=np.uint32) for i in range(4)]
    outcomes, errors = {}, []
    with receiver_factory() as rx:
        def send(i):
            try:
                with writ.Sender(to=rx.address) as tx:
                    outcomes[i] = tx.send(arrays[i], id="part-%d" % i, rule="sha256",
                                          chunk_size=CHUNK)
            except Exception as e:  # reported below, not lost in the thread
                errors.append(e)

        threads = [threading.Thread(target=send, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    for i, array in enumerate(arrays):
        assert outcomes[i].digest == hashlib.sha256(array.tobytes()).hexdigest()


def test_threads_sharing_one_sender_send_together(receiver_factory):
    payloads = [bytes([i]) * (300 << 10) for i in range(3)]
    outcomes, errors = {}, []
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        def send(i):
            try:
                outcomes[i] = tx.send(payloads[i], id="shared-%d" % i, rule="sha256")
            except Exception as e:
                errors.append(e)

        threads = [threading.Thread(target=send, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert tx.usable
    assert errors == []
    assert [outcomes[i].digest for i in range(3)] == [
        hashlib.sha256(p).hexdigest() for p in payloads]


def test_out_writes_each_retained_delivery_as_a_file_with_its_receipts(receiver_factory,
                                                                       tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "taken").write_bytes(b"someone else's file")
    payload = bytes(range(256)) * 16
    with receiver_factory(out=out) as rx, writ.Sender(to=rx.address) as tx:
        outcome = tx.send(payload, id="../frame", rule="sha256")
        # a file with no delivery behind it is stale: moved aside, it never blocks the id
        tx.send(payload, id="taken", rule="sha256")
    assert (out / "%2E.%2Fframe").read_bytes() == payload  # inside out/, never ../frame
    assert not (tmp_path / "frame").exists()
    receipts = json.loads((out / "%2E.%2Fframe.receipts.json").read_text())
    assert receipts[-1] == outcome.receipt("retained")
    assert (out / "taken").read_bytes() == payload
    aside = [p for p in out.iterdir() if p.name.startswith(".taken.stale-")]
    assert [p.read_bytes() for p in aside] == [b"someone else's file"]
