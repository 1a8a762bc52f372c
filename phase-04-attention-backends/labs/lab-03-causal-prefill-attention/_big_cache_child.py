"""The child process of test_lab.py's checks of tensors of more than 2**31 elements (labkit.testing.child).

It picks the device (the GPU when there is one, else Triton's interpreter on the CPU) and, with no
argument, reserves a float16 key cache and value cache of more than 2**31 elements each there
(``child.kv_cache_past_2_31``: on a GPU filled with poison, on the CPU only the blocks in use
written), places the blocks drawn by :func:`inputs` in their top blocks, runs the implementation's
``paged_prefill`` on a ragged batch of two chunks and sends back its output, nothing else. The test
rebuilds the same blocks with :func:`inputs` and computes the float64 expectation itself. A kernel
whose offsets overflow int32 reads another block, or far outside the cache and crashes this
process: either way the test fails, with a message.

With the argument ``heads``, the batch of :func:`head_inputs` instead, every tensor a view into one
reservation of more than 2**31 elements whose heads lie HEAD_STRIDE apart (q and out stored heads
outermost, the caches' KV heads likewise): head 2 of each starts 2**31 elements in, so a head index
multiplied by its stride in int32 wraps around.
"""

from __future__ import annotations

import itertools
import sys

from labkit import triton_env
from labkit.testing import child

BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, NUM_HEADS = 16, 2, 32, 4  # GQA: two query heads per KV head
SPECS = [(21, 12), (0, 19)]  # (context_len, query_len): a chunk after a prefix, a prompt from scratch
MAX_BLOCKS = 4  # table columns: 3 blocks and a padding entry, then 2 blocks and two padding entries
POISON = 3.0e4  # huge for float16 (max 65504): a score or value it enters is far off


def inputs(torch):
    """The batch, from a fixed seed: ``(q, block_tables, query_start_loc, seq_lens, k_blocks, v_blocks)``.

    The tables' entries index ``k_blocks``/``v_blocks`` [6, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM]: the
    sequences' five blocks in shuffled order, then block 5, all poison, for the padding entries. The
    slots past each sequence's length in its last block are poison too; the cache already holds
    the chunks' own keys and values, as paged_prefill expects."""
    gen = torch.Generator().manual_seed(0)
    order = torch.randperm(5, generator=gen)
    block_tables = torch.full((len(SPECS), MAX_BLOCKS), 5, dtype=torch.int32)
    block_tables[0, :3], block_tables[1, :2] = order[:3], order[3:]
    return _batch(torch, gen, SPECS, block_tables, spare=5, num_heads=NUM_HEADS, num_kv_heads=NUM_KV_HEADS)


def _batch(torch, gen, specs, block_tables, spare: int, num_heads: int, num_kv_heads: int):
    """``(q, block_tables, query_start_loc, seq_lens, k_blocks, v_blocks)`` for ``specs`` over blocks
    ``0 .. spare``, drawn from ``gen``: POISON in block ``spare`` (where the tables' padding entries
    point) and in the slots past each sequence's length in its last block."""
    k_blocks = torch.randn(spare + 1, BLOCK_SIZE, num_kv_heads, HEAD_DIM, generator=gen).half()
    v_blocks = torch.randn(spare + 1, BLOCK_SIZE, num_kv_heads, HEAD_DIM, generator=gen).half()
    seq_lens = torch.tensor([context + query_len for context, query_len in specs], dtype=torch.int32)
    for blocks in (k_blocks, v_blocks):
        blocks[spare] = POISON
        for s, n in enumerate(seq_lens.tolist()):
            last = (n - 1) // BLOCK_SIZE
            blocks[block_tables[s, last], n - last * BLOCK_SIZE :] = POISON
    query_start_loc = torch.tensor([0, *itertools.accumulate(n for _, n in specs)], dtype=torch.int32)
    q = torch.randn(int(query_start_loc[-1]), num_heads, HEAD_DIM, generator=gen).half()
    return q, block_tables, query_start_loc, seq_lens, k_blocks, v_blocks


# The heads check: 3 query heads on 3 KV heads, HEAD_STRIDE elements apart in every tensor.
HEADS, HEAD_STRIDE = 3, 2**30
HEAD_SPECS = [(5, 4), (0, 3)]  # (context_len, query_len)


def head_inputs(torch):
    """The heads check's batch, from a fixed seed: ``(q, block_tables, query_start_loc, seq_lens,
    k_blocks, v_blocks)``, ``k_blocks``/``v_blocks`` [3, BLOCK_SIZE, HEADS, HEAD_DIM] with block 2 and
    the tails of the sequences' last blocks poison, the padding entries pointing at block 2."""
    gen = torch.Generator().manual_seed(1)
    block_tables = torch.tensor([[1, 2], [0, 2]], dtype=torch.int32)
    return _batch(torch, gen, HEAD_SPECS, block_tables, spare=2, num_heads=HEADS, num_kv_heads=HEADS)


def heads_apart(torch, q, k_blocks, v_blocks, device: str):
    """``(q, out, k_cache, v_cache)``: views into one reservation of ``2 * HEAD_STRIDE`` elements and a
    little more, each tensor's heads HEAD_STRIDE apart and the four side by side below the first
    stride (out holds POISON). On the CPU only the elements of the views are written."""
    rows, blocks = q[:, 0].numel(), k_blocks[:, :, 0].numel()  # one head's elements of q and of a cache
    size = (HEADS - 1) * HEAD_STRIDE + 2 * rows + 2 * blocks
    try:
        storage = torch.empty(size, dtype=q.dtype) if device == "cpu" else \
            torch.full((size,), POISON, dtype=q.dtype, device=device)
    except (RuntimeError, MemoryError) as err:  # torch.cuda.OutOfMemoryError is a RuntimeError
        child.skip(f"cannot reserve {size} elements on {device}: {err}")
    q_strides = (HEAD_DIM, HEAD_STRIDE, 1)
    cache_strides = (BLOCK_SIZE * HEAD_DIM, HEAD_DIM, HEAD_STRIDE, 1)
    views = (storage.as_strided(q.shape, q_strides, 0), storage.as_strided(q.shape, q_strides, rows),
             storage.as_strided(k_blocks.shape, cache_strides, 2 * rows),
             storage.as_strided(v_blocks.shape, cache_strides, 2 * rows + blocks))
    for view, values in zip(views, (q, torch.full_like(q, POISON), k_blocks, v_blocks), strict=True):
        view.copy_(values.to(device))
    return views


def main() -> None:
    device = triton_env.device()  # before torch and triton: the interpreter when there is no GPU
    import torch

    if sys.argv[1:] == ["heads"]:
        q, block_tables, query_start_loc, seq_lens, k_blocks, v_blocks = head_inputs(torch)
        q, out, k_cache, v_cache = heads_apart(torch, q, k_blocks, v_blocks, device)
        lab = child.implementation()
        lab.paged_prefill(q, k_cache, v_cache, block_tables.to(device), query_start_loc.to(device),
                          seq_lens.to(device), out=out)
        child.send(out.detach().cpu().contiguous().numpy())
        return

    q, block_tables, query_start_loc, seq_lens, k_blocks, v_blocks = inputs(torch)
    k_cache, v_cache, block_tables = child.kv_cache_past_2_31(torch, k_blocks, v_blocks, block_tables,
                                                               device=device, poison=POISON)
    lab = child.implementation()
    out = lab.paged_prefill(q.to(device), k_cache, v_cache, block_tables, query_start_loc.to(device),
                            seq_lens.to(device))
    child.send(out.detach().cpu().numpy())


if __name__ == "__main__":
    main()
