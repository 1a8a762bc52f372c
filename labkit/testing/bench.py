"""Shared pieces of the GPU benchmarks: timing, copy bandwidth, byte counts, the results table.

Timings are ``triton.testing.do_bench`` medians (it flushes the L2 cache before
each run). Bandwidths count bytes read plus bytes written. The byte and FLOP counts
of a decode step are plain arithmetic (no GPU needed): the roofline's numerator.
"""

from __future__ import annotations

from labkit.testing.cases import blocks_needed
from labkit.text import markdown_table

__all__ = [
    "copy_bandwidth", "decode_bytes", "decode_flops", "device_line", "gb_per_s", "kv_bytes", "markdown_table",
    "time_us",
]  # fmt: skip


def time_us(fn) -> float:
    """Median time of ``fn()`` in microseconds, L2 flushed between runs."""
    import triton

    return 1e3 * triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def copy_bandwidth(nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth in bytes/s: (read + written) / time of
    copying ``nbytes`` (1 GiB) once, the ceiling a memory-bound kernel can reach."""
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    seconds = time_us(lambda: dst.copy_(src)) * 1e-6
    return 2 * nbytes / seconds


def device_line() -> str:
    """GPU name, torch and triton versions: the header of every results table."""
    import torch
    import triton

    return (
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}"
    )


def kv_bytes(seq_lens, num_kv_heads: int, head_dim: int, itemsize: int) -> int:
    """Bytes of K and V of the valid tokens, ``2 * sum(seq_lens) * num_kv_heads * head_dim * itemsize``:
    what any decode kernel must read, and the large term of every decode step's traffic."""
    return 2 * sum(int(n) for n in seq_lens) * num_kv_heads * head_dim * itemsize


def decode_bytes(seq_lens, num_heads: int, num_kv_heads: int, head_dim: int, itemsize: int, block_size: int) -> int:
    """The fewest bytes one decode step moves: :func:`kv_bytes`, plus ``q`` read and the output
    written (``num_heads * head_dim`` elements each per sequence), plus the block tables read
    (one 4-byte id per block of each sequence)."""
    lens = [int(n) for n in seq_lens]
    q_and_out = 2 * len(lens) * num_heads * head_dim * itemsize
    tables = 4 * sum(blocks_needed(n, block_size) for n in lens)
    return kv_bytes(lens, num_kv_heads, head_dim, itemsize) + q_and_out + tables


def decode_flops(seq_lens, num_heads: int, head_dim: int) -> int:
    """FLOPs of one decode step: ``2 * head_dim`` for ``q . k`` and ``2 * head_dim`` for ``p * v``,
    per token and query head (the softmax's O(seq_len) operations left out)."""
    return 4 * head_dim * num_heads * sum(int(n) for n in seq_lens)


def gb_per_s(nbytes: int, us: float) -> float:
    """``nbytes`` moved in ``us`` microseconds, in GB/s (10**9 bytes per second)."""
    return nbytes / (us * 1e-6) / 1e9
