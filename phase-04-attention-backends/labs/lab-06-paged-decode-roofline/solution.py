"""Lab 04-06, reference solution: paged decode at the memory roofline.

One decode step of attention for a batch of sequences whose K/V live in a paged
cache, written so that the GPU streams the cache at close to copy bandwidth:

1. ``_partition_kernel``: one program per (sequence, KV head, split). A split is
   a contiguous range of ``partition_size`` tokens. All the query heads that share
   the KV head are handled together, as the rows of one ``tl.dot``, so each K/V
   byte is read once per KV head, not once per query head. The program writes the
   split's unnormalized summary (max ``m``, denominator ``denom``, accumulator
   ``acc``) in float32.
2. ``_reduce_kernel``: one program per (sequence, query head). It merges the
   summaries of the splits that exist, with lab 04-04's exact merge, and divides
   once at the end.

``paged_decode`` checks its inputs, chooses the split count and launches both (on
Hopper and later, the reduce kernel with programmatic dependent launch: README,
"Launch overhead").
"""

from __future__ import annotations

import functools
import math

from labkit import triton_env

BACKEND = triton_env.select_backend()

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# Tokens each program loads per inner iteration (several blocks when blocks are small).
TILE_TOKENS = 64
# Warps per partition program and software-pipelining depth of its loads.
NUM_WARPS = 4
NUM_STAGES = 3
# The reduce kernel merges up to this many splits per step (usually all of them in one).
SPLIT_TILE = 64
# The split heuristic (see _choose_num_splits and the README's "Choosing the split count").
WAVES = 4  # aim for this many programs per streaming multiprocessor
MIN_SPLIT_TOKENS = 128  # below this a split's fixed costs outweigh what it adds
RAGGED_CAPACITY = 16384  # batches whose table holds this many tokens may be ragged...
RAGGED_SPLIT_TOKENS = 1024  # ...and get splits no longer than this
MAX_GRID_SPLITS = 65535  # CUDA's limit on a grid's third dimension


@triton.jit
def _partition_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, scratch_ptr, out_ptr,
    partition_size, max_blocks, stride_block, stride_slot, stride_head,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
    SCALE: tl.constexpr, TILE_N: tl.constexpr, FP32_DOT: tl.constexpr, PDL: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    num_heads = tl.num_programs(1) * GROUP

    # Never past the block table, whatever seq_lens says.
    seq_len = tl.minimum(tl.load(seq_lens_ptr + seq), max_blocks * BLOCK_SIZE)
    start = split * partition_size
    if split > 0 and start >= seq_len:
        return  # this sequence has fewer splits than the grid: nothing to do
    end = tl.minimum(start + partition_size, seq_len)

    # The query heads that share this KV head, padded to >= 16 rows for tl.dot.
    rows = tl.arange(0, GROUP_PAD)
    row_ok = rows < GROUP
    heads = kv_head * GROUP + rows
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :], mask=row_ok[:, None], other=0.0)

    m = tl.full([GROUP_PAD], float("-inf"), tl.float32)
    denom = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], tl.float32)

    table = block_tables_ptr + seq * max_blocks
    offs = tl.arange(0, TILE_N)
    for tile_start in range(start, end, TILE_N):
        token = tile_start + offs
        valid = token < end
        # Each token looks up its own physical block: one tile may span several blocks.
        block = tl.load(table + token // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)
        rows_kv = block * stride_block + (token % BLOCK_SIZE) * stride_slot + kv_head * stride_head
        k = tl.load(k_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
        v = tl.load(v_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)

        # [GROUP_PAD, TILE_N] scores: every query head of the group against every token.
        if FP32_DOT:
            scores = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            scores = tl.dot(q, tl.trans(k))
        scores = tl.where(valid[None, :], scores * SCALE, float("-inf"))

        # Online softmax; every tile holds a valid token, so m_new is finite.
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        correction = tl.exp(m - m_new)
        p = tl.exp(scores - m_new[:, None])
        denom = denom * correction + tl.sum(p, axis=1)
        if FP32_DOT:
            acc = acc * correction[:, None] + tl.dot(p, v, input_precision="ieee")
        else:
            acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new

    if PDL:
        # This program's loads are done: once every program of the grid has said so (or
        # exited), the GPU may launch the reduce kernel, whose programs then wait in
        # gdc_wait for this grid to finish. Its launch overlaps this grid's tail.
        tl.extra.cuda.gdc_launch_dependents()

    if seq_len <= partition_size:
        # The whole sequence is this one split: nothing to merge, so divide here and
        # the reduce kernel skips this sequence. seq_len 0 gives zeros, not 0/0.
        out = acc / tl.where(denom > 0, denom, 1.0)[:, None]
        out_rows = (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :]
        tl.store(out_ptr + out_rows, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
    else:
        # The split's summary, unnormalized: the reduce kernel divides once, at the end.
        # scratch holds m [batch, num_heads, max_splits], then denom, then acc [..., HEAD_DIM].
        max_splits = tl.num_programs(2)
        n = tl.num_programs(0).to(tl.int64) * num_heads * max_splits
        state = (seq * num_heads + heads) * max_splits + split
        tl.store(scratch_ptr + state, m, mask=row_ok)
        tl.store(scratch_ptr + n + state, denom, mask=row_ok)
        tl.store(scratch_ptr + 2 * n + state[:, None] * HEAD_DIM + dims[None, :], acc, mask=row_ok[:, None])


@triton.jit
def _reduce_kernel(
    scratch_ptr, out_ptr, seq_lens_ptr, partition_size, capacity, max_splits,
    HEAD_DIM: tl.constexpr, SPLIT_TILE: tl.constexpr, PDL: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    num_heads = tl.num_programs(1)

    seq_len = tl.minimum(tl.load(seq_lens_ptr + seq), capacity)  # not written by the partition kernel
    if PDL:
        # Launched before the partition kernel finished (programmatic dependent launch):
        # wait here until all of its programs are done and their summaries visible. Every
        # program waits, even one with nothing to merge, so when this kernel is complete
        # the partition kernel is too, and later work on the stream can rely on both.
        tl.extra.cuda.gdc_wait()
    num_splits = tl.cdiv(seq_len, partition_size)  # only the splits that hold tokens
    if num_splits <= 1:
        return  # the partition kernel wrote this sequence's output itself

    n = tl.num_programs(0).to(tl.int64) * num_heads * max_splits
    state = (seq * num_heads + head) * max_splits
    dims = tl.arange(0, HEAD_DIM)
    offs = tl.arange(0, SPLIT_TILE)
    m = float("-inf")
    denom = 0.0
    acc = tl.zeros([HEAD_DIM], tl.float32)
    for first in range(0, num_splits, SPLIT_TILE):
        split = first + offs
        exists = split < num_splits
        m_s = tl.load(scratch_ptr + state + split, mask=exists, other=float("-inf"))
        d_s = tl.load(scratch_ptr + n + state + split, mask=exists, other=0.0)
        a_s = tl.load(scratch_ptr + 2 * n + (state + split)[:, None] * HEAD_DIM + dims[None, :],
                      mask=exists[:, None], other=0.0)
        # Lab 04-04's merge: rescale every summary to the shared max, then add.
        m_new = tl.maximum(m, tl.max(m_s, axis=0))
        weight = tl.exp(m_s - m_new)  # 0 where the split does not exist
        correction = tl.exp(m - m_new)
        denom = denom * correction + tl.sum(weight * d_s, axis=0)
        acc = acc * correction + tl.sum(weight[:, None] * a_s, axis=0)
        m = m_new

    out = acc / denom  # > 0: at least two splits, each with a valid token
    tl.store(out_ptr + (seq * num_heads + head) * HEAD_DIM + dims, out.to(out_ptr.dtype.element_ty))


@functools.cache
def _supports_pdl(device: torch.device) -> bool:
    """Programmatic dependent launch (a kernel launched before the previous one ends) needs an
    NVIDIA GPU of the Hopper generation (sm_90) or later; ROCm's torch also says "cuda"."""
    if BACKEND != "cuda" or device.type != "cuda" or torch.version.hip is not None:
        return False
    return torch.cuda.get_device_capability(device)[0] >= 9


@functools.cache
def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 132  # the interpreter has no SMs; an H100's count keeps the choice realistic


def _choose_num_splits(batch: int, num_kv_heads: int, capacity: int, device: torch.device) -> int:
    """The split count when the caller gives none; ``capacity`` is the table's length in tokens.

    1. Enough (sequence, KV head, split) programs to give every SM about ``WAVES`` of
       them, rounded down to a power of two so the partitions tile the table evenly.
    2. No split shorter than ``MIN_SPLIT_TOKENS``: below that its fixed costs (query
       load, summary write, merge) outweigh the parallelism it adds.
    3. A batch whose table can hold ``RAGGED_CAPACITY`` tokens or more may be ragged,
       one long sequence among short ones; the wave count of rule 1 assumes every
       sequence is full, and would leave the long one to a few programs that run on
       long after the rest. So such batches are cut into splits of at most
       ``RAGGED_SPLIT_TOKENS``; the short sequences then use one split each.
    The constants were tuned on an H100 with bench.py's shapes (README).
    """
    wanted = max(1, WAVES * _num_sms(device) // (batch * num_kv_heads))
    splits = min(1 << (wanted.bit_length() - 1), max(1, capacity // MIN_SPLIT_TOKENS))
    if batch > 1 and capacity >= RAGGED_CAPACITY:
        splits = max(splits, math.ceil(capacity / RAGGED_SPLIT_TOKENS))
    return splits


def _partition_size(capacity: int, num_splits: int, block_size: int) -> int:
    """Tokens per split: ``ceil(capacity / num_splits)`` rounded up to whole blocks."""
    tokens = max(1, math.ceil(capacity / num_splits))
    return math.ceil(tokens / block_size) * block_size


def _check_inputs(q, k_cache, v_cache, block_tables, seq_lens, num_splits) -> None:
    """Clear errors for what the kernels cannot handle, before anything is launched."""
    tensors = {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_tables": block_tables, "seq_lens": seq_lens}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"paged_decode: {name} must be a torch.Tensor, got {type(t).__name__}")
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        raise ValueError(f"paged_decode: all tensors must be on one device, got {sorted(map(str, devices))}")
    if q.dim() != 3:
        raise ValueError(f"paged_decode: q must be [batch, num_heads, head_dim], got shape {tuple(q.shape)}")
    if k_cache.dim() != 4 or k_cache.shape != v_cache.shape:
        raise ValueError(
            "paged_decode: k_cache and v_cache must both be [num_blocks, block_size, num_kv_heads, head_dim], "
            f"got {tuple(k_cache.shape)} and {tuple(v_cache.shape)}"
        )
    batch, num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads, cache_dim = k_cache.shape
    allowed = (torch.float16, torch.bfloat16, torch.float32)
    if q.dtype not in allowed or k_cache.dtype != q.dtype or v_cache.dtype != q.dtype:
        raise TypeError(
            "paged_decode: q, k_cache and v_cache must share one dtype among float16, bfloat16, float32; "
            f"got {q.dtype}, {k_cache.dtype}, {v_cache.dtype}"
        )
    if cache_dim != head_dim:
        raise ValueError(f"paged_decode: q has head_dim {head_dim}, the caches {cache_dim}")
    if head_dim not in (16, 32, 64, 128, 256):
        raise ValueError(f"paged_decode: head_dim must be a power of two from 16 to 256, got {head_dim}")
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"paged_decode: block_size must be a power of two >= 16, got {block_size}")
    if num_kv_heads == 0 or num_heads % num_kv_heads:
        raise ValueError(
            f"paged_decode: num_heads={num_heads} must be a multiple of num_kv_heads={num_kv_heads}"
        )
    if block_tables.dtype != torch.int32 or block_tables.dim() != 2 or block_tables.shape[0] != batch:
        raise ValueError(
            f"paged_decode: block_tables must be int32 [batch={batch}, max_blocks], "
            f"got {block_tables.dtype} {tuple(block_tables.shape)}"
        )
    if seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (batch,):
        raise ValueError(
            f"paged_decode: seq_lens must be int32 [batch={batch}], got {seq_lens.dtype} {tuple(seq_lens.shape)}"
        )
    if num_splits is not None and (isinstance(num_splits, bool) or not isinstance(num_splits, int) or num_splits < 1):
        raise ValueError(f"paged_decode: num_splits must be None or an int >= 1, got {num_splits!r}")
    if k_cache.stride(-1) != 1 or k_cache.stride() != v_cache.stride():
        raise ValueError(
            "paged_decode: k_cache and v_cache must have the same strides, with the last dimension contiguous; "
            f"got {k_cache.stride()} and {v_cache.stride()}"
        )
    # Checking values needs them on the host; on a GPU that is a synchronization per
    # call, so (like vLLM) only CPU tensors are checked. The kernels never read past
    # the block table's length whatever seq_lens says (see paged_decode).
    if seq_lens.device.type == "cpu" and batch:
        capacity = block_tables.shape[1] * block_size
        low, high = int(seq_lens.min()), int(seq_lens.max())
        if low < 0 or high > capacity:
            raise ValueError(
                f"paged_decode: seq_lens must lie in [0, max_blocks * block_size = {capacity}], "
                f"got values from {low} to {high}"
            )
        lens = seq_lens.to(torch.int64)
        used = torch.arange(block_tables.shape[1]) < ((lens + block_size - 1) // block_size)[:, None]
        ids = block_tables[used]
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= num_blocks):
            raise ValueError(
                f"paged_decode: block_tables holds block ids outside [0, {num_blocks}) among a sequence's blocks "
                f"(from {int(ids.min())} to {int(ids.max())})"
            )


def paged_decode(q, k_cache, v_cache, block_tables, seq_lens, num_splits=None):
    """One decode step of attention over a paged KV cache, for a ragged batch.

    q ``[batch, num_heads, head_dim]``; k_cache, v_cache ``[num_blocks, block_size,
    num_kv_heads, head_dim]``; block_tables ``[batch, max_blocks]`` int32; seq_lens
    ``[batch]`` int32. Returns ``out`` shaped and typed like ``q``: for each sequence
    ``b`` and head ``h``, softmax(q[b, h] . K^T / sqrt(head_dim)) V over the first
    ``seq_lens[b]`` tokens, K/V from KV head ``h // (num_heads // num_kv_heads)``.
    A sequence of length 0 gets zeros.

    ``num_splits``: ``None`` chooses it (``_choose_num_splits``). An int ``n`` cuts
    the block table's capacity (``max_blocks * block_size`` tokens) into partitions
    of ``ceil(capacity / n)`` tokens rounded up to whole blocks; sequence ``b`` uses
    ``ceil(seq_lens[b] / partition)`` of them (so at most ``n``, fewer when blocks
    round up or the sequence is short). ``1`` means no split.
    """
    _check_inputs(q, k_cache, v_cache, block_tables, seq_lens, num_splits)
    batch, num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads, _ = k_cache.shape
    out = q.new_empty(q.shape)
    if batch == 0 or num_heads == 0:
        return out
    q = q.contiguous()
    block_tables = block_tables.contiguous()
    seq_lens = seq_lens.contiguous()

    capacity = max(1, block_tables.shape[1] * block_size)
    if num_splits is None:
        # Chosen splits also end on whole tiles, so no tile straddles two programs.
        num_splits = _choose_num_splits(batch, num_kv_heads, capacity, q.device)
        partition = _partition_size(capacity, num_splits, max(block_size, TILE_TOKENS))
    else:
        partition = _partition_size(capacity, num_splits, block_size)
    partition = max(partition, block_size * math.ceil(capacity / block_size / MAX_GRID_SPLITS))
    max_splits = math.ceil(capacity / partition)
    # Short splits (batch 1 at 8k tokens) stream in smaller tiles: more loads in flight per token.
    tile = TILE_TOKENS if partition > 2 * TILE_TOKENS else TILE_TOKENS // 2

    group = num_heads // num_kv_heads
    pdl = _supports_pdl(q.device)
    # The splits' summaries (m, denom, acc), float32, in one allocation.
    scratch = out
    if max_splits > 1:
        scratch = q.new_empty(batch * num_heads * max_splits * (head_dim + 2), dtype=torch.float32)

    _launch(
        _partition_kernel, (batch, num_kv_heads, max_splits),
        (q, k_cache, v_cache, block_tables, seq_lens, scratch, out,
         partition, block_tables.shape[1], k_cache.stride(0), k_cache.stride(1), k_cache.stride(2)),
        GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)), BLOCK_SIZE=block_size, HEAD_DIM=head_dim,
        SCALE=1.0 / math.sqrt(head_dim), TILE_N=tile, FP32_DOT=q.dtype == torch.float32, PDL=pdl,
        num_warps=NUM_WARPS, num_stages=NUM_STAGES,
    )
    if max_splits > 1:
        _launch(
            _reduce_kernel, (batch, num_heads, 1),
            (scratch, out, seq_lens, partition, capacity, max_splits),
            HEAD_DIM=head_dim, SPLIT_TILE=min(SPLIT_TILE, triton.next_power_of_2(max_splits)), PDL=pdl,
            launch_pdl=pdl,
        )
    return out


# Compiled kernels by everything their code depends on (see _launch).
_compiled: dict = {}


def _specialization(arg) -> tuple:
    """What Triton specializes a kernel on for one runtime argument: a tensor's dtype
    and whether its address is 16-byte aligned; an integer's width, whether it is 1
    and whether it is divisible by 16."""
    if isinstance(arg, torch.Tensor):
        return arg.dtype, arg.data_ptr() % 16 == 0
    return type(arg), arg == 1, arg % 16 == 0, -(2**31) <= arg < 2**31


def _launch(kernel, grid, args, **meta):
    """``kernel[grid](*args, **meta)``, with less Python per call.

    Triton's launcher binds and specializes every argument again on each call: 20 to
    35 us of CPU on the benchmark's host, more than the GPU needs for a batch-1 decode
    at 8k tokens, so the GPU would sit idle waiting for the launch. The compiled kernel
    depends only on the constexprs, the launch options and ``_specialization`` of the
    runtime arguments, so it is looked up by those and called directly. (vLLM avoids
    the same cost differently: it replays decode steps from CUDA graphs.)
    """
    if BACKEND != "cuda":
        return kernel[grid](*args, **meta)  # the interpreter: nothing to save
    key = (kernel, args[0].device.index, tuple(map(_specialization, args)), tuple(meta.items()))
    compiled = _compiled.get(key)
    if compiled is None:
        _compiled[key] = kernel[grid](*args, **meta)  # compiles if needed, launches, returns the compiled kernel
        return
    constexprs = [meta[name] for name in kernel.arg_names[len(args):]]
    compiled[grid](*args, *constexprs)  # the compiled kernel's own launcher takes every argument in order
