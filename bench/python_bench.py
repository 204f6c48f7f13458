#!/usr/bin/env python3
"""python_bench: the Python package against a running `writ serve` (issue #29's rows).

  inflight  COUNT blocks of BLOCK bytes (NumPy arrays), IN_FLIGHT submitted at once on one
            writ.Sender, each until validated: beside `small_delivery_bench --mode inflight`
            (C++ SubmitBytes) on a file of BLOCK bytes
  blocks    one send([COUNT blocks]) (a scatter-gather delivery): beside
            `scatter_gather_bench --regions COUNT --region-size BLOCK` and raw fi_write
  big       one BIG-byte NumPy array: beside `writ send` of a file of the same size

  python_bench.py --to HOST:PORT --mode inflight|blocks|big [--count 1000] [--block 262144]
                  [--in-flight 64] [--big 1073741824] [--repeat 3]
Prints one JSON object: the median over --repeat runs, and each run.
"""

import argparse
import json
import resource
import statistics
import time
import uuid

import numpy as np

import writ


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def timed(fn):
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    extra = fn()
    return {"seconds": time.perf_counter() - t0, "cpu_s": cpu_seconds() - cpu0, **(extra or {})}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--to", required=True)
    p.add_argument("--mode", choices=["inflight", "blocks", "big"], required=True)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--block", type=int, default=256 << 10)
    p.add_argument("--in-flight", type=int, default=64)
    p.add_argument("--big", type=int, default=1 << 30)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    run = uuid.uuid4().hex[:8]
    rng = np.random.default_rng(7)
    runs = []
    # The bytes first: a session idle past the receiver's handshake timeout is closed.
    if a.mode in ("inflight", "blocks"):
        blocks = [rng.integers(0, 255, a.block, dtype=np.uint8) for _ in range(a.count)]
    else:
        big = rng.integers(0, 255, a.big, dtype=np.uint8)
    with writ.Sender(to=a.to, in_flight=a.in_flight) as tx:
        if a.mode in ("inflight", "blocks"):
            tx.send(blocks[0], id="py-%s-warm" % run)  # its admission grants the ring
        for r in range(a.repeat):
            if a.mode == "inflight":
                def go():
                    hs = [tx.submit(b, id="py-%s-%d-%d" % (run, r, i))
                          for i, b in enumerate(blocks)]
                    ring = sum(1 for h in hs if h.result().document["ring"])
                    return {"through_ring": ring}
                res = timed(go)
                res["per_second"] = a.count / res["seconds"]
            elif a.mode == "blocks":
                res = timed(lambda: {"bytes": tx.send(blocks, id="py-%s-sg-%d" % (run, r)).bytes})
                res["gb_per_s"] = res["bytes"] / res["seconds"] / 1e9
            else:
                res = timed(lambda: {"bytes": tx.send(big, id="py-%s-big-%d" % (run, r)).bytes})
                res["gb_per_s"] = res["bytes"] / res["seconds"] / 1e9
            runs.append(res)
        in_flight = tx.max_in_flight
    key = "per_second" if a.mode == "inflight" else "gb_per_s"
    print(json.dumps({"mode": a.mode, "count": a.count, "block": a.block,
                      "in_flight": in_flight, key: statistics.median(x[key] for x in runs),
                      "runs": runs}))


if __name__ == "__main__":
    main()
