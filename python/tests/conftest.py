import os
import pathlib

import pytest

import writ

SOURCE_DIR = pathlib.Path(os.environ.get("WRIT_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture
def source_dir():
    return SOURCE_DIR


@pytest.fixture
def receiver_factory(tmp_path):
    """Starts receivers on loopback tcp with their identity in tmp_path; stops them after."""
    started = []

    def start(**kwargs):
        kwargs.setdefault("provider", "tcp")
        kwargs.setdefault("identity", tmp_path / ("receiver-%d" % len(started)))
        kwargs.setdefault("window_pool_bytes", 16 << 20)
        kwargs.setdefault("window_bytes", 4 << 20)
        rx = writ.Receiver(**kwargs)
        started.append(rx)
        return rx

    yield start
    for rx in started:
        rx.close()
