"""Lab 04-06 tuning sweep: the kernel's levers, one variant each, checked then timed in one run.

    python phase-04-attention-backends/labs/lab-06-paged-decode-roofline/going-further/tune.py [--out DIR]
    python .../going-further/tune.py --variants NAME ...    # a subset
    python .../going-further/tune.py --all-shapes           # every shape of bench.py, not only the starred ones
    python .../going-further/tune.py --dry-run              # on a CPU: every variant through the interpreter
    python .../going-further/tune.py --profile VARIANT --shape NAME  # one variant, one shape (for ncu)

Each variant is the lab's two kernels with one lever changed (``VARIANTS``; ``tuning.md`` next to
this file says what each one tries and why). On a GPU, for every variant: check it against a float64
reference on every starred shape of ``bench.py`` and on small poisoned cases (NaN/inf/huge in unused
slots, tables with and without padding, empty sequences, a group of 5); then time it under CUDA-graph
replay (L2 flushed) on every shape. One table comes out: microseconds per shape, the ratio to the
shipped solution and to cuDNN SDPA timed in the same run, and the fraction of the read bandwidth.
Variants run in child processes, a few at a time, so that one that crashes the GPU context (an
illegal address) costs only itself; the whole sweep is budgeted to finish in under 8 minutes on an
H100 (``--budget``, seconds; variants past it are listed as skipped). With ``--out DIR`` the table is
also written to ``DIR/levers.md`` (``bench.py --out DIR`` then appends it to ``results.md``).

The shipped ``solution.py`` stays the readable version: a variant that wins is folded into it by hand.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LAB = Path(__file__).resolve().parents[1]  # the lab folder: this file lives in its going-further/
sys.path.insert(0, str(LAB.parents[2]))  # the repository: labkit

from labkit import bench, cases, load_impl, triton_env  # noqa: E402

BACKEND = triton_env.select_backend()

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

lab = load_impl(LAB, "solution")  # the shipped kernels: the baseline, and the split rule's constants

BLOCK_SIZE, HEAD_DIM = 16, 128


# --------------------------------------------------------------------------- the variants


@dataclass(frozen=True)
class Variant:
    """One configuration of the tunable kernels; the defaults are the shipped solution's."""

    name: str
    lever: str = "baseline"
    tile: int = lab.TILE_TOKENS  # tokens per iteration (long splits)
    short_tile: int = lab.TILE_TOKENS // 2  # tokens per iteration when a split is at most 2 tiles
    warps: int = lab.NUM_WARPS
    stages: int = lab.NUM_STAGES
    pdl: bool = True  # programmatic dependent launch of the reduce kernel (Hopper and later)
    waves: int = lab.WAVES  # split rule: programs per SM aimed at
    min_split: int = lab.MIN_SPLIT_TOKENS
    ragged_capacity: int = lab.RAGGED_CAPACITY
    ragged_split: int = lab.RAGGED_SPLIT_TOKENS
    round_pow2: bool = True  # split rule: round the count down to a power of two
    persistent: int = 0  # > 0: a fixed grid of this many programs per SM pulls (seq, kv head, split) items
    fused: bool = False  # the last split of each (sequence, KV head) to finish merges, no reduce kernel
    tma: bool = False  # K/V pages through Hopper tensor descriptors (tl.make_tensor_descriptor)
    prefetch: bool = False  # the next tile's K/V loads are issued before this tile's math (two tiles in flight)
    use_lab: bool = False  # time the shipped lab.paged_decode itself
    note: str = ""


BASE = Variant("solution", "the shipped lab.paged_decode", use_lab=True)
VARIANTS = [
    BASE,
    Variant("tuned_baseline", "tune.py's kernel with the solution's settings (parity check)"),
    Variant("no_pdl", "PDL", pdl=False),
    Variant("tile32", "tile", tile=32),
    Variant("tile128", "tile", tile=128, short_tile=64),
    Variant("warps2", "warps", warps=2),
    Variant("warps8", "warps", warps=8),
    Variant("stages2", "stages", stages=2),
    Variant("stages4", "stages", stages=4),
    Variant("tile128_warps8", "tile + warps", tile=128, short_tile=64, warps=8),
    Variant("waves2", "split rule", waves=2),
    Variant("waves8", "split rule", waves=8),
    Variant("exact_fill", "split rule", round_pow2=False),
    Variant("mid_half_splits_tile128", "split rule + tile", waves=2, tile=128, short_tile=64),
    Variant("ragged512", "split rule", ragged_split=512),
    Variant("ragged2048", "split rule", ragged_split=2048),
    Variant("persistent1", "persistent grid", persistent=1),
    Variant("persistent2", "persistent grid", persistent=2),
    Variant("persistent4_waves8", "persistent grid", persistent=4, waves=8),
    Variant("tma_pages", "tensor descriptors", tma=True),
    Variant("fused_reduce", "fused reduce", fused=True),
    Variant("fused_persistent2", "fused reduce + persistent grid", fused=True, persistent=2),
    Variant("warps2_stages2", "warps + stages", warps=2, stages=2),
    Variant("prefetch", "register double buffering", prefetch=True, stages=1),
    Variant("prefetch_stages2", "register double buffering", prefetch=True, stages=2),
    Variant("prefetch_tile32", "register double buffering + tile", prefetch=True, stages=1, tile=32, short_tile=32),
    Variant("prefetch_warps8", "register double buffering + warps", prefetch=True, stages=1, warps=8),
    # A GPU with more bandwidth than an H100 (an H200: 4.8 TB/s against 3.35 by the datasheets, the same 132
    # SMs) needs more bytes in flight for the same latency: deeper pipelines, more programs, fewer registers.
    Variant("stages5", "stages", stages=5),
    Variant("warps2_stages4", "warps + stages", warps=2, stages=4),
    Variant("warps8_stages4", "warps + stages", warps=8, stages=4),
    Variant("tile128_warps8_stages4", "tile + warps + stages", tile=128, short_tile=64, warps=8, stages=4),
    Variant("waves16", "split rule", waves=16),
    Variant("min_split256", "split rule", min_split=256),
]
BY_NAME = {v.name: v for v in VARIANTS}


def choose_num_splits(v: Variant, batch: int, num_kv_heads: int, capacity: int, num_sms: int) -> int:
    """The solution's rule (``lab.choose_num_splits``) with the variant's constants."""
    wanted = max(1, math.ceil(v.waves * num_sms / max(1, batch * num_kv_heads)))
    if v.round_pow2:
        wanted = 1 << (max(1, v.waves * num_sms // max(1, batch * num_kv_heads)).bit_length() - 1)
    splits = min(wanted, max(1, capacity // v.min_split))
    if batch > 1 and capacity >= v.ragged_capacity:
        splits = max(splits, math.ceil(capacity / v.ragged_split))
    return splits


# --------------------------------------------------------------------------- the tunable kernels


@triton.jit
def _item(
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, out_ptr, m_ptr, denom_ptr, acc_ptr, counter_ptr,
    seq, kv_head, split, num_kv_heads, max_splits, partition_size, max_blocks, num_blocks,
    stride_block, stride_slot, stride_head,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
    SCALE: tl.constexpr, TILE_N: tl.constexpr, FP32_DOT: tl.constexpr, ONE_SPLIT: tl.constexpr,
    FUSED: tl.constexpr, TMA: tl.constexpr, PREFETCH: tl.constexpr,
):
    """One (sequence, KV head, split) work item: the solution's partition program, plus the levers."""
    num_heads = num_kv_heads * GROUP
    seq_len = tl.minimum(tl.load(seq_lens_ptr + seq), max_blocks * BLOCK_SIZE)
    start = split * partition_size
    if split == 0 or start < seq_len:
        end = tl.minimum(start + partition_size, seq_len)
        rows = tl.arange(0, GROUP_PAD)
        row_ok = rows < GROUP
        heads = kv_head * GROUP + rows
        dims = tl.arange(0, HEAD_DIM)
        q = tl.load(q_ptr + (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :], mask=row_ok[:, None],
                    other=0.0)
        m = tl.full([GROUP_PAD], float("-inf"), tl.float32)
        denom = tl.zeros([GROUP_PAD], tl.float32)
        acc = tl.zeros([GROUP_PAD, HEAD_DIM], tl.float32)
        table = block_tables_ptr + seq * max_blocks
        if TMA:
            # Whole pages through tensor descriptors: the cache seen as [num_blocks * BLOCK_SIZE rows,
            # num_kv_heads * HEAD_DIM], one [BLOCK_SIZE, HEAD_DIM] box per (page, KV head).
            k_desc = tl.make_tensor_descriptor(k_cache_ptr, shape=[num_blocks * BLOCK_SIZE, num_kv_heads * HEAD_DIM],
                                               strides=[num_kv_heads * HEAD_DIM, 1], block_shape=[BLOCK_SIZE, HEAD_DIM])
            v_desc = tl.make_tensor_descriptor(v_cache_ptr, shape=[num_blocks * BLOCK_SIZE, num_kv_heads * HEAD_DIM],
                                               strides=[num_kv_heads * HEAD_DIM, 1], block_shape=[BLOCK_SIZE, HEAD_DIM])
            slots = tl.arange(0, BLOCK_SIZE)
            for page_start in range(start, end, BLOCK_SIZE):
                block = tl.load(table + page_start // BLOCK_SIZE)
                valid = page_start + slots < end
                k = k_desc.load([block * BLOCK_SIZE, kv_head * HEAD_DIM])
                # The page's tail past seq_len is loaded too: zero it, or 0 * NaN poisons acc.
                v = tl.where(valid[:, None], v_desc.load([block * BLOCK_SIZE, kv_head * HEAD_DIM]), 0.0)
                if FP32_DOT:
                    scores = tl.dot(q, tl.trans(k), input_precision="ieee")
                else:
                    scores = tl.dot(q, tl.trans(k))
                scores = tl.where(valid[None, :], scores * SCALE, float("-inf"))
                m_new = tl.maximum(m, tl.max(scores, axis=1))
                correction = tl.exp(m - m_new)
                p = tl.exp(scores - m_new[:, None])
                denom = denom * correction + tl.sum(p, axis=1)
                if FP32_DOT:
                    acc = acc * correction[:, None] + tl.dot(p, v, input_precision="ieee")
                else:
                    acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
                m = m_new
        elif PREFETCH:
            # Register double buffering: the next tile's block ids and K/V are loaded before this tile's
            # math, so each program keeps two tiles of loads in flight instead of one.
            offs = tl.arange(0, TILE_N)
            token = start + offs
            valid = token < end
            block = tl.load(table + token // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)
            rows_kv = block * stride_block + (token % BLOCK_SIZE) * stride_slot + kv_head * stride_head
            k = tl.load(k_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
            v = tl.load(v_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
            for tile_start in range(start, end, TILE_N):
                n_token = tile_start + TILE_N + offs
                n_valid = n_token < end
                n_block = tl.load(table + n_token // BLOCK_SIZE, mask=n_valid, other=0).to(tl.int64)
                n_rows = n_block * stride_block + (n_token % BLOCK_SIZE) * stride_slot + kv_head * stride_head
                n_k = tl.load(k_cache_ptr + n_rows[:, None] + dims[None, :], mask=n_valid[:, None], other=0.0)
                n_v = tl.load(v_cache_ptr + n_rows[:, None] + dims[None, :], mask=n_valid[:, None], other=0.0)
                if FP32_DOT:
                    scores = tl.dot(q, tl.trans(k), input_precision="ieee")
                else:
                    scores = tl.dot(q, tl.trans(k))
                scores = tl.where(valid[None, :], scores * SCALE, float("-inf"))
                m_new = tl.maximum(m, tl.max(scores, axis=1))
                correction = tl.exp(m - m_new)
                p = tl.exp(scores - m_new[:, None])
                denom = denom * correction + tl.sum(p, axis=1)
                if FP32_DOT:
                    acc = acc * correction[:, None] + tl.dot(p, v, input_precision="ieee")
                else:
                    acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
                m = m_new
                k = n_k
                v = n_v
                valid = n_valid
        else:
            offs = tl.arange(0, TILE_N)
            for tile_start in range(start, end, TILE_N):
                token = tile_start + offs
                valid = token < end
                block = tl.load(table + token // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)
                rows_kv = block * stride_block + (token % BLOCK_SIZE) * stride_slot + kv_head * stride_head
                k = tl.load(k_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
                v = tl.load(v_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
                if FP32_DOT:
                    scores = tl.dot(q, tl.trans(k), input_precision="ieee")
                else:
                    scores = tl.dot(q, tl.trans(k))
                scores = tl.where(valid[None, :], scores * SCALE, float("-inf"))
                m_new = tl.maximum(m, tl.max(scores, axis=1))
                correction = tl.exp(m - m_new)
                p = tl.exp(scores - m_new[:, None])
                denom = denom * correction + tl.sum(p, axis=1)
                if FP32_DOT:
                    acc = acc * correction[:, None] + tl.dot(p, v, input_precision="ieee")
                else:
                    acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
                m = m_new

        out_rows = (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :]
        if ONE_SPLIT:
            out = acc / tl.where(denom > 0, denom, 1.0)[:, None]
            tl.store(out_ptr + out_rows, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
        else:
            state = (seq * num_heads + heads) * max_splits + split
            tl.store(m_ptr + state, m, mask=row_ok)
            tl.store(denom_ptr + state, denom, mask=row_ok)
            tl.store(acc_ptr + state[:, None] * HEAD_DIM + dims[None, :], acc, mask=row_ok[:, None])
            if FUSED:
                # The last split of this (sequence, KV head) to finish merges them all. Every thread's
                # stores must be ordered before the ticket: a CTA barrier, then a release at GPU scope.
                num_splits = tl.maximum(tl.cdiv(seq_len, partition_size), 1)
                tl.debug_barrier()
                counter = counter_ptr + seq * num_kv_heads + kv_head
                ticket = tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu")
                if ticket == num_splits - 1:
                    tl.atomic_xchg(counter, 0, sem="relaxed", scope="gpu")  # ready for the next call
                    first = (seq * num_heads + heads) * max_splits
                    m_all = tl.full([GROUP_PAD], float("-inf"), tl.float32)
                    d_all = tl.zeros([GROUP_PAD], tl.float32)
                    a_all = tl.zeros([GROUP_PAD, HEAD_DIM], tl.float32)
                    for s in range(0, num_splits):
                        m_s = tl.load(m_ptr + first + s, mask=row_ok, other=float("-inf"), cache_modifier=".cg")
                        d_s = tl.load(denom_ptr + first + s, mask=row_ok, other=0.0, cache_modifier=".cg")
                        a_s = tl.load(acc_ptr + (first + s)[:, None] * HEAD_DIM + dims[None, :], mask=row_ok[:, None],
                                      other=0.0, cache_modifier=".cg")
                        m_new = tl.maximum(m_all, m_s)
                        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # an empty sequence: weights 0
                        weight = tl.exp(m_s - m_safe)
                        correction = tl.exp(m_all - m_safe)
                        d_all = d_all * correction + weight * d_s
                        a_all = a_all * correction[:, None] + weight[:, None] * a_s
                        m_all = m_new
                    out = a_all / tl.where(d_all > 0, d_all, 1.0)[:, None]
                    tl.store(out_ptr + out_rows, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])


@triton.jit
def _tuned_partition_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, out_ptr, m_ptr, denom_ptr, acc_ptr, counter_ptr,
    batch, num_kv_heads, max_splits, partition_size, max_blocks, num_blocks, stride_block, stride_slot, stride_head,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
    SCALE: tl.constexpr, TILE_N: tl.constexpr, FP32_DOT: tl.constexpr, ONE_SPLIT: tl.constexpr,
    FUSED: tl.constexpr, TMA: tl.constexpr, PREFETCH: tl.constexpr, PERSISTENT: tl.constexpr, PDL: tl.constexpr,
):
    if PERSISTENT:
        # A fixed grid; work item i is (split, sequence, KV head) with the split slowest, so that the
        # programs of one sequence's splits are spread over the grid.
        num_items = batch * num_kv_heads * max_splits
        for i in range(tl.program_id(0), num_items, tl.num_programs(0)):
            split = i // (batch * num_kv_heads)
            rest = i % (batch * num_kv_heads)
            _item(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, out_ptr, m_ptr, denom_ptr, acc_ptr,
                  counter_ptr, (rest // num_kv_heads).to(tl.int64), rest % num_kv_heads, split, num_kv_heads,
                  max_splits, partition_size, max_blocks, num_blocks, stride_block, stride_slot, stride_head,
                  GROUP, GROUP_PAD, BLOCK_SIZE, HEAD_DIM, SCALE, TILE_N, FP32_DOT, ONE_SPLIT, FUSED, TMA, PREFETCH)
    else:
        _item(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, out_ptr, m_ptr, denom_ptr, acc_ptr,
              counter_ptr, tl.program_id(0).to(tl.int64), tl.program_id(1), tl.program_id(2), num_kv_heads,
              max_splits, partition_size, max_blocks, num_blocks, stride_block, stride_slot, stride_head,
              GROUP, GROUP_PAD, BLOCK_SIZE, HEAD_DIM, SCALE, TILE_N, FP32_DOT, ONE_SPLIT, FUSED, TMA, PREFETCH)
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()


_COUNTERS: dict = {}  # the fused reduce's tickets, zero between calls (the last split resets its own)


def _counters(n: int, device) -> torch.Tensor:
    key = (str(device), n)
    if key not in _COUNTERS:
        _COUNTERS[key] = torch.zeros(n, dtype=torch.int32, device=device)
    return _COUNTERS[key]


def _alloc(size: int, alignment: int, stream):
    """Global scratch for device-side tensor descriptors (Triton asks for it on a GPU)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def tuned_decode(v: Variant, q, k_cache, v_cache, block_tables, seq_lens, num_splits=None):
    """``paged_decode`` with variant ``v``'s levers (inputs as for ``lab.paged_decode``)."""
    if v.use_lab:
        return lab.paged_decode(q, k_cache, v_cache, block_tables, seq_lens, num_splits)
    batch, num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads, _ = k_cache.shape
    capacity = max(block_tables.shape[1] * block_size, 1)
    if num_splits is None:
        num_splits = choose_num_splits(v, batch, num_kv_heads, capacity, lab._num_sms(q.device))
    partition = lab._partition_size(capacity, num_splits, block_size)
    max_splits = math.ceil(capacity / partition)
    one_split = max_splits == 1
    out = q.new_empty(q.shape)
    if out.numel() == 0:
        return out
    if one_split:
        m = denom = acc = out
    else:
        m = q.new_empty((batch, num_heads, max_splits), dtype=torch.float32)
        denom = torch.empty_like(m)
        acc = q.new_empty((batch, num_heads, max_splits, head_dim), dtype=torch.float32)
    counter = _counters(batch * num_kv_heads, q.device) if v.fused else out
    if v.tma:
        if not k_cache.is_contiguous() or block_size < 16:
            raise ValueError("tma_pages needs a contiguous cache")
        if q.device.type == "cuda":
            triton.set_allocator(_alloc)
    pdl = v.pdl and not one_split and not v.fused and lab._supports_pdl(q.device)
    if v.persistent:
        grid = (min(batch * num_kv_heads * max_splits, v.persistent * lab._num_sms(q.device)),)
    else:
        grid = (batch, num_kv_heads, max_splits)
    group = num_heads // num_kv_heads
    _tuned_partition_kernel[grid](
        q.contiguous(), k_cache, v_cache, block_tables.contiguous(), seq_lens.contiguous(), out, m, denom, acc,
        counter, batch, num_kv_heads, max_splits, partition, block_tables.shape[1], num_blocks,
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)), BLOCK_SIZE=block_size, HEAD_DIM=head_dim,
        SCALE=1.0 / math.sqrt(head_dim), TILE_N=v.tile if partition > 2 * v.tile else v.short_tile,
        FP32_DOT=q.dtype == torch.float32, ONE_SPLIT=one_split, FUSED=v.fused, TMA=v.tma, PREFETCH=v.prefetch,
        PERSISTENT=v.persistent > 0, PDL=pdl, num_warps=v.warps, num_stages=v.stages,
    )
    if not one_split and not v.fused:
        lab._reduce_kernel[(batch, num_heads)](
            m, denom, acc, seq_lens.contiguous(), out, partition, max_splits,
            HEAD_DIM=head_dim, SPLIT_TILE=min(lab.SPLIT_TILE, max(2, triton.next_power_of_2(max_splits))), PDL=pdl,
            launch_pdl=pdl,
        )
    return out


# --------------------------------------------------------------------------- shapes, cases and the reference


@dataclass(frozen=True)
class Shape:
    name: str
    seq_lens: tuple[int, ...]
    num_heads: int = 32
    num_kv_heads: int = 8


# bench.py's starred shapes: the target is >= 1.00x cuDNN SDPA under CUDA graphs on every one of them.
SHAPES = (
    Shape("b1 x 32k", (32768,)),
    Shape("b1 x 128k", (131072,)),
    Shape("b4 x 16k", (16384,) * 4),
    Shape("b16 x 4k", (4096,) * 16),
    Shape("b128 x 512", (512,) * 128),
    Shape("b8 x 32k, 40/8 heads", (32768,) * 8, 40, 8),
    Shape("skewed 64k + 63 x 1k", (65536,) + (1024,) * 63),
    Shape("b1 x 512k", (524288,)),
)
# --all-shapes: bench.py's other shapes too, for a bar that asks for every shape.
OTHER_SHAPES = (
    Shape("b1 x 8k", (8192,)),
    Shape("b64 x 4k", (4096,) * 64),
    Shape("b256 x 1k", (1024,) * 256),
    Shape("b64 x 2k, 32/32 heads", (2048,) * 64, 32, 32),
    Shape("b64 x 2k, 64/8 heads", (2048,) * 64, 64, 8),
)
DRY_SHAPES = (Shape("b1 x 300", (300,), 8, 2), Shape("b3 ragged", (100, 37, 5), 8, 2))


def shapes_of(kind: str) -> tuple[Shape, ...]:
    """The shapes of a sweep: ``"dry"`` (the interpreter's), ``"gpu"`` (the starred ones) or ``"all"``."""
    return {"dry": DRY_SHAPES, "gpu": SHAPES, "all": SHAPES + OTHER_SHAPES}[kind]


@dataclass(frozen=True)
class Poisoned:
    """A small case with poison in every unused slot (the tests' standard), for every variant."""

    name: str
    seq_lens: tuple[int, ...]
    num_heads: int = 8
    num_kv_heads: int = 2
    pad_columns: int = 1
    poison: str = "nan"
    num_splits: int | None = None


# Groups of 4 and 5, head_dim 128 and splits longer than two tiles, as in SHAPES: the checks compile
# no kernel specialization of their own (compiling is most of a variant's time on a GPU).
POISONED = (
    Poisoned("ragged, NaN, default splits", (137, 1, 700, 16, 0, 350)),
    Poisoned("ragged, inf, 3 splits, no padding column", (592, 140, 7), pad_columns=0, poison="inf", num_splits=3),
    Poisoned("group of 5, huge, 2 splits", (450, 200, 0), num_heads=10, poison="huge", num_splits=2),
    Poisoned("one split, NaN", (270, 33, 5, 0), num_splits=1),
    Poisoned("8 splits, NaN", (1100, 33, 5, 700), num_splits=8),
)


def build(shape, device, head_dim=HEAD_DIM, dtype=torch.float16, seed=0):
    return cases.decode_case(shape.seq_lens, num_heads=shape.num_heads, num_kv_heads=shape.num_kv_heads,
                             head_dim=head_dim, block_size=BLOCK_SIZE, dtype=dtype, device=device, seed=seed)


def build_poisoned(p: Poisoned, device, head_dim):
    spare = sum(cases.blocks_needed(n, BLOCK_SIZE) for n in p.seq_lens) + 1
    case = cases.decode_case(p.seq_lens, num_heads=p.num_heads, num_kv_heads=p.num_kv_heads, head_dim=head_dim,
                             block_size=BLOCK_SIZE, dtype=torch.float16, device="cpu", seed=1, spare_blocks=spare,
                             pad_columns=p.pad_columns)
    return case.to(device).poison(p.poison)


def reference_f64(case) -> torch.Tensor:
    """The float64 truth, computed on the case's device one length group at a time (a gather of
    the valid tokens, then plain softmax attention; grouped heads by reshaping)."""
    q = case.q.double()
    batch, num_heads, head_dim = q.shape
    kv = case.k_cache.shape[2]
    out = torch.zeros_like(q)
    lens = case.lens
    for n in sorted(set(lens)):
        if n == 0:
            continue
        rows = torch.tensor([b for b, x in enumerate(lens) if x == n], device=q.device)
        k = cases.dense_kv(case.k_cache, case.block_tables[rows], n).double()  # [r, kv, n, d]
        v = cases.dense_kv(case.v_cache, case.block_tables[rows], n).double()
        qg = q[rows].reshape(len(rows), kv, num_heads // kv, head_dim)
        scores = torch.einsum("rkgd,rknd->rkgn", qg, k) / math.sqrt(head_dim)
        weights = torch.softmax(scores, dim=-1)
        out[rows] = torch.einsum("rkgn,rknd->rkgd", weights, v).reshape(len(rows), num_heads, head_dim)
    return out


def max_diff(out, expected) -> float:
    diff = (out.double() - expected).abs()
    return float("nan") if torch.isnan(diff).any() else diff.max().item()


# --------------------------------------------------------------------------- one child: check and time variants


def run_variants(names, shapes, dry: bool, ref_dir: Path, deadline: float, emit) -> None:
    """Check, then time, each variant; ``emit(dict)`` reports each result as soon as it is known.
    A variant not started by ``deadline`` (a ``time.time()``) is reported as skipped."""
    device = "cpu" if dry else "cuda"
    head_dim = 64 if dry else HEAD_DIM
    built = {}
    for shape in shapes:
        case = build(shape, device, head_dim)
        path = ref_dir / f"{shape.name.replace(' ', '_').replace('/', '-')}.pt"
        if path.is_file():
            expected = torch.load(path).to(device)
        else:
            expected = reference_f64(case)
            torch.save(expected.cpu(), path)
        built[shape.name] = (case, expected)
    time_graph = bench.graph_time_us if not dry else _wall_us
    for name in names:
        if time.time() > deadline:
            emit({"variant": name, "ok": False, "problems": ["skipped: over the time budget"], "us": {}})
            continue
        if name == "cuDNN SDPA":
            emit(sdpa_baseline(built, shapes, dry))
            continue
        v = BY_NAME[name]
        result = {"variant": name, "lever": v.lever, "ok": True, "problems": [], "us": {}}
        started = time.time()
        try:
            for p in POISONED:
                case = build_poisoned(p, device, head_dim)
                expected = torch.from_numpy(case.expected_f64()).to(device)
                out = tuned_decode(v, case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens,
                                   p.num_splits)
                diff = max_diff(out, expected)
                if not diff <= 1e-2:
                    result["ok"] = False
                    result["problems"].append(f"{p.name}: max |diff| {diff:.3g}")
            for shape in shapes:
                case, expected = built[shape.name]
                args = (case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens)
                diff = max_diff(tuned_decode(v, *args), expected)
                if not diff <= 1e-2:
                    result["ok"] = False
                    result["problems"].append(f"{shape.name}: max |diff| {diff:.3g}")
            if result["ok"]:
                for shape in shapes:
                    case, _ = built[shape.name]
                    args = (case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens)
                    result["us"][shape.name] = time_graph(lambda args=args, v=v: tuned_decode(v, *args))
        except Exception as err:  # a lever this GPU or Triton lacks: reported, the sweep goes on
            result["ok"] = False
            result["problems"].append(f"{type(err).__name__}: {str(err).strip().splitlines()[-1][:160]}")
        result["seconds"] = round(time.time() - started, 1)
        emit(result)


def sdpa_baseline(built, shapes, dry: bool) -> dict:
    """cuDNN SDPA (or torch's default backend where cuDNN refuses) on dense copies, under graphs."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    result = {"variant": "cuDNN SDPA", "lever": "dense baseline", "ok": True, "problems": [], "us": {}}
    time_graph = bench.graph_time_us if not dry else _wall_us
    for shape in shapes:
        case, _ = built[shape.name]
        groups = []
        for n in sorted(set(shape.seq_lens), reverse=True):
            rows = torch.tensor([b for b, x in enumerate(shape.seq_lens) if x == n], device=case.q.device)
            table = case.block_tables[rows]
            k, v = cases.dense_kv(case.k_cache, table, n), cases.dense_kv(case.v_cache, table, n)
            groups.append((case.q[rows], k, v))

        def cudnn(groups=groups):
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                return [cases.sdpa_decode(q, k, v) for q, k, v in groups]

        try:
            result["us"][shape.name] = time_graph(cudnn)
        except Exception as err:
            result["problems"].append(f"{shape.name}: cuDNN unavailable ({type(err).__name__}), default backend")
            result["us"][shape.name] = time_graph(lambda groups=groups: [cases.sdpa_decode(*g) for g in groups])
        del groups
    return result


def _wall_us(fn) -> float:
    start = time.perf_counter()
    fn()
    return 1e6 * (time.perf_counter() - start)


# --------------------------------------------------------------------------- the parent: children, budget, table


GROUPS_OF = 6  # variants per child process (a crash costs at most the rest of its group, which is retried)


def sweep(names, shapes_kind: str, budget: float, extra_env=None) -> list[dict]:
    """Run ``names`` in child processes, ``GROUPS_OF`` at a time; a child that dies is replaced,
    the variant it was on reported as crashed; variants not started within ``budget`` are skipped."""
    results, pending = [], list(names)
    deadline = time.time() + budget
    ref_dir = Path(tempfile.mkdtemp(prefix="tune-04-06-"))
    while pending:
        if time.time() > deadline:
            results += [{"variant": n, "ok": False, "problems": ["skipped: over the time budget"], "us": {}}
                        for n in pending]
            break
        group, pending = pending[:GROUPS_OF], pending[GROUPS_OF:]
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", ",".join(group), "--ref-dir", str(ref_dir),
               "--shapes-of", shapes_kind, "--deadline", str(deadline)]
        left = deadline - time.time() + 90  # the variant in flight at the deadline may finish
        try:
            child = subprocess.run(cmd, capture_output=True, text=True, timeout=left, env={**os.environ,
                                                                                        **(extra_env or {})})
            output, error, code = child.stdout, child.stderr, child.returncode
        except subprocess.TimeoutExpired as err:
            output, error, code = err.stdout or "", (err.stderr or "") + "\n(timed out)", -1
            output = output.decode() if isinstance(output, bytes) else output
            error = error.decode() if isinstance(error, bytes) else error
        done = [json.loads(line[7:]) for line in output.splitlines() if line.startswith("RESULT ")]
        results += done
        for r in done:
            print(_progress(r), flush=True)
        reported = {r["variant"] for r in done}
        rest = [n for n in group if n not in reported]
        if rest:  # the child died on rest[0]; the others go back in the queue
            tail = (error.strip().splitlines() or [f"exit status {code}"])[-1][:160]
            results.append({"variant": rest[0], "ok": False, "problems": [f"crashed the child: {tail}"], "us": {}})
            print(_progress(results[-1]), flush=True)
            pending = rest[1:] + pending
    return results


def _progress(r: dict) -> str:
    status = "ok" if r["ok"] else "FAILED: " + "; ".join(r["problems"])[:200]
    times = ", ".join(f"{us:.1f}" for us in r["us"].values())
    return f"{r['variant']:26s} {status}  [{times}]  ({r.get('seconds', 0)} s)"


def report(results, shapes, read_bw: float | None, header: str) -> str:
    by = {r["variant"]: r for r in results}
    base = by.get("solution", {}).get("us", {})
    sdpa = by.get("cuDNN SDPA", {}).get("us", {})
    headers = ["variant", "lever"] + [s.name for s in shapes] + ["vs solution (geo-mean)", "shapes >= 1.00x SDPA"]
    rows = []
    for r in results:
        us = r["us"]
        cells = [f"{us[s.name]:.1f}" if s.name in us else "-" for s in shapes]
        ratios = [base[s.name] / us[s.name] for s in shapes if s.name in us and s.name in base]
        geo = f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}x" if ratios and r["variant"] != "cuDNN SDPA" \
            else "-"
        wins = sum(1 for s in shapes if s.name in us and s.name in sdpa and sdpa[s.name] / us[s.name] >= 1.0)
        verdict = "" if r["ok"] else " (" + "; ".join(r["problems"])[:120] + ")"
        rows.append([r["variant"], r.get("lever", "") + verdict] + cells
                    + [geo, f"{wins}/{len(shapes)}" if r["variant"] != "cuDNN SDPA" and us else "-"])
    text = [header, "", bench.markdown_table(headers, rows)]
    if read_bw and base:
        fractions = [f"{s.name}: {100 * _bytes(s) / (base[s.name] * 1e-6) / read_bw:.0f}%" for s in shapes
                     if s.name in base]
        text += ["", "The solution as a fraction of the read bandwidth: " + ", ".join(fractions) + "."]
    if sdpa and base:
        text += ["", "The solution against cuDNN SDPA (its time / the solution's): "
                 + ", ".join(f"{s.name} {sdpa[s.name] / base[s.name]:.2f}x" for s in shapes
                             if s.name in sdpa and s.name in base) + "."]
    return "\n".join(text)


def _bytes(shape: Shape) -> int:
    return bench.kv_bytes(shape.seq_lens, shape.num_kv_heads, HEAD_DIM, 2)


def profile(variant: str, shape_name: str, iters: int) -> int:
    """Plain calls of one variant on one shape, for ``ncu`` (no graphs, no flush)."""
    shape = next(s for s in SHAPES + OTHER_SHAPES if s.name.startswith(shape_name))
    case = build(shape, "cuda")
    args = (case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens)
    for _ in range(iters):
        tuned_decode(BY_NAME[variant], *args)
    torch.cuda.synchronize()
    print(f"ran {variant} on {shape.name} {iters} times")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", metavar="NAME", help=f"a subset of: {', '.join(BY_NAME)}")
    parser.add_argument("--out", type=Path, help="also write the table to DIR/levers.md")
    parser.add_argument("--budget", type=float, default=390.0,
                        help="seconds after which no new variant starts (the default keeps the sweep under 8 minutes)")
    parser.add_argument("--dry-run", action="store_true", help="on a CPU: every variant through the interpreter")
    parser.add_argument("--profile", metavar="VARIANT", help="run one variant a few times (with --shape), for ncu")
    parser.add_argument("--shape", default="b16 x 4k", help="the shape for --profile (a name prefix)")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--ref-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--all-shapes", action="store_true",
                        help="all of bench.py's shapes, not only the starred ones (about 1.6 times as long)")
    parser.add_argument("--shapes-of", choices=["gpu", "dry", "all"], help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=math.inf, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:  # inside a child process: report each variant on stdout as one JSON line
        shapes = shapes_of(args.shapes_of)
        run_variants(args.child.split(","), shapes, args.shapes_of == "dry", args.ref_dir, args.deadline,
                     lambda r: print("RESULT " + json.dumps(r), flush=True))
        return 0
    if BACKEND != "cuda" and not args.dry_run:
        print(f"tune.py times kernels on a CUDA GPU; this machine has none ({triton_env.describe()}). "
              "tune.py --dry-run checks every variant through the interpreter.")
        return 2
    if args.profile:
        return profile(args.profile, args.shape, args.iters)

    names = args.variants or list(BY_NAME)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown variants {unknown}; the variants are {', '.join(BY_NAME)}")
    shapes_kind = "dry" if args.dry_run else "all" if args.all_shapes else "gpu"
    shapes = shapes_of(shapes_kind)
    started = time.time()
    if args.dry_run:
        read_bw, device = None, "CPU (--dry-run: Triton's interpreter; times are wall clock, meaningless)"
    else:
        read_bw, device = bench.read_bandwidth(), bench.device_line()
        torch.cuda.empty_cache()
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    header = (f"## Levers (tune.py)\n\n{device}, {date}"
              + (f"; read bandwidth {read_bw / 1e12:.2f} TB/s" if read_bw else "")
              + ". µs per call under CUDA-graph replay, L2 flushed, fp16, D=128, block 16. Every variant was first "
              "checked against a float64 reference on every shape and on small poisoned cases; a failed check "
              "is shown instead of times. vs solution: the shipped kernel's time / the variant's (geometric mean).")
    print(header.split("\n\n", 1)[1], flush=True)
    results = sweep(["cuDNN SDPA"] + names, shapes_kind, args.budget)
    text = report(results, shapes, read_bw, header)
    print("\n" + text)
    print(f"\n(the sweep took {time.time() - started:.0f} s)")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "levers.md").write_text(text + "\n")
        print(f"wrote {args.out / 'levers.md'}")
    return 0 if all(r["ok"] for r in results if r["variant"] != "cuDNN SDPA") else 1


if __name__ == "__main__":
    sys.exit(main())
