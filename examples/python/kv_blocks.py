"""KV-cache blocks written straight into the pages of a receiver's cache (a NumPy array it
exposed), many in flight; a page is used only once the receiver said its bytes were
validated where they lie. Run: PYTHONPATH=build/release/python python3 examples/python/kv_blocks.py
"""

import threading

import numpy as np

import writ

PAGE_BYTES, PAGES, PAGES_PER_BLOCK, BLOCKS = 16 << 10, 256, 4, 48


def main():
    cache = np.zeros((PAGES, PAGE_BYTES), dtype=np.uint8)  # the decode side's KV cache
    usable = np.zeros(PAGES, dtype=bool)
    told, cond = [], threading.Condition()

    def on_delivery(d):
        with cond:
            if d.ok:
                usable[d.pages] = True
            told.append(d)
            cond.notify_all()

    rng = np.random.default_rng(7)
    table = rng.permutation(PAGES)[:BLOCKS * PAGES_PER_BLOCK].reshape(BLOCKS, PAGES_PER_BLOCK)
    blocks = [rng.integers(0, 256, PAGES_PER_BLOCK * PAGE_BYTES, dtype=np.uint8)
              for _ in range(BLOCKS)]
    with writ.Receiver(provider="tcp", window_pool_bytes=16 << 20,
                       window_bytes=1 << 20) as rx:
        rx.expose("kv", cache, page_size=PAGE_BYTES, on_delivery=on_delivery)
        with writ.Sender(to=rx.address, in_flight=16) as tx:
            handles = [tx.submit(blocks[b], id="block-%d" % b, target="kv",
                                 target_pages=table[b].tolist()) for b in range(BLOCKS)]
            outcomes = [h.result() for h in handles]
        with cond:
            cond.wait_for(lambda: len(told) >= BLOCKS, timeout=30)
        rx.revoke("kv")
    print([r["statement"] for r in outcomes[0].receipts if r["rung"] == "validated"][0])
    for b in range(BLOCKS):
        got = cache[table[b]].reshape(-1)
        assert usable[table[b]].all(), "block %d: pages not usable" % b
        assert np.array_equal(got, blocks[b]), "block %d: pages differ" % b
    print("%d blocks, %d pages usable, each holding its block's bytes"
          % (BLOCKS, int(usable.sum())))


if __name__ == "__main__":
    main()
