"""A receiving program of its own, for the two-process tests (test_two_processes.py): it
exposes a paged array, prints "listening on ADDRESS", prints one line per delivery into it
("delivered ID ok|refused WHY"), and when its standard input closes revokes the array,
saves it to the file named by its first argument and exits 0.

  python3 exposing_receiver.py OUT.npy PROVIDER IDENTITY_DIR PAGES PAGE_SIZE
"""

import sys

import numpy as np

import writ


def main():
    out, provider, identity, pages, page_size = sys.argv[1:6]
    cache = np.zeros((int(pages), int(page_size)), dtype=np.uint8)

    def told(delivery):
        print("delivered %s %s" % (delivery.id, "ok" if delivery.ok else "refused " + delivery.why),
              flush=True)

    with writ.Receiver(listen="127.0.0.1:0", provider=provider, identity=identity,
                       window_pool_bytes=16 << 20, window_bytes=4 << 20) as rx:
        rx.expose("kv", cache, page_size=int(page_size), on_delivery=told)
        print("listening on %s" % rx.address, flush=True)
        sys.stdin.read()  # until the test closes it
        rx.revoke("kv")
    np.save(out, cache)


if __name__ == "__main__":
    main()
