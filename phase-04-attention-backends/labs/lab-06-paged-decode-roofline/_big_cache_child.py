"""The child process of test_lab.py's check of a cache of more than 2**31 elements (labkit.testing.child).

It picks the device (the GPU when there is one, else Triton's interpreter on the CPU), reserves
a float16 key cache and value cache of more than 2**31 elements each there
(``child.kv_cache_past_2_31``: on a GPU filled with poison, on the CPU only the blocks in use
written), places the blocks drawn by :func:`inputs` in their top blocks, runs the implementation's
``paged_decode`` with each count of NUM_SPLITS and sends back the outputs, nothing else. The test
rebuilds the same blocks with :func:`inputs` and computes the float64 expectation itself. A kernel
whose offsets overflow int32 reads another block, or far outside the cache and crashes this
process: either way the test fails, with a message.
"""

from __future__ import annotations

from labkit import triton_env
from labkit.testing import child

BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, NUM_HEADS = 16, 2, 64, 8  # GQA: four query heads per KV head
SEQ_LENS = [70, 23]  # a ragged batch, neither length a whole number of blocks
MAX_BLOCKS = 6  # table columns: 5 blocks and a padding entry, then 2 blocks and four padding entries
NUM_SPLITS = [1, 3, None]  # no reduce; three splits of 32 tokens (the third partial); paged_decode's choice
POISON = 3.0e4  # huge for float16 (max 65504): a score or value it enters is far off


def inputs(torch):
    """The batch, from a fixed seed: ``(q, block_tables, seq_lens, k_blocks, v_blocks)``.

    The tables' entries index ``k_blocks``/``v_blocks`` [8, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM]: the
    sequences' seven blocks in shuffled order, then block 7, all poison, for the padding entries.
    The slots past each sequence's length in its last block are poison too."""
    gen = torch.Generator().manual_seed(0)
    order = torch.randperm(7, generator=gen)
    block_tables = torch.full((len(SEQ_LENS), MAX_BLOCKS), 7, dtype=torch.int32)
    block_tables[0, :5], block_tables[1, :2] = order[:5], order[5:]
    k_blocks = torch.randn(8, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, generator=gen).half()
    v_blocks = torch.randn(8, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, generator=gen).half()
    for blocks in (k_blocks, v_blocks):
        blocks[7] = POISON
        for s, n in enumerate(SEQ_LENS):
            last = (n - 1) // BLOCK_SIZE
            blocks[block_tables[s, last], n - last * BLOCK_SIZE :] = POISON
    q = torch.randn(len(SEQ_LENS), NUM_HEADS, HEAD_DIM, generator=gen).half()
    return q, block_tables, torch.tensor(SEQ_LENS, dtype=torch.int32), k_blocks, v_blocks


def main() -> None:
    device = triton_env.device()  # before torch and triton: the interpreter when there is no GPU
    import numpy as np
    import torch

    q, block_tables, seq_lens, k_blocks, v_blocks = inputs(torch)
    k_cache, v_cache, block_tables = child.kv_cache_past_2_31(torch, k_blocks, v_blocks, block_tables,
                                                               device=device, poison=POISON)
    lab = child.implementation()
    outs = [lab.paged_decode(q.to(device), k_cache, v_cache, block_tables, seq_lens.to(device), num_splits=n)
            for n in NUM_SPLITS]
    # One array [len(NUM_SPLITS), batch, num_heads, head_dim]. np.stack promotes: an output of another
    # dtype makes the whole array another dtype, which the test rejects.
    child.send(np.stack([out.detach().cpu().numpy() for out in outs]))


if __name__ == "__main__":
    main()
