"""The child process of test_lab.py's 2**31-element cache check on the CPU (labkit.testing.child).

It reserves a float16 cache of more than 2**31 elements with ``torch.empty`` (4 GiB of address
space; only the blocks in use are written, so the operating system commits just those pages),
places one sequence (21 tokens of context, then a 12-token chunk) in its top blocks, runs the
implementation's ``paged_prefill`` and sends back its output, nothing else. The test rebuilds the
same blocks with :func:`inputs` and computes the float64 expectation itself. A kernel whose offsets
overflow int32 reads another block, or far outside the cache and crashes this process: either way
the test fails, with a message.
"""

from __future__ import annotations

from labkit import triton_env
from labkit.testing import child

BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, NUM_HEADS, CONTEXT, QUERY_LEN = 16, 2, 32, 4, 21, 12
SEQ_LEN = CONTEXT + QUERY_LEN
NUM_BLOCKS = 2**31 // (BLOCK_SIZE * NUM_KV_HEADS * HEAD_DIM) + 64
POISON = 3.0e4


def inputs(torch):
    """The chunk's queries, the block table and the four blocks it names (three of the sequence,
    then the padding block), from a fixed seed. Slots past SEQ_LEN and the padding block are poisoned."""
    gen = torch.Generator().manual_seed(0)
    top = (NUM_BLOCKS - 2 - torch.randperm(10, generator=gen)).to(torch.int32)
    table = torch.full((1, 4), NUM_BLOCKS - 1, dtype=torch.int32)
    table[0, :3] = top[:3]
    blocks = torch.randn(4, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, generator=gen).half()
    blocks[3] = POISON
    blocks[2, SEQ_LEN - 2 * BLOCK_SIZE :] = POISON
    q = torch.randn(QUERY_LEN, NUM_HEADS, HEAD_DIM, generator=gen).half()
    return q, table, blocks


def main() -> None:
    triton_env.select_backend()
    import torch

    q, table, blocks = inputs(torch)
    try:
        cache = torch.empty((NUM_BLOCKS, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM), dtype=torch.float16)
    except RuntimeError as err:
        child.skip(f"cannot reserve the address space of a 2**31-element cache: {err}")
    for j in range(4):
        cache[table[0, j]] = blocks[j]
    lab = child.implementation()
    starts = torch.tensor([0, QUERY_LEN], dtype=torch.int32)
    # K and V share the cache: one 4 GiB reservation instead of two.
    out = lab.paged_prefill(q, cache, cache, table, starts, torch.tensor([SEQ_LEN], dtype=torch.int32))
    child.send(out.detach().cpu().numpy())


if __name__ == "__main__":
    main()
