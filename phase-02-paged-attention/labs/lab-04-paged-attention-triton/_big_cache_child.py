"""The child process of test_lab.py's check of a cache of more than 2**31 elements (labkit.testing.child).

It picks the device (the GPU when there is one, else Triton's interpreter on the CPU), reserves
a float16 key cache and value cache of more than 2**31 elements each there
(``child.kv_cache_past_2_31``: on a GPU filled with poison, on the CPU only the blocks in use
written), places the blocks drawn by :func:`inputs` in their top blocks, runs the implementation's
``paged_attention_triton`` and sends back its output, nothing else. The test rebuilds the same
blocks with :func:`inputs` and computes the float64 expectation itself. A kernel whose offsets
overflow int32 reads another block, or far outside the cache and crashes this process: either
way the test fails, with a message.
"""

from __future__ import annotations

from labkit import triton_env
from labkit.testing import child

BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, NUM_HEADS, SEQ_LEN = 16, 2, 16, 4, 40  # GQA: two query heads per KV head
PAD = 2  # table entries past the sequence's three blocks, pointing at the poisoned padding block
POISON = 3.0e4  # huge for float16 (max 65504): a score or value it enters is far off


def inputs(torch):
    """The query, the block table and the blocks it names, from a fixed seed: ``(q, block_table,
    k_blocks, v_blocks)``. The table's entries index ``k_blocks``/``v_blocks`` [4, BLOCK_SIZE,
    NUM_KV_HEADS, HEAD_DIM]: the sequence's three blocks in shuffled order, then PAD entries for block
    3, all poison; the slots past SEQ_LEN in the last block of the sequence are poison too."""
    gen = torch.Generator().manual_seed(0)
    block_table = torch.cat([torch.randperm(3, generator=gen), torch.full((PAD,), 3)]).to(torch.int32)
    k_blocks = torch.randn(4, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, generator=gen).half()
    v_blocks = torch.randn(4, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, generator=gen).half()
    for blocks in (k_blocks, v_blocks):
        blocks[3] = POISON
        blocks[block_table[2], SEQ_LEN - 2 * BLOCK_SIZE :] = POISON
    q = torch.randn(NUM_HEADS, HEAD_DIM, generator=gen).half()
    return q, block_table, k_blocks, v_blocks


def main() -> None:
    device = triton_env.device()  # before torch and triton: the interpreter when there is no GPU
    import torch

    q, block_table, k_blocks, v_blocks = inputs(torch)
    k_cache, v_cache, block_table = child.kv_cache_past_2_31(torch, k_blocks, v_blocks, block_table,
                                                              device=device, poison=POISON)
    lab = child.implementation()
    out = lab.paged_attention_triton(q.to(device), k_cache, v_cache, block_table, SEQ_LEN)
    child.send(out.detach().cpu().numpy())


if __name__ == "__main__":
    main()
