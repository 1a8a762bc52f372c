"""The child process of test_lab.py's check that exercises 1-2 need numpy only (labkit.testing.child).

    _no_torch_child.py blocks|qk

The lab's files ask ``labkit.triton_env.select_backend()`` whether torch and triton are there; here
it answers "missing", as it does on a machine without them, before the implementation is loaded.
``blocks`` sends back ``blocks_per_seq([0, 16, 17], 16)``; ``qk`` calls ``qk_scores_triton``, which
must raise ModuleNotFoundError with the install command (the test reads the child's last line).
"""

from __future__ import annotations

import sys

from labkit import triton_env
from labkit.testing import child


def main(what: str) -> None:
    triton_env.select_backend = lambda: "missing"  # what the lab's files see without torch and triton
    lab = child.implementation()
    if what == "qk":
        lab.qk_scores_triton([[1.0]], [[[1.0]]], [1])
    child.send(lab.blocks_per_seq([0, 16, 17], 16))


if __name__ == "__main__":
    main(sys.argv[1])
