"""Receiver.view: a retained delivery's bytes in place in the receiver's memory, no copy."""

import numpy as np
import pytest

import writ


def test_a_view_is_read_only_shows_the_bytes_and_is_not_a_copy(receiver_factory):
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        array = np.arange(1 << 18, dtype=np.float32)  # 1 MiB: placed by the transport
        tx.send(array, id="v-1")
        view = rx.view("v-1")
        assert isinstance(view, memoryview) and view.readonly
        as_array = np.frombuffer(view, dtype=np.float32)
        assert not as_array.flags.writeable
        assert np.array_equal(as_array, array)
        again = np.frombuffer(rx.view("v-1"), dtype=np.float32)
        assert again.ctypes.data == as_array.ctypes.data, "two views, one memory: no copy"
        copied = np.frombuffer(rx.read("v-1"), dtype=np.float32)
        assert copied.ctypes.data != as_array.ctypes.data
        with pytest.raises(TypeError):
            view[0] = 1


def test_a_view_of_a_block_list_region_is_that_region(receiver_factory):
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        blocks = [np.full(4096, i, dtype=np.uint8) for i in range(4)]
        tx.send(blocks, id="bl")
        for i, block in enumerate(blocks):
            assert bytes(rx.view("bl", region=i)) == block.tobytes()
        with pytest.raises(writ.UsageError):
            rx.view("bl", region=4)


def test_a_view_keeps_its_bytes_through_a_removal_and_the_receivers_end(receiver_factory):
    rx = receiver_factory()
    with rx, writ.Sender(to=rx.address) as tx:
        payload = np.random.default_rng(7).integers(0, 255, 3 << 20, dtype=np.uint8)
        tx.send(payload, id="kept")
        view = np.frombuffer(rx.view("kept"), dtype=np.uint8)
        rx.remove("kept")
        with pytest.raises(writ.NotFoundError):
            rx.view("kept")
        tx.send(np.zeros_like(payload), id="next")  # may not land where the view is
        assert np.array_equal(view, payload)
    # the receiver has stopped: its memory stays for the view until the view goes
    assert np.array_equal(view, payload)
    del view


def test_a_delivery_held_in_a_file_is_not_viewed_and_says_why(receiver_factory, tmp_path):
    with receiver_factory(data=tmp_path / "data") as rx, writ.Sender(to=rx.address) as tx:
        tx.send(b"d" * 5000, id="on-disk", until="retained", retention="process-restart")
        with pytest.raises(writ.UsageError) as refused:
            rx.view("on-disk")
        assert refused.value.code == "unsupported"
        assert "process-restart" in str(refused.value) and "read" in str(refused.value).lower()
        assert bytes(rx.read("on-disk")) == b"d" * 5000
        with pytest.raises(writ.NotFoundError):
            rx.view("nobody")
