"""The child process of test_lab.py's hash test (labkit.testing.child): keys computed in another process.

    _hash_child.py FIRST_BLOCK SEQUENCE BLOCK_SIZE      (token ids comma-separated)

The test runs this script with another ``PYTHONHASHSEED`` and compares the keys it sends back
(``hash_block_tokens(None, FIRST_BLOCK)``, then ``hash_request_tokens(SEQUENCE, BLOCK_SIZE)``)
with the keys of its own process. It sends the raw bytes of the keys, nothing else: the
comparison is the test's. Under ``labs grade`` it runs in the student's sandbox, with the
student's file.
"""

from __future__ import annotations

import sys

import numpy as np

from labkit.testing import child


def main(first_block: str, sequence: str, block_size: str) -> None:
    lab = child.implementation()
    tokens = [int(t) for t in first_block.split(",")]
    keys = [lab.hash_block_tokens(None, tokens),
            *lab.hash_request_tokens([int(t) for t in sequence.split(",")], int(block_size))]
    child.send(np.frombuffer(b"".join(bytes(k) for k in keys), dtype=np.uint8))


if __name__ == "__main__":
    main(*sys.argv[1:4])
