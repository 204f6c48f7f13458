#!/usr/bin/env python3
"""A NumPy array sent to a receiver in this process, checked by a Python processing step,
and its receipts verified offline.

    PYTHONPATH=build/release/python python3 examples/python/send_array.py
"""

import hashlib
import tempfile

import numpy as np

import writ


def check_weights(delivery):
    """The processing step: runs on the receiver on every validated delivery. Raising
    refuses the delivery, and the sender sees the exception's name and text."""
    weights = np.empty(delivery.bytes // 4, dtype=np.float32)
    delivery.readinto(weights)  # straight from the receiver's copy into this array
    if not np.isfinite(weights).all():
        raise ValueError("weights hold NaN or infinity")
    print("processing step: %s holds %d finite float32 values" % (delivery.id, weights.size))


def main():
    weights = np.random.default_rng(7).standard_normal(6 << 20, dtype=np.float32)  # 24 MiB
    with tempfile.TemporaryDirectory() as identity, \
            writ.Receiver(listen="127.0.0.1:0", provider="tcp", identity=identity,
                          processing=check_weights) as receiver:
        with writ.Sender(to=receiver.address) as sender:
            outcome = sender.send(weights, id="weights-7", until="processed", rule="sha256")
            try:
                sender.send(np.full(4, np.nan, dtype=np.float32), id="bad", until="processed")
            except writ.RefusedError as refused:
                print("refused (exit code %d): %s" % (refused.exit_code, refused))

        assert outcome.digest == hashlib.sha256(weights.tobytes()).hexdigest()
        for receipt in outcome.receipts:
            print("%-9s %s" % (receipt["rung"], receipt["statement"]))
            # The transport receipt is the sender's own (signed only with Sender(identity=)):
            # the receiver's receipts are checked against its key, offline.
            if receipt["observer"] != "sender":
                writ.verify(receipt, key=receiver.public_key)  # else writ.ValidationError
        print("reached %(rung)s / %(retention)s; %(path)s" %
              dict(outcome.reached, path=outcome.source["path"]))


if __name__ == "__main__":
    main()
