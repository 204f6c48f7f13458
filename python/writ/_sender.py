"""writ.Sender: deliveries to one receiver over one session."""

import json
import os

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


class Sender:
    """A session to the receiver at `to` ("HOST:PORT"): one control connection and one
    fabric connection, reused by every send().

    identity   directory of the sender's Ed25519 identity (created on first use); signs
               the announces. None: unsigned.
    provider   libfabric provider; None: the one the receiver serves.

    send() calls from several threads on one Sender are in flight together, over the
    one session (up to the receiver's limit per connection). The GIL is released while
    bytes move.
    """

    def __init__(self, to, identity=None, provider=None, depth=4, connect_timeout=10.0):
        self._session = checked(_writ.connect(
            to=to, provider=provider or "", identity=os.fspath(identity) if identity else "",
            depth=depth, connect_timeout=connect_timeout))
        self.to = to

    def send(self, obj, id=None, until="validated", retention=None, rule="xxh3-128",
             chunk_size=8 * _MIB, level="delivery", source="auto", max_attempts=1,
             stall_timeout=60.0):
        """Sends `obj` as one logical delivery and waits for `until` and `retention`.

        obj: bytes, any C-contiguous object with the buffer protocol (a NumPy array, a
        memoryview: sent from its own memory, no copy), or a path (str or os.PathLike).
        id: the delivery id; for a path, default the file's name.
        until: "transport", "received", "validated" or "processed".
        retention: "volatile", "process-restart" or "power-loss"; None (as the CLI
        without --retention): volatile, awaited only for rungs from "validated" up.
        rule: "xxh3-128", "crc32c" or "sha256".
        Returns an Outcome; raises a writ.Error (with .outcome) when the requested rung or
        retention was not reached.
        """
        if self._session is None:
            raise UsageError("this Sender is closed", code="invalid argument")
        is_path = isinstance(obj, (str, os.PathLike))
        if not is_path and not id:
            raise UsageError("send: id= is required for bytes and buffers",
                             code="invalid argument")
        options = checked(_writ.delivery_options(
            id=id or "", until=until, retention=retention or "", rule=rule,
            chunk_size=chunk_size, level=level, source=source, max_attempts=max_attempts,
            stall_timeout=stall_timeout))
        if is_path:
            code, message, document = self._session.send_path(os.fspath(obj), options)
        else:
            code, message, document = self._session.send_buffer(obj, options)
        document = json.loads(document) if document else None
        outcome = Outcome(document) if document and document["delivery"]["id"] else None
        if code != "ok":
            raise error_for(code, message, outcome=outcome)
        return outcome

    @property
    def usable(self):
        """False once the session broke (a lost connection, a stall...) or was closed."""
        return self._session is not None and self._session.usable

    def close(self):
        if self._session is not None:
            session, self._session = self._session, None
            checked(session.close())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
