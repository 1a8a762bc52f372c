"""Lab 04-06's host side, given: ``starter.py`` and ``solution.py`` both import it.

What the kernels need around them that you do not write:

- the kernels' settings (tile, warps, stages, the reduce's chunk) and the split rule's constants,
  tuned on an H100 with ``bench.py``'s shapes (README step 4 says where they come from);
- ``_partition_size``: a forced split count turned into whole blocks of tokens per split;
- the device queries: ``_num_sms`` (``INTERPRETER_SMS`` without a GPU) and ``_supports_pdl``
  (programmatic dependent launch: NVIDIA, sm_90 or later);
- the input checks ``_check_inputs`` (``paged_decode``, ``split_summaries``) and
  ``_check_summaries`` (``merge_splits``): call them first, so that bad input gets a ``ValueError``
  or ``TypeError`` naming the function before any kernel runs (the block ids through
  ``labkit.block_table.check_block_ids``, the check every paged lab shares). ``num_splits`` and
  ``partition_size`` may be ints or numpy integers (``labkit.integers.as_int``, the integer check
  the labs share): ``_check_inputs`` returns ``num_splits`` as a Python int (None stays None) and
  ``_check_summaries`` returns ``partition_size`` as one, the plain int a kernel launch takes.
"""

from __future__ import annotations

import functools
import math

from labkit import triton_env
from labkit.block_table import check_block_ids
from labkit.integers import as_int

BACKEND = triton_env.select_backend()  # "cuda" or "interpreter": decides whether PDL can be used

import torch  # noqa: E402

# Tokens each partition program loads per iteration (several blocks when blocks are small).
TILE_TOKENS = 64
# Warps per partition program and software-pipelining depth of its loads (going-further/tuning.md).
NUM_WARPS = 4
NUM_STAGES = 3
# The reduce kernel merges up to this many splits per step (usually all of them in one).
SPLIT_TILE = 64
# The split rule (choose_num_splits; README step 4). Tuned on an H100 with bench.py's shapes.
WAVES = 4  # aim for this many programs per streaming multiprocessor
MIN_SPLIT_TOKENS = 128  # below this a split's fixed costs outweigh what it adds
RAGGED_CAPACITY = 16384  # batches whose table holds this many tokens may be ragged...
RAGGED_SPLIT_TOKENS = 1024  # ...and get splits no longer than this
# The interpreter has no SMs: it plans for an H100's 132, so the CPU runs the GPU's code paths.
INTERPRETER_SMS = 132
MAX_GRID_SPLITS = 65535  # CUDA's limit on a grid's third dimension


def _partition_size(capacity: int, num_splits: int, block_size: int) -> int:
    """Tokens per split: ``ceil(capacity / num_splits)`` rounded up to whole blocks (and long
    enough that the grid's third dimension stays within CUDA's limit)."""
    tokens = max(1, math.ceil(capacity / num_splits))
    tokens = max(tokens, math.ceil(capacity / MAX_GRID_SPLITS))
    return math.ceil(tokens / block_size) * block_size


@functools.cache
def _num_sms(device: torch.device) -> int:
    """The GPU's streaming multiprocessors; ``INTERPRETER_SMS`` without a GPU."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return INTERPRETER_SMS


@functools.cache
def _supports_pdl(device: torch.device) -> bool:
    """Programmatic dependent launch (a kernel launched before the previous one ends) needs an
    NVIDIA GPU of the Hopper generation (sm_90) or later; ROCm's torch also says "cuda"."""
    if BACKEND != "cuda" or device.type != "cuda" or torch.version.hip is not None:
        return False
    return torch.cuda.get_device_capability(device)[0] >= 9


FLOATS = (torch.float16, torch.bfloat16, torch.float32)


def _check_inputs(fn, q, k_cache, v_cache, block_tables, seq_lens, num_splits, none_ok=True) -> int | None:
    """Clear errors, naming ``fn``, for what the kernels cannot handle, before anything runs.
    Returns ``num_splits`` as a Python int (None stays None)."""
    _require_tensors(fn, {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_tables": block_tables,
                          "seq_lens": seq_lens})
    if q.dim() != 3:
        raise ValueError(f"{fn}: q must be [batch, num_heads, head_dim], got shape {tuple(q.shape)}")
    if k_cache.dim() != 4 or k_cache.shape != v_cache.shape:
        raise ValueError(
            f"{fn}: k_cache and v_cache must both be [num_blocks, block_size, num_kv_heads, head_dim], "
            f"got {tuple(k_cache.shape)} and {tuple(v_cache.shape)}"
        )
    batch, num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads, cache_dim = k_cache.shape
    if q.dtype not in FLOATS or k_cache.dtype != q.dtype or v_cache.dtype != q.dtype:
        raise TypeError(
            f"{fn}: q, k_cache and v_cache must share one dtype among float16, bfloat16, float32; "
            f"got {q.dtype}, {k_cache.dtype}, {v_cache.dtype}"
        )
    if cache_dim != head_dim:
        raise ValueError(f"{fn}: q has head_dim {head_dim}, k_cache and v_cache {cache_dim}")
    if head_dim not in (16, 32, 64, 128, 256):
        raise ValueError(f"{fn}: head_dim must be a power of two from 16 to 256, got {head_dim}")
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"{fn}: block_size must be a power of two >= 16, got {block_size}")
    if num_kv_heads == 0 or num_heads % num_kv_heads:
        raise ValueError(f"{fn}: num_heads={num_heads} must be a multiple of num_kv_heads={num_kv_heads}")
    if block_tables.dtype != torch.int32 or block_tables.dim() != 2 or block_tables.shape[0] != batch:
        raise ValueError(
            f"{fn}: block_tables must be int32 [batch={batch}, max_blocks], "
            f"got {block_tables.dtype} {tuple(block_tables.shape)}"
        )
    if seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (batch,):
        raise ValueError(f"{fn}: seq_lens must be int32 [batch={batch}], got {seq_lens.dtype} {tuple(seq_lens.shape)}")
    num_splits = as_int(num_splits, f"{fn}: num_splits", low=1, none_ok=none_ok)
    if k_cache.stride(-1) != 1 or k_cache.stride() != v_cache.stride():
        raise ValueError(
            f"{fn}: k_cache and v_cache must have the same strides, with the last dimension contiguous; "
            f"got {k_cache.stride()} and {v_cache.stride()}"
        )
    # Checking values needs them on the host; on a GPU that is a synchronization per call, so
    # (like vLLM) only CPU tensors are checked. The kernels never read past the block table's
    # length whatever seq_lens says.
    if seq_lens.device.type == "cpu" and batch:
        capacity = block_tables.shape[1] * block_size
        _check_lengths(fn, seq_lens, capacity, "max_blocks * block_size")
        check_block_ids(block_tables, seq_lens, block_size, num_blocks, f"{fn}: block_tables")
    return num_splits


def _check_summaries(m, denom, acc, seq_lens, partition_size, out_dtype) -> int:
    """Clear errors, naming merge_splits, for summaries the reduce kernel cannot handle. Returns
    ``partition_size`` as a Python int."""
    fn = "merge_splits"
    tensors = {"m": m, "denom": denom, "acc": acc, "seq_lens": seq_lens}
    _require_tensors(fn, tensors)
    for name, t in tensors.items():
        wanted = torch.int32 if name == "seq_lens" else torch.float32
        if t.dtype != wanted:
            raise TypeError(f"{fn}: {name} must be {wanted}, got {t.dtype}")
    if acc.dim() != 4 or acc.shape[-1] not in (16, 32, 64, 128, 256):
        raise ValueError(
            f"{fn}: acc must be [batch, num_heads, max_splits, head_dim] with head_dim a power of two "
            f"from 16 to 256, got shape {tuple(acc.shape)}"
        )
    if m.shape != acc.shape[:3] or denom.shape != acc.shape[:3]:
        raise ValueError(
            f"{fn}: m and denom must be [batch, num_heads, max_splits] = {tuple(acc.shape[:3])}, "
            f"got {tuple(m.shape)} and {tuple(denom.shape)}"
        )
    if tuple(seq_lens.shape) != (acc.shape[0],):
        raise ValueError(f"{fn}: seq_lens must be [batch={acc.shape[0]}], got {tuple(seq_lens.shape)}")
    partition_size = as_int(partition_size, f"{fn}: partition_size", low=1)
    if out_dtype not in FLOATS:
        raise TypeError(f"{fn}: out_dtype must be one of float16, bfloat16, float32, got {out_dtype!r}")
    if seq_lens.device.type == "cpu" and acc.shape[0]:
        _check_lengths(fn, seq_lens, acc.shape[2] * partition_size, "max_splits * partition_size")
    return partition_size


def _require_tensors(fn, tensors: dict) -> None:
    """Every value a torch.Tensor (TypeError), all on one device (ValueError), named in the message."""
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{fn}: {name} must be a torch.Tensor, got {type(t).__name__}")
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        raise ValueError(f"{fn}: all tensors must be on one device, got {sorted(map(str, devices))}")


def _check_lengths(fn, seq_lens, capacity: int, what: str) -> None:
    low, high = int(seq_lens.min()), int(seq_lens.max())
    if low < 0 or high > capacity:
        raise ValueError(f"{fn}: seq_lens must lie in [0, {what} = {capacity}], got values from {low} to {high}")
