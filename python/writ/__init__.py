"""writ from Python: one-sided RDMA deliveries (libfabric) with a signed receipt per rung.

    with writ.Receiver(processing=check) as rx:
        with writ.Sender(to=rx.address) as tx:
            outcome = tx.send(array, id="weights-7", until="processed")
    writ.verify(outcome.receipt("validated"), key=rx.public_key)

See README.md, "Using writ from Python".
"""

from . import _writ
from ._errors import (Error, NotFoundError, RefusedError, RetentionError, TransportError,
                      UsageError, ValidationError)
from ._evidence import audit, verify
from ._receiver import Arrival, Delivery, Receiver, TargetDelivery
from ._replicated import Replica, ReplicatedOutcome, send_replicated
from ._sender import Handle, Outcome, Sender

Sender.send_replicated = staticmethod(send_replicated)

__version__ = _writ.version

__all__ = [
    "Receiver", "Sender", "Handle", "Outcome", "Delivery", "Arrival", "TargetDelivery", "audit",
    "verify", "Error",
    "NotFoundError", "UsageError", "RefusedError", "TransportError", "ValidationError",
    "RetentionError", "__version__", "send_replicated", "Replica", "ReplicatedOutcome",
]
