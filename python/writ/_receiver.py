"""writ.Receiver: a receiver in this process, optionally with a Python processing step."""

import os

from . import _writ
from ._errors import UsageError, checked


class Delivery:
    """What a processing callable is shown: a validated delivery.

    id, bytes, digest (hex, by the rule the sender chose) stay readable; the bytes
    themselves only while the callable runs: read(offset=0, size=-1) -> bytes, or
    readinto(buffer, offset=0) -> count into a writable buffer (a NumPy array), no copy
    in between. stop_requested: the receiver is shutting down; finish soon.
    """

    def __init__(self, handle):
        self._handle = handle

    id = property(lambda self: self._handle.id)
    bytes = property(lambda self: self._handle.bytes)
    digest = property(lambda self: self._handle.digest)
    stop_requested = property(lambda self: self._handle.stop_requested)

    def read(self, offset=0, size=-1):
        return checked(self._handle.read(offset, size))

    def readinto(self, target, offset=0):
        return checked(self._handle.readinto(target, offset))

    def __repr__(self):
        return "<writ.Delivery %s: %d bytes>" % (self.id, self.bytes)


def _host_port(listen):
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UsageError("listen: expected HOST:PORT, got %r" % (listen,),
                         code="invalid argument")
    return host.strip("[]"), int(port)


def _step_name(processing, name):
    if name:
        return name
    name = getattr(processing, "__name__", "")
    return name if name and not name.startswith("<") else "python"


class Receiver:
    """A writ receiver running in this process until close() (or the end of a `with`).

    listen      "HOST:PORT" of the control connection; port 0 picks one (see .address)
    provider    libfabric provider ("tcp", "shm", ...); None: the best available
    data        data directory: offers process-restart and power-loss retention; None:
                volatile only
    out         directory where every retained delivery also appears as a file named by
                its id (made a safe file name: README, "writ serve --out"), with
                NAME.receipts.json beside it; None: none
    processing  callable(writ.Delivery), run on every validated delivery sent with
                until="processed" (never on one that asks for less); returning is
                success (the `processed` receipt), raising refuses the delivery with
                the exception's name and text. Without one, a send with until="processed" is refused.
    identity    directory of the Ed25519 identity that signs receipts (created on first
                start); None: DATA/identity, else ~/.local/state/writ/receiver
    allow       file of allowed sender public keys (hex, one a line); None: anyone
    """

    def __init__(self, listen="127.0.0.1:0", provider="tcp", data=None, out=None,
                 processing=None, identity=None, allow=None, receiver_id=None,
                 max_delivery_bytes=None, window_pool_bytes=None, window_bytes=None,
                 volatile_capacity_bytes=None, processing_name=None):
        host, port = _host_port(listen)
        step = None
        if processing is not None:
            if not callable(processing):
                raise UsageError("processing: expected a callable", code="invalid argument")

            def step(handle):
                processing(Delivery(handle))

        self._handle = checked(_writ.start_receiver(
            host=host, port=port, provider=provider or "",
            data=os.fspath(data) if data else "",
            out=os.fspath(out) if out else "",
            identity=os.fspath(identity) if identity else "",
            allow=os.fspath(allow) if allow else "", receiver_id=receiver_id or "",
            max_delivery_bytes=max_delivery_bytes or 0,
            window_pool_bytes=window_pool_bytes or 0, window_bytes=window_bytes or 0,
            volatile_capacity_bytes=volatile_capacity_bytes or 0, processing=step,
            processing_name=_step_name(processing, processing_name)))
        self.address = self._handle.address
        self.provider = self._handle.provider
        self.key_id = self._handle.key_id
        self.public_key = self._handle.public_key

    def close(self):
        """Stops accepting, ends every connection, closes the fabric. Idempotent."""
        checked(self._handle.stop())

    def shutdown(self, drain=10.0):
        """A clean stop: deliveries in progress get `drain` seconds to finish.
        Returns {"drained": [ids], "aborted": [ids], "deadline_passed": bool}."""
        drained, aborted, passed = checked(self._handle.shutdown(drain))
        return {"drained": list(drained), "aborted": list(aborted), "deadline_passed": passed}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<writ.Receiver %s (provider %s)>" % (self.address, self.provider)
