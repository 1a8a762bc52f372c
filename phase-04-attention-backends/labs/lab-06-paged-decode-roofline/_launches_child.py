"""The child process of test_lab.py's count of the kernels ``paged_decode`` launches
(labkit.testing.child).

The README promises one kernel launch for one split (no reduce) and two for more (the partition
kernel, then the reduce), and that ``num_splits=None`` takes ``choose_num_splits``'s count for the
table's capacity, ``max_blocks * block_size`` tokens. Launches are counted where Triton starts every
kernel, its ``run`` method (the compiled one on a GPU, the interpreter's on a CPU), wrapped before
the implementation is loaded. That happens here, in a process of its own (under ``labs grade``, in
the student's sandbox), never in the test's.

For each call of CALLS, the child sends back one row: the Triton kernels that call launched, and
the split count it was asked for (``choose_num_splits``'s own answer, from the implementation, for
``None``). Nothing here decides what is right: the test does.
"""

from __future__ import annotations

from labkit import triton_env
from labkit.testing import child

BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, NUM_HEADS = 16, 2, 32, 4
# (batch, max_blocks, num_splits). With None, choose_num_splits decides: on 132 SMs (the
# interpreter's count, and an H100's or H200's) the rule splits the batch of 2 x 20 blocks and not
# the batch of 40 x 2 blocks, and the table's batch and width swapped would decide the other way.
CALLS = [(3, 7, 1), (3, 7, 3), (2, 20, None), (40, 2, None)]


def inputs(torch, batch: int, max_blocks: int):
    """One batch from a fixed seed, float32 on the CPU: ``(q, k_cache, v_cache, block_tables, seq_lens)``."""
    gen = torch.Generator().manual_seed(batch * 100 + max_blocks)
    num_blocks = batch * max_blocks
    shape = (num_blocks, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)
    k_cache, v_cache = torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)
    block_tables = torch.randperm(num_blocks, generator=gen).to(torch.int32).reshape(batch, max_blocks)
    seq_lens = torch.randint(0, max_blocks * BLOCK_SIZE + 1, (batch,), generator=gen, dtype=torch.int32)
    q = torch.randn(batch, NUM_HEADS, HEAD_DIM, generator=gen)
    return q, k_cache, v_cache, block_tables, seq_lens


def count_launches() -> list[str]:
    """Wrap Triton's kernel launch (``kernel[grid](...)`` calls the kernel's ``run``) so that each one
    appends the kernel's name to the list returned."""
    from triton.runtime import interpreter, jit

    launched: list[str] = []
    for cls in (jit.JITFunction, interpreter.InterpretedFunction):
        if "run" not in vars(cls):  # inherited: wrapping it twice would count each launch twice
            continue

        def counted(self, *args, _run=cls.run, **kwargs):
            if not kwargs.get("warmup"):
                launched.append(getattr(getattr(self, "fn", None), "__name__", "?"))
            return _run(self, *args, **kwargs)

        cls.run = counted
    return launched


def main() -> None:
    device = triton_env.device()  # before torch and triton: the interpreter when there is no GPU
    import numpy as np
    import torch

    launched = count_launches()
    lab = child.implementation()
    # Given: the GPU's SM count, or the interpreter's stand-in. Imported after the implementation,
    # whose loading puts the lab folder where imports look.
    from _host import _num_sms
    rows = []
    for batch, max_blocks, num_splits in CALLS:
        q, k_cache, v_cache, block_tables, seq_lens = (t.to(device) for t in inputs(torch, batch, max_blocks))
        count = num_splits
        if count is None:
            count = lab.choose_num_splits(batch, NUM_KV_HEADS, max_blocks * BLOCK_SIZE, _num_sms(q.device))
        launched.clear()
        lab.paged_decode(q, k_cache, v_cache, block_tables, seq_lens, num_splits=num_splits)
        rows.append([len(launched), count])
    child.send(np.array(rows, dtype=np.int64))


if __name__ == "__main__":
    main()
