"""writ.audit and writ.verify: evidence bundles and receipts, checked offline."""

import json
import os

from . import _writ
from ._errors import UsageError, checked


def audit(bundle):
    """The writ.audit/1 report (a dict) of a writ.evidence/1 bundle.

    bundle: a path (str or os.PathLike; read as it streams), a str or bytes holding the
    JSON, or a dict. A malformed bundle raises writ.UsageError naming the bad field.
    """
    if isinstance(bundle, dict):
        report = checked(_writ.audit_text(json.dumps(bundle)))
    elif isinstance(bundle, (bytes, bytearray)):
        report = checked(_writ.audit_text(bytes(bundle).decode("utf-8")))
    elif isinstance(bundle, str) and bundle.lstrip().startswith("{"):
        report = checked(_writ.audit_text(bundle))
    elif isinstance(bundle, (str, os.PathLike)):
        report = checked(_writ.audit_file(os.fspath(bundle)))
    else:
        raise UsageError("audit: expected a path, JSON text or a dict", code="invalid argument")
    return json.loads(report)


def _key_text(key):
    """A hex public key, or the first word of a file holding one (as `writ key show`)."""
    if isinstance(key, os.PathLike) or (isinstance(key, str) and os.path.isfile(key)):
        with open(key) as f:
            words = f.read().split()
        return words[0] if words else ""
    return key


def verify(receipt, key=None):
    """Checks a receipt's consistency and its signature, against the key it names and
    against `key` (hex, or a file holding it) when given. Returns the receipt as a dict;
    raises writ.ValidationError naming what failed, as `writ verify` exits 5.

    receipt: a dict (as in Outcome.receipts), its JSON text, or a path to a file.
    """
    if isinstance(receipt, dict):
        text = json.dumps(receipt)
    elif isinstance(receipt, (bytes, bytearray)):
        text = bytes(receipt).decode("utf-8")
    elif isinstance(receipt, str) and receipt.lstrip().startswith("{"):
        text = receipt
    elif isinstance(receipt, (str, os.PathLike)):
        with open(receipt) as f:
            text = f.read()
    else:
        raise UsageError("verify: expected a dict, JSON text or a path", code="invalid argument")
    return json.loads(checked(_writ.verify(text, _key_text(key) if key else "")))
