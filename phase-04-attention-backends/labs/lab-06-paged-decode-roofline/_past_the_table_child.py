"""The child process of test_lab.py's check that the kernels never read past the block table
(labkit.testing.child).

On a GPU the given checks do not read ``seq_lens`` (that would cost a synchronization per call), so
the kernels alone keep a length larger than the table from reading past it. On a CPU the check
would refuse such a length before any kernel runs, so this child takes it out of the way: it wraps
the implementation's ``_check_inputs`` and ``_check_summaries`` (the names the starter imports from
``_host.py``) so that they check everything as before, but on lengths cut to the table's capacity.
That happens here, in a process of its own (under ``labs grade``, in the student's sandbox), never
in the test's.

The batch (:func:`inputs`): sequence 0 claims more tokens than its table holds, sequence 1 is empty
and every entry of its row points at a block of NaN (a kernel that runs past row 0 reads those
ids), sequence 2 is an ordinary one. ``paged_decode`` runs with each count of NUM_SPLITS; the
outputs are sent back, nothing else. The test computes the expectation from :func:`inputs` itself.

Run with the argument ``padding``, the child checks the table's other edge: the lengths stay within
the table (the given checks run as they are) and every entry past a sequence's blocks holds an id
no pool has (``OUTSIDE_IDS``), as an engine's padding may. A kernel that uses one reads outside the
cache, which can crash the process: that is why this runs here and not in the test's.
"""

from __future__ import annotations

import sys
import types

from labkit import triton_env
from labkit.testing import child

BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, NUM_HEADS = 16, 2, 32, 4
MAX_BLOCKS = 7  # a capacity of 112 tokens: three splits of 48 do not divide it
SEQ_LENS = [MAX_BLOCKS * BLOCK_SIZE + 3 * BLOCK_SIZE + 5, 0, 20]  # sequence 0: 53 tokens past its table
NUM_SPLITS = [1, 3, None]
# ``padding``: every length within the table; sequence 2's first tile reaches into its padding.
PADDING_SEQ_LENS = [MAX_BLOCKS * BLOCK_SIZE - 9, 0, 5]
OUTSIDE_IDS = (-1, 2**31 - 1)  # ``padding``: what the entries past a sequence's blocks hold, alternately


def inputs(torch, padding: bool = False):
    """The batch, from a fixed seed: ``(q, k_cache, v_cache, block_tables, seq_lens)``, float32 on the CPU.

    Blocks 0..6 are sequence 0's, 8 and 7 sequence 2's (the tail of 7 is NaN), block 9 is all
    NaN and fills row 1 and the padding of row 2; with ``padding``, the lengths are
    ``PADDING_SEQ_LENS`` and row 1 and the padding of row 2 hold ``OUTSIDE_IDS`` instead."""
    gen = torch.Generator().manual_seed(7)
    num_blocks = MAX_BLOCKS + 3
    shape = (num_blocks, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)
    k_cache, v_cache = torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)
    for cache in (k_cache, v_cache):
        cache[num_blocks - 1] = float("nan")
        cache[7, SEQ_LENS[2] - BLOCK_SIZE :] = float("nan")  # the tail of sequence 2's last block
    block_tables = torch.full((3, MAX_BLOCKS), num_blocks - 1, dtype=torch.int32)
    block_tables[0] = torch.randperm(MAX_BLOCKS, generator=gen).to(torch.int32)
    block_tables[2, :2] = torch.tensor([8, 7], dtype=torch.int32)
    q = torch.randn(len(SEQ_LENS), NUM_HEADS, HEAD_DIM, generator=gen)
    seq_lens = PADDING_SEQ_LENS if padding else SEQ_LENS
    if padding:
        for row in (1, 2):
            for j in range(-(-seq_lens[row] // BLOCK_SIZE), MAX_BLOCKS):
                block_tables[row, j] = OUTSIDE_IDS[(row + j) % 2]  # row 0's tail tile reads row 1's first
    return q, k_cache, v_cache, block_tables, torch.tensor(seq_lens, dtype=torch.int32)


def within_the_table(module) -> None:
    """Wrap, in place, the given checks that ``module`` calls: its own ``_check_inputs`` and
    ``_check_summaries`` (the names the starter imports from ``_host.py``), and those of any module it
    holds that has them (a going-further kernel calls its plain sibling's). The wrapped checks run on
    ``seq_lens`` cut to what the table, or the summaries, can hold: every other check still applies.
    Their arguments are ``_host.py``'s: ``_check_inputs(fn, q, k_cache, v_cache, block_tables,
    seq_lens, ...)`` and ``_check_summaries(m, denom, acc, seq_lens, partition_size, out_dtype)``."""
    owners = [module, *(v for v in vars(module).values() if isinstance(v, types.ModuleType) and v is not module)]
    for owner in owners:
        check_inputs = getattr(owner, "_check_inputs", None)
        check_summaries = getattr(owner, "_check_summaries", None)
        if callable(check_inputs):
            owner._check_inputs = _within(check_inputs, seq_lens_at=5, capacity=lambda a: a[4].shape[1] * a[2].shape[1])
        if callable(check_summaries):
            owner._check_summaries = _within(check_summaries, seq_lens_at=3, capacity=lambda a: a[2].shape[2] * a[4])


def _within(check, *, seq_lens_at: int, capacity):
    def checked(*args, **kwargs):
        args = list(args)
        args[seq_lens_at] = args[seq_lens_at].clamp(max=capacity(args))
        return check(*args, **kwargs)

    return checked


def main() -> None:
    device = triton_env.device()  # before torch and triton: the interpreter when there is no GPU
    import numpy as np
    import torch

    padding = sys.argv[1:] == ["padding"]
    q, k_cache, v_cache, block_tables, seq_lens = (t.to(device) for t in inputs(torch, padding))
    lab = child.implementation()
    if not padding:
        within_the_table(lab)
    outs = [lab.paged_decode(q, k_cache, v_cache, block_tables, seq_lens, num_splits=n) for n in NUM_SPLITS]
    child.send(np.stack([out.detach().cpu().numpy() for out in outs]))


if __name__ == "__main__":
    main()
