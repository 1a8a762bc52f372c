"""Lab 04-07's rank launcher: one child process that starts ``world_size`` ranks and sends back their outputs.

test_lab.py runs this file as a child (``labkit.testing.child``) and receives data only:

    python _ranks.py suite gloo    one group of ranks for each world size of WORLD_SIZES and each
                                   combine of COMBINES: every case of CASES, each rank's output and
                                   checks of each output; or, for a group that failed, the
                                   failure's message (:func:`encode_suite`, :func:`decode_suite`)
    python _ranks.py crash gloo    4 ranks (nccl: up to 4 GPUs), of which rank 1 raises between two
                                   collectives: the child fails with a message naming that rank and
                                   its exception

Each rank builds its shard of a case with :func:`build_case` (fixed seeds), runs the implementation
under test (``rank_summaries``, then the group's combine) and returns what it got: the output, its
shape and dtype, whether the summaries were left alone, and every ``torch.distributed`` collective
the combine issued (:func:`watch_collectives` wraps them in the rank before the implementation is
loaded). Each case runs in float64, and a few again with the summaries cast to float32, float16 and
bfloat16 (``DTYPE_CASES``), or handed over as views stored heads first (``STRIDED_CASES``). The
test rebuilds the same cases with the same function and computes the truth itself, from the
sequences' keys and values, never from the ranks' shards. The groups run
apart, so a test of the 2-rank ``combine_all_gather`` reports what that group did, whatever the
others did.

:func:`launch` is the launcher that lab.py and bench.py use too: every rank is a process of its own,
joined by ``torch.distributed.init_process_group`` (a file store in a private folder, so no port can
clash); the first rank that fails takes the whole group down at once, with its exception in the
message, and no rank outlives the launcher. On Linux with ``gloo`` the ranks are forked from the
launcher (torch is imported once); otherwise, and always with ``nccl``, each starts afresh (spawn).

Only the standard library, numpy and torch are imported here, plus the child helper: under ``labs
grade`` this script runs in the student's sandbox, where the rest of labkit is not.
"""

from __future__ import annotations

import datetime
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labkit.testing import child

WORLD_SIZES = (1, 2, 4)  # the suite's groups: no communication at all, then 2 and 4 ranks
COMBINES = ("combine_all_reduce", "combine_all_gather")
# What each rank records after each output (numbers): the output's shape (4 entries, -1 past its
# last dimension; all -2 when it is no tensor), its dtype (an index into DTYPES), 1.0/0.0 for each
# summary the combine left unchanged, then the collectives the combine issued: how many, and the
# first MAX_COLLECTIVES of them as (kind, reduce op, elements of the tensor sent, 1.0/0.0 for whether
# that tensor is contiguous: NCCL refuses any other), the first two indices into COLLECTIVE_KINDS and
# REDUCE_OPS.
SHAPE_DIMS = 4
DTYPES = ("float64", "float32", "float16", "bfloat16", "another dtype")
SUMMARIES = ("m", "denom", "acc")
COLLECTIVE_KINDS = ("all_reduce", "all_gather", "another collective")
REDUCE_OPS = ("", "SUM", "MAX", "another op")
MAX_COLLECTIVES = 4
CALL_FIELDS = 4  # (kind, op, elements, contiguous) of each collective
CHECK_SIZE = SHAPE_DIMS + 1 + len(SUMMARIES) + 1 + CALL_FIELDS * MAX_COLLECTIVES
# Every collective of torch.distributed that a combine could call; the rank records each call.
WATCHED = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce_coalesced",
           "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
           "gather", "irecv", "isend", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter", "send")
CRASH_WORLD_SIZE, CRASH_RANK = 4, 1  # with nccl, as many ranks as GPUs, up to 4
CRASH_MESSAGE = f"rank {CRASH_RANK} fails on purpose between two collectives (the crash test)"
TIMEOUT_S = 120.0  # a group that takes longer is stuck (seconds are enough): its ranks are killed
# NVLink multicast stays off on the shared GPU machines: in every process the launcher starts.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
POISON = {"huge": 1.0e6, "nan": math.nan, "inf": math.inf}  # as labkit.poison_value gives for float64


# ---------------------------------------------------------------------------------------------
# The cases: the sequences, and every rank's shard of them.


@dataclass(frozen=True)
class Spec:
    seq_lens: tuple[int, ...]
    num_heads: int
    num_kv_heads: int
    head_dim: int
    block_size: int
    layout: str | int  # "block" (stripe = block_size), "token" (stripe 1), "contiguous", or a stripe
    poison: str  # what every slot that holds no token contains: "huge", "nan" or "inf"
    pad_columns: int  # table columns past the blocks in use, pointing at a poisoned block
    # "hot_rank": near +1000 on the last rank's tokens only; "all_negative": near -1000; "all_positive":
    # near +1000; "hot_token": one token of each sequence near +1000, on rank (b + 1) % world_size, the
    # rest near 0; "far_apart": sequence b near +1000, 0, -1000 (b % 3), and every odd head of a
    # sequence the opposite of the even ones (+1000 and -1000 in one sequence)
    scores: str = "normal"


CASES = {
    "ragged_gqa_block_interleaved": Spec((37, 5, 64, 13), 4, 2, 16, 4, "block", "huge", 2),
    "mqa_token_interleaved": Spec((9, 30, 2), 4, 1, 8, 4, "token", "nan", 0),
    "contiguous_short_and_empty": Spec((3, 70, 0, 17), 2, 2, 8, 4, "contiguous", "inf", 1),
    "stripe_of_three_tokens": Spec((23, 50), 4, 2, 8, 4, 3, "inf", 2),
    "huge_logits_on_one_rank": Spec((40, 19), 4, 2, 16, 4, "block", "huge", 1, "hot_rank"),
    "all_logits_near_minus_1000": Spec((33, 6), 2, 1, 16, 4, "token", "nan", 0, "all_negative"),
    "hot_token_on_another_rank_per_sequence": Spec((26, 13, 31), 2, 1, 16, 4, 3, "huge", 1, "hot_token"),
    "sequences_far_apart_in_one_batch": Spec((21, 11, 17), 4, 2, 16, 4, "token", "nan", 0, "far_apart"),
    # Contiguous over lengths of at most 3: on 4 ranks, rank 3 holds no token at all, and every
    # sequence is missing from some rank; length 0 is on none.
    "short_batch_near_minus_1000": Spec((3, 1, 0, 2), 4, 2, 16, 4, "contiguous", "inf", 1, "all_negative"),
}
# The cases that run a second time with the rank's summaries cast to each dtype of DTYPE_CASES
# (rank_summaries returns float64; the combine must hand back the dtype it was given).
DTYPE_CASES = ("ragged_gqa_block_interleaved", "contiguous_short_and_empty")
LOW_DTYPES = ("float32", "float16", "bfloat16")
# The cases that run once more with the summaries handed over as views stored heads first (m and
# denom transposes of [num_heads, batch] tensors, as a kernel may lay out its lse; acc of [num_heads,
# batch, head_dim]): the same numbers, other strides. Collectives work on the tensors they are given,
# and NCCL takes only contiguous ones.
STRIDED_CASES = ("ragged_gqa_block_interleaved",)
STRIDED = "as views stored heads first"
# In the group of PAIRS_WORLD_SIZE ranks, ranks 0-1 and 2-3 then form two groups of 2
# (``torch.distributed.new_group``), each combining its own case over its own group: the same
# shapes, other numbers, so a collective run over the whole world mixes the pairs' sums. The second
# pair's scores are near +1000, the first's near 0: a maximum taken over the whole world gives the
# first pair a reference 1000 above its own scores, whose weights exp(m - M) then vanish.
PAIRS_WORLD_SIZE = 4
PAIR_CASES = {
    "pair_of_ranks_0_1": Spec((21, 8, 30), 4, 2, 8, 4, "block", "huge", 1),
    "pair_of_ranks_2_3": Spec((21, 8, 30), 4, 2, 8, 4, "block", "nan", 1, "all_positive"),
}


@dataclass
class Shard:
    """One rank's part of a case: its own pool, tables and token counts."""

    k_cache: np.ndarray  # [num_blocks, block_size, num_kv_heads, head_dim] float64
    v_cache: np.ndarray
    block_tables: np.ndarray  # [batch, max_blocks] int32
    seq_lens: np.ndarray  # [batch] int64


@dataclass
class Case:
    name: str
    spec: Spec
    world_size: int
    stripe: int
    q: np.ndarray  # [batch, num_heads, head_dim]
    keys: list[np.ndarray]  # per sequence, [seq_len, num_kv_heads, head_dim]: the logical K
    values: list[np.ndarray]
    shards: list[Shard]


def stripe_of(layout, block_size: int, world_size: int, max_seq_len: int) -> int:
    """Tokens per stripe for a named layout: "block" deals logical blocks, "token" single tokens,
    "contiguous" gives each rank one run of ``ceil(max_seq_len / world_size)`` tokens; an int is a stripe."""
    if layout == "block":
        return block_size
    if layout == "token":
        return 1
    if layout == "contiguous":
        return max(1, -(-max_seq_len // world_size))
    return int(layout)


def deal(seq_len: int, world_size: int, stripe: int) -> list[tuple[int, int]]:
    """``(rank, local position)`` of every token, by dealing stripes round robin: a simulation."""
    owners, counts = [], [0] * world_size
    for start in range(0, seq_len, stripe):
        rank = (start // stripe) % world_size
        for _ in range(start, min(start + stripe, seq_len)):
            owners.append((rank, counts[rank]))
            counts[rank] += 1
    return owners


def build_case(name: str, world_size: int) -> Case:
    """The case ``name`` split over ``world_size`` ranks, the same numbers on every call."""
    spec = {**CASES, **PAIR_CASES}[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1000 * world_size)
    batch, d = len(spec.seq_lens), spec.head_dim
    stripe = stripe_of(spec.layout, spec.block_size, world_size, max(spec.seq_lens))
    owners = [deal(n, world_size, stripe) for n in spec.seq_lens]
    q = rng.standard_normal((batch, spec.num_heads, d))
    keys = [rng.standard_normal((n, spec.num_kv_heads, d)) for n in spec.seq_lens]
    values = [rng.standard_normal((n, spec.num_kv_heads, d)) for n in spec.seq_lens]
    if spec.scores != "normal":
        # q = sqrt(d) e_0 (d = 16: exact) makes each score the key's first coordinate.
        q[:] = 0.0
        q[..., 0] = math.sqrt(d)
        for b, k in enumerate(keys):
            if spec.scores in ("all_negative", "all_positive"):
                k[..., 0] = (-1000.0 if spec.scores == "all_negative" else 1000.0) + rng.uniform(0.0, 3.0, k.shape[:2])
            elif spec.scores == "hot_rank":  # the last rank's tokens near +1000, every other token near 0
                hot = np.array([rank == world_size - 1 for rank, _ in owners[b]], dtype=bool)
                k[hot, :, 0] = 1000.0 + rng.uniform(0.0, 4.0, (int(hot.sum()), spec.num_kv_heads))
            elif spec.scores == "hot_token":  # one token near +1000, the middle one of rank (b + 1) % W's
                k[..., 0] = rng.uniform(-2.0, 2.0, k.shape[:2])
                mine = [t for t, (rank, _) in enumerate(owners[b]) if rank == (b + 1) % world_size]
                k[mine[len(mine) // 2], :, 0] = 1000.0 + rng.uniform(0.0, 1.0, spec.num_kv_heads)
            else:  # "far_apart": scores +-(level + u), the sign by head, the level by sequence
                k[..., 0] = (1000.0, 0.0, -1000.0)[b % 3] + rng.uniform(0.0, 3.0, k.shape[:2])
                q[b, 1::2, 0] = -math.sqrt(d)
    shards = [_shard(rng, spec, rank, owners, keys, values) for rank in range(world_size)]
    return Case(name, spec, world_size, stripe, q, keys, values, shards)


def _shard(rng, spec: Spec, rank: int, owners, keys, values) -> Shard:
    """Rank ``rank``'s pool (twice the blocks it needs, shuffled), its tables, its tokens written
    at their local positions, and every other slot poisoned."""
    bs = spec.block_size
    lens = np.array([sum(1 for r, _ in seq if r == rank) for seq in owners], dtype=np.int64)
    need = [-(-int(n) // bs) for n in lens]
    num_blocks = 2 * sum(need) + 2  # spare blocks exist: the padding points at one
    ids = rng.permutation(num_blocks)
    spare = int(ids[-1])  # never in use: poisoned
    tables = np.full((len(lens), max(max(need, default=0) + spec.pad_columns, 1)), spare, dtype=np.int32)
    start = 0
    for b, n in enumerate(need):
        tables[b, :n] = ids[start:start + n]
        start += n
    shape = (num_blocks, bs, spec.num_kv_heads, spec.head_dim)
    k_cache, v_cache = rng.standard_normal(shape), rng.standard_normal(shape)
    valid = np.zeros((num_blocks, bs), dtype=bool)
    for b, seq in enumerate(owners):
        for t, (r, local) in enumerate(seq):
            if r == rank:
                block, offset = tables[b, local // bs], local % bs
                k_cache[block, offset], v_cache[block, offset] = keys[b][t], values[b][t]
                valid[block, offset] = True
    k_cache[~valid] = POISON[spec.poison]
    v_cache[~valid] = POISON[spec.poison]
    return Shard(k_cache, v_cache, tables, lens)


def runs(world_size: int) -> dict[str, tuple[str, str]]:
    """What a rank of a group of ``world_size`` runs, in order: ``{key: (case, dtype)}``. Every case
    in float64 (its key is its name), then each of DTYPE_CASES in each of LOW_DTYPES (key ``"<case>
    in <dtype>"``), then each of STRIDED_CASES as strided views (key ``"<case> <STRIDED>"``); in the
    group of PAIRS_WORLD_SIZE ranks, last, the rank's pair (``"pairs"``)."""
    order = {name: (name, "float64") for name in CASES}
    order.update({f"{name} in {dtype}": (name, dtype) for dtype in LOW_DTYPES for name in DTYPE_CASES})
    order.update({f"{name} {STRIDED}": (name, "float64") for name in STRIDED_CASES})
    if world_size == PAIRS_WORLD_SIZE:
        order["pairs"] = ("pairs", "float64")
    return order


def output_shapes(world_size: int) -> dict[str, tuple[int, int, int]]:
    """Every run's output shape ``[batch, num_heads, head_dim]``, in the order of :func:`runs`, which
    is the order a rank returns them (each output flattened, then its CHECK_SIZE check numbers)."""
    pair_spec = next(iter(PAIR_CASES.values()))
    specs = {name: (pair_spec if name == "pairs" else CASES[name]) for name, _ in runs(world_size).values()}
    return {key: (len(specs[name].seq_lens), specs[name].num_heads, specs[name].head_dim)
            for key, (name, _) in runs(world_size).items()}


def rank_result_size(world_size: int) -> int:
    return sum(math.prod(shape) + CHECK_SIZE for shape in output_shapes(world_size).values())


# ---------------------------------------------------------------------------------------------
# What each rank runs.

_doing = ""  # in a rank: what it is running now, for the message when it raises


def suite_rank(rank: int, world_size: int, backend: str, combine: str) -> np.ndarray:
    """Every case on this rank: its summaries, then the group's combine, recorded as data."""
    global _doing
    import torch

    watch_collectives()  # before the implementation is loaded: it may import them by name
    lab = child.implementation()
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    pieces = []
    shapes = output_shapes(world_size)
    for key, (name, dtype) in runs(world_size).items():
        if name == "pairs":
            pieces.append(_pair_rank(lab, rank, combine, shapes[key], torch, device))
            continue
        _doing = f"case {key}, rank_summaries"
        summaries = _summaries(lab, build_case(name, world_size), rank, torch, device)
        summaries = tuple(t.to(getattr(torch, dtype)) for t in summaries)
        if key.endswith(STRIDED):
            summaries = heads_first_views(*summaries)
        _doing = f"case {key}, {combine}"
        pieces.append(_record(getattr(lab, combine), summaries, shapes[key], torch))
    return np.concatenate(pieces)


def _pair_rank(lab, rank: int, combine: str, shape, torch, device) -> np.ndarray:
    """Ranks 0-1 and 2-3 as two groups of 2, each combining its own case with ``group=`` its pair."""
    global _doing
    import torch.distributed as dist

    pairs = [dist.new_group([0, 1]), dist.new_group([2, 3])]  # every rank creates every group
    pair, rank_in_pair = divmod(rank, 2)
    name = list(PAIR_CASES)[pair]
    _doing = f"case {name} (ranks {2 * pair} and {2 * pair + 1} as a group of 2), rank_summaries"
    summaries = _summaries(lab, build_case(name, 2), rank_in_pair, torch, device)
    _doing = f"case {name} (ranks {2 * pair} and {2 * pair + 1} as a group of 2), {combine}(..., group=)"
    return _record(lambda *args: getattr(lab, combine)(*args, group=pairs[pair]), summaries, shape, torch)


def heads_first_views(m, denom, acc):
    """The same summaries, stored heads first: m and denom views of [num_heads, batch] tensors, acc
    of a [num_heads, batch, head_dim] one (none of them contiguous)."""
    return m.t().contiguous().t(), denom.t().contiguous().t(), acc.transpose(0, 1).contiguous().transpose(0, 1)


def crash_rank(rank: int, world_size: int, backend: str) -> np.ndarray:
    """One combine on every rank, then rank CRASH_RANK raises while the others enter the next one."""
    global _doing
    import torch

    lab = child.implementation()
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    _doing = "the crash test, rank_summaries"
    summaries = _summaries(lab, build_case(next(iter(CASES)), world_size), rank, torch, device)
    _doing = "the crash test, combine_all_reduce"
    lab.combine_all_reduce(*summaries)
    if rank == CRASH_RANK:
        raise RuntimeError(CRASH_MESSAGE)
    lab.combine_all_reduce(*summaries)  # waits for a rank that never comes: the launcher must end it
    return np.zeros(1)


def _summaries(lab, case: Case, rank: int, torch, device):
    """The implementation's summaries of this rank's shard, its inputs read-only, as torch tensors."""
    shard = case.shards[rank]
    inputs = [case.q.copy(), shard.k_cache.copy(), shard.v_cache.copy(), shard.block_tables.copy(),
              shard.seq_lens.copy()]
    for array in inputs:
        array.flags.writeable = False  # a rank_summaries that writes into its inputs raises
    return tuple(torch.from_numpy(np.array(x, dtype=np.float64)).to(device) for x in lab.rank_summaries(*inputs))


# ---------------------------------------------------------------------------------------------
# The collectives a combine issues, recorded in the rank.

_issued: list[tuple[int, int, int]] | None = None  # while a combine runs: (kind, op, elements) per call


def watch_collectives() -> None:
    """Wrap every collective of WATCHED in ``torch.distributed`` (and in ``distributed_c10d``, where
    they are defined) so that a call made while :data:`_issued` is a list is appended to it."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d

    for name in WATCHED:
        original = getattr(dist, name, None)
        if original is None or getattr(original, "_watched", False):
            continue
        wrapper = _watching(name, original)
        setattr(dist, name, wrapper)
        if getattr(distributed_c10d, name, None) is original:
            setattr(distributed_c10d, name, wrapper)


def _watching(name: str, original):
    def collective(*args, **kwargs):
        if _issued is not None:
            _issued.append(_describe(name, args, kwargs))
        return original(*args, **kwargs)

    collective._watched = True
    collective.__name__ = collective.__qualname__ = name
    collective.__doc__ = original.__doc__
    return collective


def _describe(name: str, args, kwargs) -> tuple[int, int, int, int]:
    """``(kind, op, elements, contiguous)`` of one call: indices into COLLECTIVE_KINDS and REDUCE_OPS,
    the number of elements of the tensor the rank sends (0 when it is not a plain tensor), and 1 when
    that tensor is contiguous (NCCL refuses any other; gloo copies it)."""
    import torch
    import torch.distributed as dist

    def sent(tensor) -> tuple[int, int]:
        if not isinstance(tensor, torch.Tensor):
            return 0, 1
        return tensor.numel(), int(tensor.is_contiguous())

    if name == "all_reduce":
        tensor, op = (args[0] if args else kwargs.get("tensor")), (args[1] if len(args) > 1 else kwargs.get("op"))
        ops = {dist.ReduceOp.SUM: 1, dist.ReduceOp.MAX: 2}
        code = 1 if op is None else next((index for known, index in ops.items() if op == known), 3)
        return 0, code, *sent(tensor)
    if name in ("all_gather", "all_gather_into_tensor"):
        keyword = "tensor" if name == "all_gather" else "input_tensor"
        tensor = args[1] if len(args) > 1 else kwargs.get(keyword)
        return 1, 0, *sent(tensor)
    return 2, 0, 0, 1


def _record(combine, summaries, shape, torch) -> np.ndarray:
    """``combine``'s output flattened (NaN when it has the wrong shape), then its checks."""
    global _issued
    before = [t.clone() for t in summaries]
    _issued = []
    try:
        out = combine(*summaries)
        issued = _issued
    finally:
        _issued = None
    if isinstance(out, torch.Tensor):
        dims = list(out.shape)[:SHAPE_DIMS]
        got_shape = dims + [-1] * (SHAPE_DIMS - len(dims))
        name = str(out.dtype).removeprefix("torch.")
        dtype = DTYPES.index(name) if name in DTYPES else len(DTYPES) - 1
    else:
        got_shape, dtype = [-2] * SHAPE_DIMS, len(DTYPES) - 1
    right_shape = isinstance(out, torch.Tensor) and tuple(out.shape) == shape
    values = out.detach().cpu().double().numpy().ravel() if right_shape else np.full(math.prod(shape), np.nan)
    same = [((a == b) | (a.isnan() & b.isnan())).all() for a, b in zip(before, summaries, strict=True)]
    unchanged = [float(bool(ok)) for ok in same]
    calls = [number for call in issued[:MAX_COLLECTIVES] for number in call]
    calls += [-1] * (CALL_FIELDS * MAX_COLLECTIVES - len(calls))
    return np.concatenate([values, got_shape, [dtype], unchanged, [len(issued)], calls])


# ---------------------------------------------------------------------------------------------
# The suite's answer: for each group, its outputs or its failure, in one float64 array.

RAN, NOT_RUN, FAILED, NOT_IMPLEMENTED = 1.0, 0.0, 2.0, 3.0


def encode_suite(groups: list[tuple[float, np.ndarray | str]]) -> np.ndarray:
    """``[(status, payload)]`` in the order of :func:`suite_groups` as one array: per group its
    status, the payload's length, then the payload (the ranks' arrays, or a message as UTF-8 bytes)."""
    parts = []
    for status, payload in groups:
        data = np.frombuffer(payload.encode(), dtype=np.uint8).astype(np.float64) if isinstance(payload, str) \
            else np.asarray(payload, dtype=np.float64).ravel()
        parts.append(np.concatenate([[status, data.size], data]))
    return np.concatenate(parts)


def decode_suite(array: np.ndarray) -> dict[tuple[int, str], tuple[float, np.ndarray | str]]:
    """The inverse of :func:`encode_suite`: ``{(world_size, combine): (status, payload)}``, each
    ran group's payload shaped ``[world_size, rank_result_size(world_size)]``."""
    groups, position = {}, 0
    for world_size, combine in suite_groups():
        status, size = float(array[position]), int(array[position + 1])
        data = array[position + 2:position + 2 + size]
        position += 2 + size
        if status in (FAILED, NOT_IMPLEMENTED):
            groups[(world_size, combine)] = (status, bytes(data.astype(np.uint8)).decode("utf-8", "replace"))
        elif status == RAN:
            groups[(world_size, combine)] = (status, data.reshape(world_size, rank_result_size(world_size)))
        else:
            groups[(world_size, combine)] = (status, data)
    return groups


def suite_groups() -> list[tuple[int, str]]:
    return [(world_size, combine) for combine in COMBINES for world_size in WORLD_SIZES]


# ---------------------------------------------------------------------------------------------
# The launcher.


class RanksFailed(RuntimeError):
    """A rank raised, died or hung; the message names it and what it raised."""

    def __init__(self, message: str, *, exception_type: str = "", timed_out: bool = False):
        super().__init__(message)
        self.exception_type = exception_type  # of the first rank that raised ("" when none did)
        self.timed_out = timed_out


def set_rank_environment(backend: str) -> None:
    """What every rank's process needs in its environment (set before any rank starts): NVLink
    multicast off, one CPU thread per rank, and gloo on the loopback interface."""
    os.environ.update(NO_MULTICAST)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if backend == "gloo" and sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")


def launch(fn, world_size: int, *, args=(), backend: str = "gloo", timeout: float = TIMEOUT_S) -> list[np.ndarray]:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` processes joined in one process group
    (``backend`` "gloo" or "nccl"; with nccl, rank ``r`` uses GPU ``r``). Returns what each rank
    returned, as numpy arrays in rank order. Raises RanksFailed as soon as one rank fails (the
    others are killed then), or after ``timeout`` seconds; no rank survives this call.

    ``fn`` must be a module-level function (with spawn, each rank imports it afresh)."""
    set_rank_environment(backend)
    method = "fork" if backend == "gloo" and sys.platform.startswith("linux") else "spawn"
    context = multiprocessing.get_context(method)
    workdir = tempfile.mkdtemp(prefix="labs-ranks-")
    ranks = []
    try:
        for rank in range(world_size):
            process = context.Process(target=_rank_main, name=f"rank {rank}", daemon=True,
                                      args=(fn, rank, world_size, backend, workdir, timeout, os.getpid(), args))
            process.start()
            ranks.append(process)
        _wait_for(ranks, workdir, timeout)
        return [np.load(os.path.join(workdir, f"rank{rank}.npy"), allow_pickle=False) for rank in range(world_size)]
    finally:
        for process in ranks:
            if process.is_alive():
                process.kill()
        for process in ranks:
            process.join(10)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_for(ranks, workdir: str, timeout: float) -> None:
    """Return when every rank has exited cleanly; RanksFailed at the first failure or at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        codes = [process.exitcode for process in ranks]
        if all(code == 0 for code in codes):
            return
        if any(code not in (None, 0) for code in codes):
            for process in ranks:  # the group cannot finish without it: end it now
                if process.is_alive():
                    process.kill()
            message, details = _failure(ranks, workdir)
            raise RanksFailed(message, **details)
        left = deadline - time.monotonic()
        if left <= 0:
            stuck = [r for r, process in enumerate(ranks) if process.is_alive()]
            raise RanksFailed(f"{len(ranks)} ranks: timed out after {timeout:.0f} s, ranks {stuck} still running "
                              "(a collective that some ranks never enter waits forever)", timed_out=True)
        alive = [process.sentinel for process in ranks if process.exitcode is None]
        multiprocessing.connection.wait(alive, timeout=min(left, 1.0))


def _failure(ranks, workdir: str) -> tuple[str, dict]:
    """The message for a failed group, and RanksFailed's keywords: the first rank that raised (its
    traceback above it, what it was running), or the first that died without raising."""
    world_size = len(ranks)
    errors = []
    for rank in range(world_size):
        path = os.path.join(workdir, f"rank{rank}.error")
        if os.path.exists(path):  # complete: written under another name, then renamed
            with open(path, encoding="utf-8") as f:
                errors.append((json.load(f), rank))
    if errors:
        first, rank = min(errors, key=lambda item: item[0]["time"])
        during = f" in {first['during']}" if first.get("during") else ""
        return (f"{first['traceback'].rstrip()}\n"
                f"rank {rank} of {world_size} failed{during}: {first['type']}: {' '.join(first['message'].split())}",
                {"exception_type": first["type"]})
    dead = [(rank, process.exitcode) for rank, process in enumerate(ranks) if process.exitcode not in (None, 0)]
    rank, code = dead[0]
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    return f"rank {rank} of {world_size} {how} without raising an exception", {}


def _rank_main(fn, rank, world_size, backend, workdir, timeout, launcher_pid, args) -> None:
    """One rank: join the group, run ``fn``, save its array; on any exception, record it and exit
    at once (the launcher ends the others)."""
    os.dup2(2, 1)  # the launcher's stdout carries its answer to the test: a rank's prints go to stderr
    _die_with(launcher_pid)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size))
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        if backend == "nccl":
            torch.cuda.set_device(rank)  # one GPU per rank, by local rank
        dist.init_process_group(backend, init_method="file://" + os.path.join(workdir, "store"), rank=rank,
                                world_size=world_size, timeout=datetime.timedelta(seconds=timeout))
        result = np.asarray(fn(rank, world_size, *args))
        partial = os.path.join(workdir, f"rank{rank}.partial.npy")
        np.save(partial, result, allow_pickle=False)
        os.replace(partial, os.path.join(workdir, f"rank{rank}.npy"))
        dist.destroy_process_group()
    except BaseException as err:  # any failure of a rank is the group's failure, KeyboardInterrupt included
        record = {"time": time.time(), "type": type(err).__name__, "message": str(err),
                  "traceback": traceback.format_exc(), "during": _doing}
        # Written whole, then renamed: the launcher may kill this rank at any moment once another
        # rank has failed, and must never read half a record.
        partial = os.path.join(workdir, f"rank{rank}.error.partial")
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(partial, os.path.join(workdir, f"rank{rank}.error"))
        sys.stderr.write(record["traceback"])
        sys.stderr.flush()
        os._exit(1)  # no clean-up: a process group with a dead peer may block in it


def _die_with(launcher_pid: int) -> None:
    """End this rank when the launcher is gone, whatever the rank is doing."""
    try:  # Linux: the kernel sends SIGKILL when the parent dies
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    if os.getppid() != launcher_pid:  # it died before the line above
        os._exit(70)

    def watch():
        while True:
            time.sleep(0.5)
            if os.getppid() != launcher_pid:
                os._exit(70)

    threading.Thread(target=watch, daemon=True).start()


# ---------------------------------------------------------------------------------------------
# The child's commands.


def run_suite(backend: str) -> np.ndarray:
    """Every group of :func:`suite_groups` in turn, apart, as :func:`encode_suite` packs them: a
    group that ran, one that failed (its message), one that cannot run here (nccl with fewer GPUs
    than ranks). A combine whose group hung is not run on more ranks: it would hang there too."""
    groups, hung = [], {}
    for world_size, combine in suite_groups():
        if backend == "nccl" and world_size > _gpu_count():
            groups.append((NOT_RUN, ""))
        elif combine in hung:
            groups.append((FAILED, f"not run: {combine} hung on {hung[combine]} ranks, so it would hang here too"))
        else:
            try:
                outputs = launch(suite_rank, world_size, args=(backend, combine), backend=backend)
                groups.append((RAN, np.concatenate(outputs)))
            except RanksFailed as err:
                status = NOT_IMPLEMENTED if err.exception_type == "NotImplementedError" else FAILED
                groups.append((status, str(err)))
                if err.timed_out:
                    hung[combine] = world_size
    return encode_suite(groups)


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("suite", "crash") or argv[1] not in ("gloo", "nccl"):
        print(f"usage: python {Path(__file__).name} suite|crash gloo|nccl", file=sys.stderr)
        return 2
    command, backend = argv
    needed = 1 if command == "suite" else 2
    if backend == "nccl" and _gpu_count() < needed:
        child.skip(f"{command} with nccl needs {needed} CUDA GPU(s), this machine has {_gpu_count()}")
    import torch  # noqa: F401 - imported once here, so that forked ranks start without importing it

    try:
        if command == "suite":
            child.send(run_suite(backend))
            # The last line of stderr is what the test reads when the child fails: here it has not, and
            # the groups' failures (tracebacks above) travel in the answer, one per group.
            print("suite: every group ran or failed on its own; the answer holds each group's outcome", file=sys.stderr)
        else:
            world_size = CRASH_WORLD_SIZE if backend == "gloo" else min(CRASH_WORLD_SIZE, _gpu_count())
            launch(crash_rank, world_size, args=(backend,), backend=backend)
            print(f"no rank failed, but rank {CRASH_RANK} should have", file=sys.stderr)
            return 1
    except RanksFailed as err:
        print(err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
