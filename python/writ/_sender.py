"""writ.Sender: deliveries to one receiver over one session, one at a time or many in
flight (submit), each a buffer, a path or a list of blocks (one scatter-gather delivery)."""

import asyncio
import atexit
import concurrent.futures
import json
import os
import weakref

from . import _writ
from ._errors import UsageError, checked, error_for

_MIB = 1 << 20


class Outcome:
    """What a send reached.

    receipts     the receipts, each a dict (the receipt's JSON), in rung order
    reached      {"rung": ..., "retention": ...}: the highest rung with a receipt and the
                 retention class reached (None where none)
    delivery     {"id", "bytes", "chunks", "chunk_size", "rule", "digest"}
    bytes        the delivery's size; bytes_moved: False when the receiver already held it
                 or no chunk write completed (a send that failed before writing)
    source       {"path": "zero-copy" | "staging", "note": ...}
    document     the whole `writ send --json` document
    """

    def __init__(self, document):
        self.document = document
        self.delivery = document["delivery"]
        self.receipts = document["receipts"]
        self.reached = document["reached"]
        self.requested = document["requested"]
        self.context = document["context"]
        self.work_completions = document["work_completions"]
        self.bytes = self.delivery["bytes"]
        self.bytes_moved = document["bytes_moved"]
        self.source = document.get("source")
        self.error = document.get("error")

    @property
    def digest(self):
        return self.delivery["digest"]

    def receipt(self, rung):
        """The receipt of `rung` ("transport" ... "retained"), or None."""
        return next((r for r in self.receipts if r["rung"] == rung), None)

    def __repr__(self):
        return "<writ.Outcome %s: %d bytes, reached %s/%s>" % (
            self.delivery["id"], self.bytes, self.reached["rung"], self.reached["retention"])


def _finished(code, message, document):
    """The Outcome of a finished delivery, or the writ.Error it raises."""
    document = json.loads(document) if document else None
    outcome = Outcome(document) if document and document["delivery"]["id"] else None
    if code != "ok":
        raise error_for(code, message, outcome=outcome)
    return outcome


class Handle:
    """A submitted delivery (Sender.submit): done(), result(timeout), or `await handle`.

    The handle keeps every buffer it sends exported until the delivery ended: dropping
    the caller's own reference while it is in flight is safe (the bytes stay put, and a
    NumPy array cannot be resized meanwhile).
    """

    def __init__(self, id):
        self.id = id
        self._future = concurrent.futures.Future()

    def _tell(self, code, message, document):  # from the extension's waiter thread
        self._future.set_result((code, message, document))

    def done(self):
        """True once the delivery ended (reached what was asked, or failed)."""
        return self._future.done()

    def result(self, timeout=None):
        """Waits (GIL released) up to `timeout` seconds (None: no limit) and returns the
        Outcome; raises the writ.Error of a failed delivery, or TimeoutError."""
        try:
            answer = self._future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError("delivery %r: not finished within %s s" % (self.id, timeout))
        return _finished(*answer)

    def add_done_callback(self, fn):
        """Calls fn(handle) once the delivery ended (at once if it has), on the thread that
        learned it; fn should only hand work on (it holds up the next outcome)."""
        self._future.add_done_callback(lambda _: fn(self))

    def __await__(self):
        answer = yield from asyncio.wrap_future(self._future).__await__()
        return _finished(*answer)

    def __repr__(self):
        return "<writ.Handle %s: %s>" % (self.id, "done" if self.done() else "in flight")


_open_senders = weakref.WeakSet()


def _close_all_at_exit():
    # Before the interpreter finalizes: deliveries still in flight fail (their handles say
    # so) and the extension's threads end while Python objects can still be released.
    for sender in list(_open_senders):
        try:
            sender.close()
        except Exception:
            pass


atexit.register(_close_all_at_exit)


class Sender:
    """A session to the receiver at `to` ("HOST:PORT"): one control connection and one
    fabric connection, reused by every send() and submit().

    identity   directory of the sender's Ed25519 identity (created on first use); signs
               the announces. None: unsigned.
    provider   libfabric provider; None: the one the receiver serves.
    in_flight  deliveries in flight at once (announced, not yet ended); further
               submissions queue. Also bounded by the receiver (writ.Receiver's
               max_deliveries_per_sender, `writ serve --max-deliveries-per-sender`,
               default 16): see .max_in_flight.
    depth      chunk writes in flight, over all deliveries (staging buffers of one chunk).
    ring       use the receiver's standing window (a ring of slots) for deliveries that fit
               one slot: no announce/grant round trip (docs/python.md).

    send() blocks (GIL released); submit() returns a Handle at once. Both may be called
    from any thread; all share the one session.
    """

    def __init__(self, to, identity=None, provider=None, depth=4, connect_timeout=10.0,
                 in_flight=64, ring=True):
        if in_flight < 1:
            raise UsageError("in_flight: at least 1", code="invalid argument")
        self._session = checked(_writ.connect(
            to=to, provider=provider or "", identity=os.fspath(identity) if identity else "",
            depth=depth, connect_timeout=connect_timeout, in_flight=in_flight, ring=ring))
        self.to = to
        _open_senders.add(self)

    def _options(self, obj, id, until, retention, rule, chunk_size, level, source,
                 max_attempts, stall_timeout, target=None, target_offset=0, target_pages=None):
        if self._session is None:
            raise UsageError("this Sender is closed", code="invalid argument")
        if not isinstance(obj, (str, os.PathLike)) and not id:
            raise UsageError("send: id= is required for bytes, buffers and block lists",
                             code="invalid argument")
        if until == "retained":  # as `writ send --until retained`
            until, retention = "validated", retention or "volatile"
        return checked(_writ.delivery_options(
            id=id or "", until=until, retention=retention or "", rule=rule,
            chunk_size=chunk_size, level=level, source=source, max_attempts=max_attempts,
            stall_timeout=stall_timeout, target=target or "", target_offset=target_offset,
            target_pages=list(target_pages or [])))

    def send(self, obj, id=None, until="validated", retention=None, rule="xxh3-128",
             chunk_size=8 * _MIB, level="delivery", source="auto", max_attempts=1,
             stall_timeout=60.0, target=None, target_offset=0, target_pages=None):
        """Sends `obj` as one logical delivery and waits for `until` and `retention`.

        obj: bytes, any C-contiguous object with the buffer protocol (a NumPy array, a
        memoryview: sent from its own memory, no copy), a list or tuple of them (the
        blocks of one scatter-gather delivery: one digest, one receipt set, read back
        block by block with Receiver.read(id, region=k)), or a path (str or os.PathLike).
        id: the delivery id; for a path, default the file's name.
        until: "transport", "received", "validated", "processed" or "retained" (validated
        and retained, at `retention` or volatile).
        retention: "volatile", "process-restart" or "power-loss"; None (as the CLI
        without --retention): volatile, awaited only for rungs from "validated" up.
        rule: "xxh3-128", "crc32c" or "sha256".
        target: deliver into the array the receiver exposed under this name
        (Receiver.expose), at byte target_offset, or into its pages target_pages (a list
        of page indices: the delivery's page i lands in page target_pages[i]; its size
        must be the pages times the target's page size). Retained volatile only.
        Returns an Outcome; raises a writ.Error (with .outcome) when the requested rung or
        retention was not reached.
        """
        options = self._options(obj, id, until, retention, rule, chunk_size, level, source,
                                max_attempts, stall_timeout, target, target_offset,
                                target_pages)
        if isinstance(obj, (list, tuple)):
            return self._submit(obj, id, options).result()
        if isinstance(obj, (str, os.PathLike)):
            return _finished(*self._session.send_path(os.fspath(obj), options))
        return _finished(*self._session.send_buffer(obj, options))

    def submit(self, obj, id=None, until="validated", retention=None, rule="xxh3-128",
               chunk_size=8 * _MIB, level="delivery", source="auto", max_attempts=1,
               stall_timeout=60.0, target=None, target_offset=0, target_pages=None):
        """As send(), but returns a Handle at once; the delivery goes out with the others
        in flight on this session. The buffers must not change until the handle is done
        (they are sent from where they lie); the handle keeps them alive.
        Bad arguments (a non-contiguous array, a closed Sender) raise here, at once."""
        options = self._options(obj, id, until, retention, rule, chunk_size, level, source,
                                max_attempts, stall_timeout, target, target_offset,
                                target_pages)
        return self._submit(obj, id, options)

    def _submit(self, obj, id, options):
        session = self._session
        if session is None:
            raise UsageError("this Sender is closed", code="invalid argument")
        handle = Handle(id if id else os.path.basename(os.fspath(obj)))
        if isinstance(obj, (str, os.PathLike)):
            checked(session.submit_path(os.fspath(obj), options, handle._tell))
        else:
            checked(session.submit(obj, options, handle._tell))
        return handle

    @property
    def max_in_flight(self):
        """Deliveries this session keeps in flight at once: the smaller of in_flight and
        the receiver's limit per sender."""
        return self._session.max_in_flight if self._session is not None else 0

    @property
    def usable(self):
        """False once the session broke (a lost connection, a stall...) or was closed."""
        return self._session is not None and self._session.usable

    def close(self):
        """Fails every delivery still in flight (their handles raise writ.UsageError "the
        session was closed")
        and closes the session. Idempotent; later sends and submits raise UsageError."""
        if self._session is not None:
            session, self._session = self._session, None
            _open_senders.discard(self)
            checked(session.close())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
