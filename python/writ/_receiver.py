"""writ.Receiver: a receiver in this process, optionally with a Python processing step;
what it retained can be listened for, read back (no copy in between) and removed."""

import collections
import json
import os
import threading

from . import _writ
from ._errors import Error, UsageError, checked


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


class Arrival:
    """A delivery the receiver retained (Receiver.deliveries(), on_delivery, held()).

    id, bytes, retention ("volatile", "process-restart", "power-loss"), rung (the highest
    receipt issued: "retained"); receipts, regions (a block list's block lengths; [bytes]
    for a plain delivery), digest, rule and held_until are read from the store when first
    asked for (None once the delivery was removed).
    """

    def __init__(self, receiver, id, bytes, rung, retention, held=None):
        self._receiver = receiver
        self.id, self.bytes, self.rung, self.retention = id, bytes, rung, retention
        self._held = held

    def _store(self):
        if self._held is None:
            try:
                self._held = self._receiver._held_tuple(self.id)
            except Error:
                return None
        return self._held

    @property
    def receipts(self):
        """The receipts the store holds for it, each a dict, in rung order."""
        held = self._store()
        return [json.loads(r) for r in held[6]] if held else None

    @property
    def regions(self):
        held = self._store()
        return (list(held[5]) or [held[1]]) if held else None

    digest = property(lambda self: (self._store() or (None,) * 8)[4])
    rule = property(lambda self: (self._store() or (None,) * 8)[3])
    held_until = property(lambda self: (self._store() or (None,) * 8)[7] or None)

    def read(self, region=None, out=None):
        """Receiver.read(self.id, region, out)."""
        return self._receiver.read(self.id, region=region, out=out)

    def view(self, region=None):
        """Receiver.view(self.id, region): the bytes in place, no copy."""
        return self._receiver.view(self.id, region=region)

    def __repr__(self):
        return "<writ.Arrival %s: %d bytes, %s>" % (self.id, self.bytes, self.retention)


TargetDelivery = collections.namedtuple(
    "TargetDelivery", "target id offset bytes ok why pages")
TargetDelivery.__doc__ = """How a delivery into an exposed array ended (Receiver.expose):
ok after its bytes were validated in place; pages: a page-list delivery's pages (then
offset is 0), else [] and the range is [offset, offset + bytes)."""


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
    on_delivery callable(writ.Arrival), called for each delivery retained, in order, on
                one thread of this Receiver (not the receiver's own: a slow callback
                delays only the next call). Without it, deliveries() yields them.
    ring_slots, ring_slot_size
                standing windows (docs/python.md, "Standing windows"): each sender
                connection is granted a ring of ring_slots slots of ring_slot_size bytes
                (defaults 64 x 64 KiB), and a delivery that fits a slot skips the
                announce/grant round trip. Memory: ring_slots x ring_slot_size per
                connection, mapped and registered, all rings together at most
                window_pool_bytes, on top of the window pool. 0 slots: none.
    max_deliveries_per_sender
                deliveries one sender may have in progress at once (default 16): what
                bounds a Sender's in_flight.
    arrivals    deliveries kept for deliveries() / on_delivery until read (default 4096);
                past it the oldest is dropped (see arrivals_dropped).
    """

    def __init__(self, listen="127.0.0.1:0", provider="tcp", data=None, out=None,
                 processing=None, identity=None, allow=None, receiver_id=None,
                 max_delivery_bytes=None, window_pool_bytes=None, window_bytes=None,
                 volatile_capacity_bytes=None, processing_name=None, on_delivery=None,
                 ring_slots=None, ring_slot_size=None, max_deliveries_per_sender=None,
                 arrivals=None):
        host, port = _host_port(listen)
        limits = {name: value for name, value in (
            ("ring_slots", ring_slots), ("ring_slot_size", ring_slot_size),
            ("max_deliveries_per_sender", max_deliveries_per_sender),
            ("arrivals", arrivals)) if value is not None}
        if on_delivery is not None and not callable(on_delivery):
            raise UsageError("on_delivery: expected a callable", code="invalid argument")
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
            processing_name=_step_name(processing, processing_name), limits=limits))
        self.address = self._handle.address
        self.provider = self._handle.provider
        self.key_id = self._handle.key_id
        self.public_key = self._handle.public_key
        self._listener = None
        if on_delivery is not None:
            self._listener = threading.Thread(target=self._listen, args=(on_delivery,),
                                              name="writ-on-delivery", daemon=True)
            self._listener.start()

    def _listen(self, on_delivery):
        for arrival in self.deliveries():
            try:
                on_delivery(arrival)
            except Exception as e:  # the callback's own failure: told, not fatal
                threading.excepthook(threading.ExceptHookArgs(
                    (type(e), e, e.__traceback__, threading.current_thread())))

    def next_delivery(self, timeout=None):
        """The next delivery retained (an Arrival), waiting up to `timeout` seconds (None:
        until one comes or the receiver closes); None when none came."""
        wait = 3600.0 if timeout is None else max(0.0, timeout)
        while True:
            answer = self._handle.next_arrival(min(wait, 3600.0))
            if answer is not None:
                return Arrival(self, *answer)
            if timeout is not None or self._closed:
                return None

    def deliveries(self, timeout=None):
        """Iterates over deliveries as they are retained (Arrivals); ends when the receiver
        closes, or after `timeout` seconds without one."""
        while True:
            arrival = self.next_delivery(timeout)
            if arrival is None:
                return
            yield arrival

    @property
    def arrivals_dropped(self):
        """Arrivals dropped unread because `arrivals` were already waiting."""
        return self._handle.arrivals_dropped

    def _held_tuple(self, id):
        return checked(self._handle.held(id))

    def held(self, id):
        """What the store holds for `id` (an Arrival with its receipts); raises
        writ.NotFoundError when it is not retained here."""
        held = self._held_tuple(id)
        return Arrival(self, held[0], held[1], "retained", held[2], held=held)

    def _range(self, verb, id, region):
        """(offset, size) of delivery `id`, or of its region `region`."""
        held = self._held_tuple(id)
        lengths = list(held[5]) or [held[1]]
        if region is None:
            return 0, held[1]
        if not 0 <= region < len(lengths):
            raise UsageError("%s: %s has %d regions, no region %r"
                             % (verb, id, len(lengths), region), code="invalid argument")
        return sum(lengths[:region]), lengths[region]

    def view(self, id, region=None):
        """The bytes of retained delivery `id` (region k of a block list when region=k) in
        place, in the receiver's memory, with no copy: a read-only memoryview, which
        np.frombuffer(rx.view(id), dtype) turns into an array, still without a copy. The
        bytes stay there, unchanged, while the view or anything made from it lives, even if
        the delivery is removed or the receiver stops (they are then freed with the last
        one). Only a volatile delivery held in memory can be viewed: for one held in a file
        (process-restart, power-loss, or a receiver with a scratch directory) or in pieces
        of memory that are not side by side, writ.UsageError (code "unsupported") says why,
        and read() copies it."""
        offset, size = self._range("view", id, region)
        code, message, held = self._handle.view(id, offset, size)
        if code == "unsupported":
            raise UsageError("view: " + message, code=code)
        return memoryview(checked((code, message, held)))

    def read(self, id, region=None, out=None):
        """The bytes of retained delivery `id` (region k of a block list when region=k),
        read from the store straight into `out` (a writable C-contiguous buffer of exactly
        that size: a NumPy array, a bytearray) or into a new bytearray; returns it.
        np.frombuffer(rx.read(id), dtype) views the bytearray without a copy; view(id)
        reads without any copy where the bytes are in memory.
        A read-only or non-contiguous `out` raises writ.UsageError."""
        offset, size = self._range("read", id, region)
        if out is None:
            out = bytearray(size)
        try:
            target = memoryview(out)
        except TypeError:
            raise UsageError("read: out: a writable C-contiguous buffer is needed, got %s"
                             % type(out).__name__, code="invalid argument") from None
        if target.nbytes != size:
            raise UsageError("read: out holds %d bytes; %s%s is %d" % (
                target.nbytes, id, "" if region is None else " region %d" % region, size),
                code="invalid argument")
        checked(self._handle.read_into(id, offset, out))
        return out

    def remove(self, id, force=False):
        """Removes a retained delivery: raises NotFoundError when none is held, RefusedError
        while its retained receipt still promises it (a time-to-live) unless force.
        Returns {"id", "retention", "bytes", "held_until", "promise_broken"}."""
        rid, retention, size, until, broken = checked(self._handle.remove(id, force))
        return {"id": rid, "retention": retention, "bytes": size, "held_until": until or None,
                "promise_broken": broken}

    def expose(self, name, array, page_size=None, on_delivery=None):
        """Lends writ `array` (a writable C-contiguous buffer: a NumPy array, a bytearray)
        under `name`: senders then deliver straight into it, at an offset
        (Sender.send(..., target=name, target_offset=N)) or, with `page_size`, into a list
        of its pages (target_pages=[3, 7, 9]: the delivery's page i lands in page
        target_pages[i]). Nothing is copied on the receiver; the bytes are validated where
        they lie (docs/architecture.md, "Exposed targets").
        on_delivery: callable(writ.TargetDelivery), called on a receiver thread once each
        delivery into it ended: .ok only after its bytes were validated in place, never
        before; otherwise its range or pages may hold unvalidated bytes (.why says why).
        Reading them before the call is at your own risk. The array stays exported (it can
        be neither resized nor freed) until revoke(name) or close()."""
        if on_delivery is not None and not callable(on_delivery):
            raise UsageError("expose: on_delivery: expected a callable", code="invalid argument")
        told = None
        if on_delivery is not None:
            def told(target, id, offset, size, ok, why, pages):
                on_delivery(TargetDelivery(target, id, offset, size, ok, why, list(pages)))
        checked(self._handle.expose(name, array, page_size or 0, told))

    def revoke(self, name):
        """Withdraws target `name`: later deliveries into it are refused, those in flight
        are refused, and this returns once no write into the array can land any more (the
        array is then released). Raises NotFoundError when `name` is not exposed."""
        checked(self._handle.revoke(name))

    _closed = False

    def close(self):
        """Stops accepting, ends every connection, closes the fabric. Idempotent."""
        self._closed = True
        checked(self._handle.stop())
        self._join_listener()

    def shutdown(self, drain=10.0):
        """A clean stop: deliveries in progress get `drain` seconds to finish.
        Returns {"drained": [ids], "aborted": [ids], "deadline_passed": bool}."""
        self._closed = True
        drained, aborted, passed = checked(self._handle.shutdown(drain))
        self._join_listener()
        return {"drained": list(drained), "aborted": list(aborted), "deadline_passed": passed}

    def _join_listener(self):
        if self._listener is not None and self._listener is not threading.current_thread():
            self._listener.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<writ.Receiver %s (provider %s)>" % (self.address, self.provider)
