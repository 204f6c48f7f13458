"""writ.send_replicated (also Sender.send_replicated): one delivery retained by K receivers
in K distinct failure domains, with the replicated:K certificate (docs/retention.md)."""

import json
import os
import tempfile

from . import _writ
from ._errors import UsageError, error_for
from ._sender import Outcome

_MIB = 1 << 20


class Replica:
    """One receiver tried: address, counted (its copy counts toward K), why_not (when not
    counted), outcome (a writ.Outcome of its send, or None)."""

    def __init__(self, entry):
        self.address = entry["address"]
        self.counted = entry["counted"]
        self.why_not = entry["why_not"] or None
        outcome = entry.get("outcome")
        self.outcome = Outcome(outcome) if outcome and outcome["delivery"]["id"] else None

    def __repr__(self):
        return "<writ.Replica %s: %s>" % (
            self.address, "counted" if self.counted else "not counted: %s" % self.why_not)


class ReplicatedOutcome:
    """What a replicated send reached.

    replicas     every receiver tried (writ.Replica), in the order they finished
    certificate  the replicated:K certificate as a dict (what `writ verify` checks); None
                 without K counted copies
    evidence     the writ.evidence/1 bundle (a dict) with every replica's evidence and the
                 certificate: writ.audit(json.dumps(evidence)), or `writ audit FILE`
    """

    def __init__(self, document):
        self.replicas = [Replica(r) for r in document["replicas"]]
        self.certificate = document["certificate"]
        self.evidence = document["evidence"]

    @property
    def counted(self):
        """The replicas whose copies count toward K."""
        return [r for r in self.replicas if r.counted]

    def __repr__(self):
        return "<writ.ReplicatedOutcome %s: %d counted of %d tried>" % (
            self.certificate["retention"] if self.certificate else "not reached",
            len(self.counted), len(self.replicas))


def send_replicated(obj, k=2, cluster=None, receivers=None, id=None,
                    replica_retention="power-loss", identity=None, provider=None,
                    rule="xxh3-128", chunk_size=8 * _MIB, stall_timeout=10.0):
    """Sends `obj` to K receivers in parallel, each copy retained `replica_retention`; a
    replica that fails, refuses or stalls (`stall_timeout` seconds without progress) is
    replaced by the next receiver. Exactly one of:

    cluster    the etcd URL: its live members, placed by the delivery id (at most one copy
               per failure domain), or
    receivers  a list of "HOST:PORT", tried in order.

    obj: a path (str or os.PathLike; the file is read and digested once), or bytes / a
    buffer (written once to an unlinked temporary file, then sent as a path; id= needed).
    Returns a writ.ReplicatedOutcome with K counted copies from K distinct keys in K
    distinct signed domains; otherwise raises writ.RetentionError (with .outcome, the
    ReplicatedOutcome as far as it got), or the error of bad arguments or an unreachable
    cluster.
    """
    if (cluster is None) == (receivers is None):
        raise UsageError("send_replicated: exactly one of cluster= or receivers=",
                         code="invalid argument")
    if isinstance(obj, (str, os.PathLike)):
        return _send(os.fspath(obj), k, cluster, receivers, id, replica_retention, identity,
                     provider, rule, chunk_size, stall_timeout)
    if not id:
        raise UsageError("send_replicated: id= is required for bytes and buffers",
                         code="invalid argument")
    with tempfile.NamedTemporaryFile(prefix="writ-replicated-") as f:
        f.write(memoryview(obj).cast("B"))
        f.flush()
        return _send(f.name, k, cluster, receivers, id, replica_retention, identity, provider,
                     rule, chunk_size, stall_timeout)


def _send(path, k, cluster, receivers, id, replica_retention, identity, provider, rule,
          chunk_size, stall_timeout):
    code, message, document = _writ.send_replicated(
        path=path, id=id or "", k=k, replica_retention=replica_retention,
        cluster=cluster or "", receivers=list(receivers or []), provider=provider or "",
        identity=os.fspath(identity) if identity else "", rule=rule, chunk_size=chunk_size,
        stall_timeout=stall_timeout)
    outcome = ReplicatedOutcome(json.loads(document)) if document else None
    if code != "ok":
        raise error_for(code, message, outcome=outcome)
    return outcome
